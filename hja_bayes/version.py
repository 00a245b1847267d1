"""The package version (one place, read by the package root, the saved fits and the report)."""

__version__ = "0.1.0"
