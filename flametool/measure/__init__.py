"""Measuring: the parent (runner), one child process per job (child), py-spy (sampler), the environments of
`--env`, the atlas's compares. What they write is the run directory (record.py, rundir.py); nothing here reads
an analysis, except the runner's question whether a pair's interval has settled (analyse/stats.py)."""
