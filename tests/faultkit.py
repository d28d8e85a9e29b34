"""Helpers for the fault tests: flametool in a process of its own with a chosen environment, fake py-spys,
and a way to find every process a run started (they all inherit a tag in their environment)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = Path(__file__).parent / "cases"
FAKE = Path(__file__).parent / "fakes" / "pyspy.py"
TAG = "FLAMETOOL_FAULT_TEST_TAG"


def real_pyspy() -> str:
    from flametool.measure import sampler

    saved = os.environ.pop(sampler.PYSPY_ENV, None)
    try:
        return sampler.pyspy_path()
    finally:
        if saved is not None:
            os.environ[sampler.PYSPY_ENV] = saved


def fake_pyspy(folder: Path, mode: str) -> tuple[Path, dict[str, str]]:
    """An executable 'py-spy' in `folder` and the environment that selects it."""
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "py-spy"
    exe.write_text(f"#!{sys.executable}\n" + FAKE.read_text())
    exe.chmod(0o755)
    return exe, {"FLAMETOOL_PYSPY": str(exe), "FAKE_PYSPY_MODE": mode, "REAL_PYSPY": real_pyspy()}


def env(**extra: str) -> dict[str, str]:
    e = dict(os.environ)
    e.update(extra)
    e.setdefault(TAG, uuid.uuid4().hex)
    return e


def run(args: list[str], environ: dict[str, str] | None = None, python: str = sys.executable,
        timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-m", "flametool", *args], capture_output=True, text=True,
                          env=environ or env(), cwd=ROOT, timeout=timeout)


def error_line(proc: subprocess.CompletedProcess) -> str:
    """The one 'flametool: ...' line on stderr (progress lines may come before it), with no traceback."""
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.startswith("flametool: ")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def tagged(tag: str) -> list[tuple[int, str]]:
    """(pid, command line) of every live process whose environment carries `tag`."""
    found = []
    needle = f"{TAG}={tag}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append((int(entry.name), (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")))
        except OSError:
            continue
    return found


def kill_tagged(tag: str) -> None:
    """SIGKILL every live process whose environment carries `tag` (a test's clean-up, whatever it left)."""
    for pid, _ in tagged(tag):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:  # gone since it was listed
            pass


def none_left(tag: str, within: float = 15.0) -> list[tuple[int, str]]:
    """Waits (at most `within` seconds) until no tagged process is alive; returns those still alive."""
    deadline = time.monotonic() + within
    while True:
        alive = tagged(tag)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def _hup_default() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


class Background:
    """flametool running in its own session (as from a terminal), its stderr collected line by line."""

    def __init__(self, args: list[str], environ: dict[str, str]) -> None:
        self.tag = environ[TAG]
        # the tests wait for progress lines of each step (a log's default is a line per phase): every one of them
        if args and args[0] in ("compare", "sweep", "atlas") and "--progress" not in args:
            args = [args[0], "--progress", "all", *args[1:]]
        # SIGHUP at its default, as from a terminal, even where the tests run under nohup: flametool keeps an
        # ignored SIGHUP ignored (nohup's meaning), so a suite started with nohup saw its closed-terminal test run
        # on for the whole 60 s of sampling
        self.proc = subprocess.Popen([sys.executable, "-m", "flametool", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=environ, cwd=ROOT,
                                     start_new_session=True, preexec_fn=_hup_default)
        self.pid = self.proc.pid  # flametool's, and its process group's
        self._collect()

    def _collect(self) -> None:
        """Read the process's stderr and stdout into err and out, line by line, as they come."""
        self.err: list[str] = []
        self.out: list[str] = []
        self.readers = [threading.Thread(target=self._read, args=(s, l), daemon=True)
                        for s, l in ((self.proc.stderr, self.err), (self.proc.stdout, self.out))]
        for r in self.readers:
            r.start()

    @staticmethod
    def _read(stream, into: list[str]) -> None:
        for line in stream:
            into.append(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in l for l in self.err):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"never saw {text!r}; stderr: {self.err}")
            time.sleep(0.05)

    def wait_until(self, predicate, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"never saw {what}; stderr: {self.err}")
            time.sleep(0.05)

    def signal(self, sig: int, group: bool) -> None:
        """`group`: the whole process group, as a terminal's Ctrl-C does; else flametool's process only."""
        if group:
            os.killpg(self.pid, sig)
        else:
            os.kill(self.pid, sig)

    def finish(self, timeout: float = 60) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:  # say what it printed (a stop it never acted on, or a clean-up that hung)
            self.kill()
            raise AssertionError(f"flametool still running {timeout:.0f} s on; stderr: {self.err[-15:]}") from None
        for r in self.readers:
            r.join(timeout=5)
        return code

    def kill(self) -> None:
        kill_tagged(self.tag)


def no_pyspy_python(folder: Path) -> tuple[str, dict[str, str]]:
    """A python (a symlink to this one) with no py-spy beside it, and an environment whose PATH has none."""
    folder.mkdir(parents=True, exist_ok=True)
    python = folder / "python"
    python.symlink_to(sys.executable)
    path = os.pathsep.join(p for p in ("/usr/bin", "/bin") if Path(p).is_dir())
    # in a virtual environment the symlink is the base interpreter (pyvenv.cfg is found beside the
    # executable): give it this one's import path
    environ = env(PATH=path, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    environ.pop("FLAMETOOL_PYSPY", None)
    assert shutil.which("py-spy", path=path) is None
    return str(python), environ
