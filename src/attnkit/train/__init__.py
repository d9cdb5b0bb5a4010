"""attnkit.train"""
