"""`flametool snakeviz`: serves a case's .prof on loopback only, and stops cleanly, its child with it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from flametool.commands import main
from reportruns import cpu_run_dir, hostile_run


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    return cpu_run_dir(tmp_path_factory)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children(pid: int) -> list[int]:
    """Direct children of pid, from /proc (Linux)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry.name))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a listening TCP socket on port (IPv4 and IPv6), from /proc/net."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hexport = local.rsplit(":", 1)
            if int(hexport, 16) == port and state == "0A":  # 0A: LISTEN
                found.add(address)
    return found


def default_ctrl_c() -> None:
    """SIGINT as a terminal's shell leaves it to the command it starts. A test session started in the background
    (`bash .ci/test &`, a script's `nohup`) runs with SIGINT ignored, which flametool would inherit, and a
    flametool that is not its group's leader keeps it ignored (main.take_ctrl_c): the SIGINT test then waited out its
    30 s for a stop that never came."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(run: Path, *args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "flametool", "snakeviz", str(run), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_ctrl_c)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if " at http://" in line:
            return proc, line.rsplit(" at ", 1)[1].strip()
    proc.kill()
    raise AssertionError(f"no URL printed: {proc.stderr.read()[-2000:]}")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serves_profile_on_loopback_and_stops(cpu_run, sig):
    port = free_port()
    proc, url = start(cpu_run, "--case", "torch", "--port", str(port))
    try:
        assert url.startswith(f"http://127.0.0.1:{port}/snakeviz/")
        (server,) = children(proc.pid)
        assert alive(server)
        assert listening_addresses(port) == {"0100007F"}, "snakeviz must listen on 127.0.0.1 only"
        with urllib.request.urlopen(url, timeout=30) as resp:
            body = resp.read().decode("utf-8", "replace")
        assert resp.status == 200
        assert "<title>torch</title>" in body and "built-in method torch.mm" in body  # the profile's own data
        proc.send_signal(sig)
        rc = proc.wait(timeout=30)
        assert rc == 0, proc.stderr.read()
        assert "snakeviz stopped" in proc.stdout.read()
        assert not alive(server), "snakeviz outlived flametool"
        assert not listening_addresses(port)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_killed_outright_takes_snakeviz_with_it(cpu_run):
    """SIGKILL gives flametool no chance to clean up; the kernel stops snakeviz for it (PDEATHSIG)."""
    proc, url = start(cpu_run, "--port", str(free_port()))
    (server,) = children(proc.pid)
    private = Path(urllib.parse.unquote(url.split("/snakeviz/", 1)[1])).parent
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 15
    while alive(server) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(server):
        os.kill(server, signal.SIGKILL)
        pytest.fail("snakeviz outlived a killed flametool")
    assert not private.exists(), "the served copy outlived the server"


def test_default_case_is_first(cpu_run):
    proc, url = start(cpu_run, "--port", str(free_port()))
    try:
        assert url.endswith("numpy.prof")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


def _bad_prof(run: Path):
    (run / "alpha.prof").write_bytes(b"\x00 not a profile")


def _no_prof(run: Path):
    (run / "alpha.prof").unlink()


@pytest.mark.parametrize("spoil, args, words", [
    (None, ["--case", "gamma"], "--case 'gamma': no such case"),
    (_bad_prof, ["--case", "alpha"], "alpha.prof: pstats cannot read it"),
    (_no_prof, ["--case", "alpha"], "alpha.prof: missing"),
    (None, ["--case", "alpha", "--port", "70000"], "--port 70000"),
])
def test_bad_input(tmp_path, capsys, spoil, args, words):
    run = hostile_run(tmp_path / "r")
    if spoil:
        spoil(run)
    rc = main.main(["snakeviz", str(run), *args])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], err


def test_missing_run_dir(tmp_path, capsys):
    assert main.main(["snakeviz", str(tmp_path / "absent")]) == 2
    assert "no such run directory" in capsys.readouterr().err


def test_serves_the_one_profile_and_nothing_else(cpu_run):
    """snakeviz's own server answered for any path: another run's .prof, a directory's listing, /etc/passwd (a
    500 with a traceback). flametool's answers for a private copy of the one profile only."""
    from urllib.error import HTTPError

    proc, url = start(cpu_run, "--case", "torch", "--port", str(free_port()))
    try:
        served = Path(urllib.parse.unquote(url.split("/snakeviz/", 1)[1]))
        assert served.parent != cpu_run and not str(served).startswith(str(cpu_run))
        assert oct(served.parent.stat().st_mode & 0o777) == oct(0o700)
        with urllib.request.urlopen(url, timeout=30) as resp:
            assert resp.status == 200
        base = url.split("/snakeviz/", 1)[0] + "/snakeviz/"
        for other in (cpu_run / "numpy.prof", Path("/etc/passwd"), cpu_run, served.parent):
            with pytest.raises(HTTPError) as caught:
                urllib.request.urlopen(base + urllib.parse.quote(str(other), safe=""), timeout=30)
            assert caught.value.code == 404, other
            assert "Traceback" not in caught.value.read().decode("utf-8", "replace")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert not served.parent.exists(), "the private copy outlived the server"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_taken_port_near_the_top_still_prints_the_url_it_serves(cpu_run):
    """snakeviz tries the ports after a taken one, and past 65535 (65535 taken: it printed :65536 and listened on
    another): the URL printed is one that answers."""
    import socket

    taken = socket.socket()
    try:
        taken.bind(("127.0.0.1", 65535))
    except OSError:
        pytest.skip("port 65535 is in use here already")
    taken.listen()
    proc, url = start(cpu_run, "--case", "torch", "--port", "65535")
    try:
        port = int(url.split("/")[2].rsplit(":", 1)[1])
        assert 1 <= port <= 65535 and port != 65535, url
        with urllib.request.urlopen(url, timeout=30) as resp:
            assert resp.status == 200
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        taken.close()


def test_ctrl_c_before_the_server_started_is_an_interrupt(tmp_path, monkeypatch):
    """Ctrl-C once the server serves is how it stops (exit 0); one before it started (no URL printed yet) is an
    interrupt like any other command's (130), not a clean stop."""
    from flametool.commands import drilldown

    # a server that never says its URL, and a Ctrl-C 0.3 s into the wait for it
    monkeypatch.setattr(drilldown, "command", lambda prof, port: [sys.executable, "-c", "import time; time.sleep(60)"])
    said: list[str] = []

    def ctrl_c(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, ctrl_c)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        code = drilldown._serve(drilldown.Target("torch", tmp_path / "torch.prof"), tmp_path / "torch.prof", 8080,
                                said.append)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert code == 130 and said == ["snakeviz stopped before it started"]
