"""`flametool snakeviz`: a case's cProfile file in snakeviz, served on loopback only, until stopped.

snakeviz runs as a child (`python -m snakeviz -s`: server only, it never tries to open a browser, which
matters on the headless machines runs are made on). It picks another port by itself when the one asked
for is taken, so the URL printed is the one it reports, not the one requested.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import procs
from ..run import casenames, rundir
from ..analyse import profstats
from ..errors import FlametoolError, RunDirError, interrupt_code

HOST = "127.0.0.1"  # never another interface: a profile holds paths and code names
START_SECONDS = 30


@dataclass
class Target:
    label: str
    prof: Path


def target(run: Path, case: str | None) -> Target:
    """The case's .prof, checked: the run directory, the case, and that pstats can read the file."""
    data = rundir.load_profiled(run, "serve")
    results = data.results
    if not results:
        raise RunDirError(f"{run / rundir.RUN_FILE}: no cases")
    if case is None:
        with_prof = [l for l, r in results.items() if r.file("prof")]
        if not with_prof:
            raise RunDirError(f"{run}: no case has a cProfile file")
        case = with_prof[0]
    else:  # a sweep's size too: cupy@1024 (casenames)
        case = casenames.case_named(run, data, case, "--case")
    name = results[case].file("prof")
    if not rundir.is_file_name(name):
        raise RunDirError(f"{run}: case {case!r} has no cProfile file" + (" (it failed)" if results[case].error else ""))
    path = run / name
    profstats.read(path)
    return Target(case, path)


# snakeviz's server answers /snakeviz/ANY-PATH with that file's profile (and a directory's listing, and a
# traceback for a file it cannot read): a run directory is untrusted and the port is open to every local user,
# so flametool's server answers for the one profile it was given and nothing else, and never with a traceback
SERVE_BOOT = """
import os, shutil, signal, sys
sys.path.append(sys.path.pop(0))
import tornado.web
import snakeviz.main as viz
import snakeviz.cli as cli
from snakeviz.cli import main
# the ports snakeviz tries when the one asked is taken go past 65535 (65535 taken: it printed :65536 and listened
# elsewhere): only ports that exist are tried
near = cli.random_ports
cli.random_ports = lambda port, n: (p for p in near(port, n) if 1 <= p <= 65535)
allowed, shown = os.path.abspath(sys.argv[1]), viz.VizHandler.get
def get(self, profile_name):
    if os.path.abspath(profile_name) != allowed:
        raise tornado.web.HTTPError(404)
    return shown(self, profile_name)
viz.VizHandler.get = get
viz.app.settings["serve_traceback"] = False
# the private copy goes with the server, also when flametool was killed outright (the kernel's SIGTERM)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
try:
    code = main(sys.argv[2:])
finally:
    folder = os.path.dirname(allowed)
    if os.path.basename(folder).startswith("flametool-snakeviz-"):
        shutil.rmtree(folder, ignore_errors=True)
sys.exit(code)
"""


def command(prof: Path, port: int) -> list[str]:
    served = str(prof.resolve())
    return [sys.executable, "-u", "-c", SERVE_BOOT, served, "-s", "-H", HOST, "-p", str(port), served]


def private_copy(t: Target) -> tuple[Path, Path]:
    """The profile copied into a temporary folder only this user can read: what is served is the file that was
    checked, whatever later happens to the run directory. Returns (the folder, the copy)."""
    folder = Path(tempfile.mkdtemp(prefix="flametool-snakeviz-"))
    name = f"{t.label}.prof" if rundir.is_file_name(f"{t.label}.prof") else "profile.prof"
    try:
        shutil.copyfile(t.prof, folder / name)
        profstats.read(folder / name)
    except BaseException as exc:
        shutil.rmtree(folder, ignore_errors=True)
        if isinstance(exc, OSError):
            raise RunDirError(f"{t.prof}: cannot be copied to serve ({exc.strerror or exc})") from None
        raise
    return folder, folder / name


def serve(t: Target, port: int, say: Callable[[str], None]) -> int:
    """Run snakeviz until it exits or we are interrupted (KeyboardInterrupt: Ctrl-C, or SIGTERM via cli)."""
    if not 1 <= port <= 65535:
        raise FlametoolError(f"--port {port}: expected 1-65535")
    folder, served = private_copy(t)
    try:
        return _serve(t, served, port, say)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _serve(t: Target, served: Path, port: int, say: Callable[[str], None]) -> int:
    proc = subprocess.Popen(command(served, port), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"), start_new_session=True,
                            # if flametool is killed outright and cannot stop snakeviz, the kernel does, so no
                            # server is left listening; its own session keeps a terminal's Ctrl-C from
                            # reaching it before flametool decides
                            preexec_fn=procs.die_with_parent)
    lines: list[str] = []
    url_seen = threading.Event()

    def pump() -> None:  # snakeviz's output, read on a thread so the main one can wait with a timeout
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("http://"):
                url_seen.set()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        deadline_hit = not url_seen.wait(START_SECONDS) and proc.poll() is None
        url = next((l for l in lines if l.startswith("http://")), None)
        if url is None:
            stop(proc)
            why = "did not start within %d s" % START_SECONDS if deadline_hit else f"exited with code {proc.returncode}"
            tail = next((l for l in reversed(lines) if l.strip()), "")
            raise FlametoolError(f"snakeviz {why}" + (f": {tail}" if tail else ""))
        say(f"snakeviz: {t.label} ({t.prof}) at {url}")
        say("press Ctrl-C to stop")
        proc.wait()
        return 0 if proc.returncode == 0 else 1
    except KeyboardInterrupt as exc:
        if not url_seen.is_set():  # before it served anything: interrupted, as any command is
            say("snakeviz stopped before it started")
            return interrupt_code(exc)
        say("snakeviz stopped")  # how a server that serves until stopped ends: Ctrl-C or SIGTERM, exit 0
        return 0
    finally:
        stop(proc)
        reader.join(timeout=2)  # the pipe ends when snakeviz does
        if proc.stdout and not reader.is_alive():
            proc.stdout.close()


def stop(proc: subprocess.Popen) -> None:
    """SIGINT first (snakeviz shuts tornado down on it), then SIGTERM, then SIGKILL: never left running."""
    if proc.poll() is None:
        for sig, wait in ((signal.SIGINT, 3), (signal.SIGTERM, 3), (signal.SIGKILL, 10)):
            try:
                proc.send_signal(sig)
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
            except ProcessLookupError:
                break
