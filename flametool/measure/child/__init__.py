"""The child: a fresh process that runs one job for the parent, then exits.

Run by ``spawn.child_command`` (``entry.main(MSG_FD, JOB_JSON)``, the parent's flametool first on sys.path). It
reports to the parent in protocol.py's messages, JSON lines on the file descriptor MSG_FD (stdout and stderr
belong to the user's code), and reads one command from stdin, ``stop``, which ends the sampled phase. Started
ahead of its job, with ``MSG_FD --spare PARENT_PID MODULES`` (a spare), it imports MODULES (comma-separated)
and then reads JOB_JSON as the first line on stdin.

Three jobs (``entry.JOBS``, protocol.TimeJob, SweepJob and ProfileJob; their bodies in work.py):
- ``time``: every case of a group built side by side in this one process, and their timed loops
  interleaved (host clock + device events around ``--iters`` calls, the seed's method), at the requested
  shape and at the sample shape. A process's own speed then multiplies every case in it alike.
- ``sweep``: the same, at each size of a sweep in turn (timings only).
- ``profile``: one case alone at the sample shape: its own unsampled loops, the cProfile loop, and the
  loop that py-spy samples (py-spy stops the whole process, so a sampled process holds one case).
Every loop runs the same function, ``loops.active_loop``: the sampler keeps only stacks inside it.

One job a module: entry.py (main), work.py (the three jobs), loops.py (warm-up, timed, interleaved, cProfile
and sampled loops), building.py (a case's factory called, checked, its operands fingerprinted), clocks.py
(CUDA events and the device's name), preload.py (libraries and operands ahead of the cases), reporter.py (the
message pipe). The parent side (spawn.py) imports none of it: what it shares with the child is protocol.py.
"""
