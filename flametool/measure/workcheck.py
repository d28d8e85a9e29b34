"""A workload's FUNC called once before anything is measured (workloads.check), in a process of its own.

FUNC is the user's code: called in flametool's own process, one that set SIGINT to SIG_IGN made the run deaf to
Ctrl-C, a thread it started (not a daemon) kept flametool from exiting once the run was done, a process it forked
ran on after flametool ended, os._exit(3) ended flametool silently with exit 3, a read of stdin or a sleep for
ever hung it with nothing said, and what it printed went into flametool's own output. In a process of its own
(its own process group, its processes marked as a case's are, stdin /dev/null, its output dropped) it does none of
that: it answers, or its end is said in one line, and the watchdog's limit (FLAMETOOL_STEP_TIMEOUT) applies."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
from typing import IO
import uuid

from .. import procs
from ..errors import FlametoolError
from ..workload import workloads

ANSWER = "flametool-workcheck"  # the answer's frame: ANSWER, the nonce the parent gave, then the JSON
CHECK_MAIN = "from flametool.measure.workcheck import main; sys.exit(main(sys.argv[1:]))"  # after spawn.BOOT


def check(workload: workloads.Workload, shape: list[int]) -> None:
    """workloads.check(workload, shape), in a process of its own; its error (or how the process ended) as a
    FlametoolError."""
    from .spawn import BOOT, STEP_TIMEOUT_ENV, child_env, framed_answer, step_timeout

    limit = step_timeout()
    token = uuid.uuid4().hex
    where = f"--workload {workload.name}: {workload.func}(xp, {tuple(shape)})"
    given = json.dumps({"workload": dataclasses.asdict(workload), "shape": list(shape)})
    proc = None
    # its output to files, not pipes: a process FUNC forked holds what it inherited, and a pipe held open would
    # keep the answer waiting until the limit; the check is over when FUNC's process is
    with tempfile.TemporaryFile("w+b") as out, tempfile.TemporaryFile("w+b") as err:
        try:  # started inside the try: a stop that comes as it starts still finds it by the token (kill_marked)
            proc = subprocess.Popen([sys.executable, "-c", BOOT + CHECK_MAIN, given, token], stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=err, env=child_env(token=token), **procs.own_group())
            if not procs.wait_exited(proc, limit):
                raise FlametoolError(f"{where} did not return within {limit:.0f} s (a set-up that waits for ever?); "
                                     f"stopped it ({STEP_TIMEOUT_ENV}=SECONDS allows longer)")
        finally:
            with procs.signals_deferred():
                if proc is not None:
                    procs.kill_tree(proc, grace=0, first=signal.SIGKILL, group=True)
                procs.kill_marked(token)
        stdout, stderr = (tail(f) for f in (out, err))
    got = framed_answer(stdout, f"{ANSWER} {token} ")
    if got is None:
        assert proc is not None  # started, since it answered nothing rather than failing to start
        code = proc.returncode
        how = (f"was killed by {signal.Signals(-code).name}" if code < 0 and -code in signal.valid_signals()
               else f"exited with code {code}")
        last = next((l.strip() for l in reversed(stderr.splitlines()) if l.strip()), "")
        raise FlametoolError(f"{where}: its process {how} before FUNC returned" + (f" ({last[:200]})" if last else ""))
    if got.get("error"):
        raise FlametoolError(str(got["error"]))


def tail(f: IO[bytes], size: int = 1 << 16) -> str:
    """The last `size` bytes written to `f`, as text (the answer is the last line; FUNC may have printed megabytes)."""
    f.seek(max(0, f.seek(0, os.SEEK_END) - size))
    return f.read().decode("utf-8", "backslashreplace")


def main(argv: list[str]) -> int:
    """In the checking process: workloads.check, its answer printed framed by the parent's nonce (a line FUNC
    prints is not taken for it), then an exit that waits for no thread FUNC left running."""
    given = json.loads(argv[0])
    w = given["workload"]
    workload = workloads.Workload(**{**w, "shape": tuple(w["shape"]) if w["shape"] else None,
                                     "ladder": tuple(tuple(s) for s in w["ladder"]) if w["ladder"] else None})
    error = None
    try:
        workloads.check(workload, given["shape"])
    except FlametoolError as exc:
        error = str(exc)
    except BaseException as exc:  # noqa: BLE001 -- anything else FUNC's call let out still gets its answer, and the
        # exit below: left to the interpreter's exit, a thread FUNC started kept the process until the time limit
        first = next((l.strip() for l in str(exc).splitlines() if l.strip()), "")
        error = (f"--workload {workload.name}: checking {workload.func}(xp, {tuple(given['shape'])}) raised "
                 f"{type(exc).__name__}" + (f": {first[:200]}" if first else ""))
    # to the stream the process started with: FUNC may have replaced sys.stdout
    out = sys.__stdout__ or sys.stdout
    print(f"\n{ANSWER} {argv[1]} " + json.dumps({"error": error}), file=out, flush=True)
    procs.exit_now(0)
    return 0
