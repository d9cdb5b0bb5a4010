"""attnkit.viz"""
