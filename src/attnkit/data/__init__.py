"""attnkit.data"""
