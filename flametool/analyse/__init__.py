"""Analysis: a pure function of a run directory and the layer rules. Stacks read and named, layers, samples
to microseconds, call trees, pair diffs, flame-graph geometry, intervals; a compare's, a sweep's and an atlas's
results, and the summary. Nothing here writes a file or imports a renderer."""
