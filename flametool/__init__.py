"""flametool: where the host time goes when a GPU array library launches work."""

__version__ = "0.1.0"
