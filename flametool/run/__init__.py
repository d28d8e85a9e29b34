"""The run record: what measuring writes and everything after it reads. run.json's dataclasses (record; a case's
timed loops in timing, its profiled process in profiled; read with reader's checks, schema 1 files by schema1),
the run directory (rundir: save, load with validation), folded stacks (folded), files opened without following
an untrusted directory's links (safeopen), and the rules both sides apply to the figures: the pooling
statistics and the settling of an interval (stats), the perturbation of a sampled loop (perturbation)."""
