"""attnkit.decode"""
