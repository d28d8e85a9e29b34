"""Measuring: the parent (runner), one child process per job (child), py-spy (sampler), the environments of
`--env`, the atlas's compares, the messages between parent and child (protocol) and a run's settings (config).
What they write is the run record (flametool.run); nothing here reads an analysis: the question whether a
pair's interval has settled is asked of the pooling statistics the analysis uses too (run/stats.py)."""
