"""A stand-in for py-spy, for the faults that real py-spy cannot be made to show on demand.

Mode from $FAKE_PYSPY_MODE: hang (ignores SIGINT, never ends), crash (writes part of its output and exits
139 as a segfault does under a shell), behind (the real py-spy, plus the "behind in sampling" warning it
prints when it cannot keep up, above 50 Hz), refused (the kernel refused the attach: py-spy 0.4's own words). The real
py-spy is $REAL_PYSPY. Only faults use this; every other test runs the real py-spy.
"""

import os
import signal
import subprocess
import sys
import time

mode = os.environ["FAKE_PYSPY_MODE"]
args = sys.argv[1:]
if args[:1] in (["--version"], ["-V"]):
    print("py-spy 0.4.3")
    sys.exit(0)
output = args[args.index("--output") + 1] if "--output" in args else None

if mode == "hang":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("py-spy> Sampling process 100 times a second. Press Control-C to exit.", flush=True)
    while True:
        time.sleep(60)
elif mode == "crash":
    print("py-spy> Sampling process 100 times a second. Press Control-C to exit.", flush=True)
    loop = "<module> (flametool/measure/child/entry.py:1);active_loop (flametool/measure/child/loops.py:44)"
    with open(output, "w") as fh:
        fh.write(f"{loop};step (tests/cases/user_cases.py:14);add (numpy/_core/umath.so) 7\n")
        fh.write(f"{loop} 2\n")
        fh.write(f"{loop};step (tests/cases/user_cases.py:14);add (numpy/_c")  # cut short by the crash
    os._exit(139)
elif mode == "behind":
    # falls behind above 50 Hz, as a CUDA process that takes long to unwind makes py-spy do
    rate = int(args[args.index("--rate") + 1])
    print(f"py-spy> Sampling process {rate} times a second. Press Control-C to exit.", flush=True)
    if rate > 50:
        print("1.52s behind in sampling, results may be inaccurate. Try reducing the sampling rate.", flush=True)
    # as a wrapper must: the descriptor its --output names (/proc/self/fd/N) is passed on; the SIGINT that ends
    # the sampling (sent to the group) is the real py-spy's to answer: it writes what it has and exits
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.exit(subprocess.run([os.environ["REAL_PYSPY"], *args], close_fds=False,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)).returncode)
elif mode == "refused":
    print("Error: Permission Denied: Try running again with elevated permissions by going 'sudo env \"PATH=$PATH\" !!'",
          file=sys.stderr, flush=True)
    sys.exit(1)
sys.exit(f"unknown FAKE_PYSPY_MODE {mode!r}")
