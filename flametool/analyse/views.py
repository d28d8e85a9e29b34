"""The two views of a stack's layers, apart from the rules (layers.py) so that compare's and diff's `--layers`
choices cost `flametool --help` no import of the rules' readers (issue 42)."""

# 'caller' charges a system library's frames to the layer that called them (the default: cuBLAS means cuBLAS with
# its locks and allocations); 'library' keeps each frame in its own library's.
VIEWS = ("caller", "library")
DEFAULT_VIEW = "caller"
