"""The package's version, written into run folders and export bundles (`attnkit.__version__`)."""

__version__ = "0.2.0"
