"""cvl_eval."""

__version__ = "0.1.0"
