"""attnkit.evaluate"""
