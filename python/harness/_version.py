"""The harness version (one place; ``harness.__version__`` and run records read it)."""

__version__ = "0.1.0"
