"""Bad options: one line on stderr, a non-zero exit, no traceback, nothing started."""

from pathlib import Path

import pytest

import checks

from flametool.commands import main, options

CASES = Path(__file__).parent / "cases" / "user_cases.py"


def one_line_error(capsys, argv, code=2):
    return checks.one_line_error(capsys, argv, code, progress_first=True)


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--iters", "0"], "--iters 0"),
        (["--repeats", "0"], "--repeats"),
        (["--warmup", "-1"], "--warmup"),
        (["--shape", "64,64"], "three positive integers"),
        (["--shape", "a,b,c"], "three positive integers"),
        (["--shape", "64,0,64"], "three positive integers"),
        (["--shape", ""], "--shape '': expected three positive integers"),  # given empty: it ran the default
        (["--sample-shape", ""], "--sample-shape '': expected three positive integers"),
        (["--shape", "99999999999999,8,8"], "a figure above 1e+12 is beyond any device's memory"),
        (["--libs", "numpy,mxnet"], "unknown case 'mxnet'"),  # jax has been a built-in case since --op
        (["--libs", "cupy"], "needs a CUDA device"),
        (["--dtype", "float8"], "unknown dtype"),
        (["--dtype", "mxnet=float16"], "no case named 'mxnet'"),
        (["--device", "tpu"], "expected cpu or cuda:N"),
        (["--case", "no/such/file.py:factory"], "no such file"),
        (["--case", f"{CASES}:missing_factory"], "defines no missing_factory"),
        (["--case", f"{CASES}"], "FILE.py:FACTORY"),
        (["--libs", "numpy,numpy"], "appears twice"),
        (["--rate", "0"], "--rate"),
        (["--processes", "0"], "--processes 0"),
        (["--pool-threads", "-1"], "--pool-threads -1"),
    ],
)
def test_bad_options(capsys, tmp_path, argv, words):
    out = tmp_path / "run"
    line = one_line_error(capsys, ["compare", "--device", "cpu", *argv, "--out", str(out)] if "--device" not in argv
                          else ["compare", *argv, "--out", str(out)])
    assert words in line
    assert not out.exists()


def test_factory_that_raises(capsys, tmp_path):
    out = tmp_path / "run"
    line = one_line_error(capsys, ["compare", "--device", "cpu", "--libs", "numpy", "--no-sample", "--repeats", "1",
                                   "--processes", "1", "--case", f"{CASES}:raising_case", "--out", str(out)], code=1)
    assert "raising_case" in line and "ValueError: this factory refuses to build" in line
    # the line names the logs that hold what the factory printed (the README said RUN/raising_case.log, which
    # a case that fails while it is timed never has)
    logs = [out / name for name in line.split("; what it printed: ")[1].rstrip(")").split(", ")]  # in the run
    assert logs and all(p.is_file() and "raising_case" in p.name for p in logs), line
    assert any("what it printed before it raised" in p.read_text() for p in logs)
    # numpy's timing (beside it, then without it) is kept
    from flametool.run import rundir

    data = rundir.load(out)
    assert data.complete is False
    assert data.results["numpy"].timing.cpu_us_per_call > 0
    # it failed beside numpy, was tried alone, and failed there too: its own error, as its factory said it
    assert data.results["raising_case"].error == "factory raising_case failed: ValueError: this factory refuses to build"
    assert data.group_of("raising_case").reason.startswith("could not be built or run beside numpy")


def test_a_factory_that_raises_stops_the_run_after_the_first_process(capsys, tmp_path):
    """A new user's first case raised in its factory: the run timed numpy in all its processes (8 on the CPU, 12 s)
    before it tried the case alone and said so. Now the case is tried alone right after the first process, and the
    run stops there: numpy is timed in that one process, not the three asked for."""
    out = tmp_path / "run"
    line = one_line_error(capsys, ["compare", "--device", "cpu", "--libs", "numpy", "--no-sample", "--repeats", "1",
                                   "--processes", "3", "--case", f"{CASES}:raising_case", "--out", str(out)], code=1)
    assert "ValueError: this factory refuses to build" in line, line
    from flametool.run import rundir

    data = rundir.load(out)
    assert data.results["numpy"].timing.cpu_us_per_call > 0  # what the first process measured is kept
    assert data.group_of("numpy").processes == 1


def test_a_step_that_raises_in_its_warm_up_is_its_case_s_failure(capsys, tmp_path):
    """A case whose step raises (a broken build) fails alone, said as its own: the process it shared with numpy
    goes on (numpy is timed in it), and the line says it was the case's step, in its warm-up; it had failed the
    shared process, whose error named no case ("the process shared with torch@C failed")."""
    out = tmp_path / "run"
    line = one_line_error(capsys, ["compare", "--device", "cpu", "--libs", "numpy", "--no-sample", "--repeats", "1",
                                   "--processes", "1", "--case", f"{CASES}:step_raises", "--out", str(out)], code=1)
    assert "case 'step_raises': step() raised in its warm-up: RuntimeError: broken build" in line, line
    from flametool.run import rundir

    data = rundir.load(out)
    assert data.results["numpy"].timing.cpu_us_per_call > 0
    assert data.results["step_raises"].error == "step() raised in its warm-up: RuntimeError: broken build"
    # it failed beside numpy, in the process they shared: that process went on and timed numpy
    assert data.group_of("step_raises").reason == ("could not be built or run beside numpy (step() raised in its "
                                                  "warm-up: RuntimeError: broken build); timed alone")
    assert "numpy" not in data.group_of("step_raises").cases


def test_a_case_that_reads_stdin_reads_an_end_of_file_not_the_parent_s_pipe(capsys, tmp_path):
    """A case's stdin was the parent's pipe (its job, GO, stop): a step's input() took the GO and the run waited for
    the 300 s watchdog. Now a case reads an end of file there: input() fails its case in one line, at once, and a
    factory that reads stdin to its end builds, is timed beside numpy and is sampled (its stop still reaches it)."""
    import time

    from flametool.run import rundir

    out = tmp_path / "run"
    started = time.monotonic()
    line = one_line_error(capsys, ["compare", "--device", "cpu", "--libs", "numpy", "--no-sample", "--repeats", "1",
                                   "--processes", "1", "--case", f"{CASES}:step_reads_stdin", "--out", str(out)], code=1)
    assert "case 'step_reads_stdin': step() raised in its warm-up: EOFError" in line, line
    assert time.monotonic() - started < 60
    out = tmp_path / "run2"
    assert main.main(["compare", "--device", "cpu", "--libs", "numpy", "--repeats", "1", "--processes", "1",
                      "--sample-seconds", "1", "--no-count", "--case", f"{CASES}:factory_reads_stdin",
                      "--out", str(out)]) == 0
    data = rundir.load(out)
    assert data.complete and data.results["factory_reads_stdin"].timing.cpu_us_per_call > 0
    assert (out / "factory_reads_stdin.folded").stat().st_size > 0


def test_a_later_process_that_fails_keeps_the_first(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FLAMETOOL_TEST_BUILDS", str(tmp_path / "builds"))
    out = tmp_path / "run"
    line = one_line_error(capsys, ["compare", "--device", "cpu", "--libs", "", "--no-sample", "--repeats", "1",
                                   "--processes", "3", "--case", f"{CASES}:fails_after_first", "--out", str(out)],
                          code=1)
    assert "process 2 of 3" in line and "build 2 refused" in line
    from flametool.run import rundir

    data = rundir.load(out)
    r = data.results["fails_after_first"]
    # what the first process measured is kept: its loops, and only its
    assert "process 2 of 3" in r.error and r.timing.cpu_us_per_call > 0 and len(r.timing.processes) == 1
    assert data.group_of("fails_after_first").processes == 1  # processes that finished their loops
    # the failure stops the run before the profiled processes (they come after every timing)
    assert r.profile is None and not (out / "fails_after_first.prof").exists()


def test_factory_that_returns_the_wrong_thing(capsys, tmp_path):
    line = one_line_error(capsys, ["compare", "--device", "cpu", "--libs", "", "--no-sample", "--processes", "1",
                                   "--case", f"{CASES}:not_a_pair", "--out", str(tmp_path / "r")], code=1)
    assert "expected a (step, sync) pair" in line


def test_keep_going_runs_the_other_cases(capsys, tmp_path):
    out = tmp_path / "run"
    rc = main.main(["compare", "--device", "cpu", "--libs", "numpy", "--no-sample", "--repeats", "1",
                          "--processes", "1", "--case", f"{CASES}:raising_case", "--case", f"{CASES}:add_case",
                          "--keep-going", "--out", str(out)])
    assert rc == 1
    from flametool.run import rundir

    data = rundir.load(out)
    assert data.complete is True
    assert data.results["add_case"].timing.cpu_us_per_call > 0 and data.results["raising_case"].error
    # the others ran to the end: profiled too, and still paired with each other
    assert data.results["add_case"].profile.cprofile_calls > 0 and data.results["numpy"].profile.cprofile_calls > 0
    assert data.group_of("numpy") is data.group_of("add_case") and data.group_of("numpy").paired
    # the failed case's line says where what it printed is, as it does without --keep-going (it did not)
    err = capsys.readouterr().err
    line = next(l for l in err.splitlines() if l.startswith("flametool: case 'raising_case': "))
    assert "(what it printed: raising_case-timing.log in " in line, line
    assert "what it printed before it raised" in (out / "raising_case-timing.log").read_text()


def test_parse_dtypes():
    assert options.parse_dtypes("float16", ["cupy", "torch"]) == {"cupy": "float16", "torch": "float16"}
    assert options.parse_dtypes("cupy=float16,torch=bfloat16", ["cupy", "torch"]) == {"cupy": "float16", "torch": "bfloat16"}
    assert options.parse_dtypes("float32,torch=float16", ["numpy", "torch"]) == {"numpy": "float32", "torch": "float16"}


@pytest.mark.parametrize("command", ["", "compare", "sweep", "diff", "export", "report", "snakeviz"])
def test_help_of_every_command(command):
    """`flametool COMMAND --help` prints its usage and exits 0 (a '%' in a help text made argparse raise)."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "flametool", *([command] if command else []), "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-300:]
    assert proc.stdout.startswith("usage: flametool")
    if command == "compare":
        assert "±2%, for at most" in proc.stdout
    if command == "sweep":  # its --processes says what a sweep does (issue 43): it adds none
        assert "a sweep adds no processes" in " ".join(proc.stdout.split()) and "in compare up to" not in proc.stdout


def _help(*command: str) -> str:
    parser = main.build_parser()
    if not command:
        return parser.format_help()
    return parser._subparsers._group_actions[0].choices[command[0]].format_help()


def test_help_says_what_the_design_does():
    """Issue 33, item 7: the help texts say what flametool does. compare times the cases together in shared
    processes (not each in its own), opens with a description, the rounds' median is a step before pooling
    (not "the figure reported"), --pair's default names library cases, and the atlas lists its own sampling
    defaults and no --pair (which it refuses)."""
    from flametool.measure import config

    top = " ".join(_help().split())
    assert "measure each case in its own process" not in top
    assert "compare time the cases side by side in several fresh processes" in top
    for command in main.COMMANDS:
        words = " ".join(_help(command).split())
        described = _help(command).split("\n\n")[1]  # the paragraph after the usage lines
        assert not described.startswith(("options:", "positional")), (command, described)
        assert "the median is reported" not in words, command
        assert "default: the first two cases" not in words, command
    compare = " ".join(_help("compare").split())
    assert "default: the first two library cases" in compare
    assert "median of its rounds" in compare
    atlas = " ".join(_help("atlas").split())
    assert "--pair" not in atlas
    secs = config.ATLAS_SAMPLE_SECONDS
    assert (f"seconds of sampling per case, a fraction allowed (at least {config.MIN_SAMPLE_SECONDS:g}; default "
            f"{secs['cuda']} on CUDA, {secs['cpu']} on the CPU)") in atlas
    with pytest.raises(Exception, match="for a pair of your own use compare"):
        from flametool.commands import settings
        settings.atlas_config(main.build_parser().parse_args(["atlas", "--pair", "numpy:torch", "--device", "cpu"]),
                              lambda text: None)


@pytest.mark.parametrize("argv, words", [
    # a --repeats given is run as given: the rounds are never extended to --timed-seconds
    (["compare", "--repeats", "2", "--timed-seconds", "0.5"], "--timed-seconds with --repeats"),
    # an isolated case's group has no pair: no process is added to settle it, within a budget or not
    (["compare", "--isolate", "--settle", "3"], "--isolate with --settle: processes are added only for cases timed"),
    (["compare", "--isolate", "--budget", "30"], "--isolate with --budget"),
    # a pair given twice was compared, printed and summarised twice
    (["compare", "--pair", "numpy:torch", "--pair", "numpy:torch"], "--pair 'numpy:torch': given twice"),
])
def test_an_option_that_would_do_nothing_is_refused(capsys, tmp_path, argv, words):
    out = tmp_path / "run"
    line = one_line_error(capsys, [*argv, "--device", "cpu", "--out", str(out)])
    assert words in line, line
    assert not out.exists()


@pytest.mark.parametrize("command, option", [("sweep", "--budget"), ("compare", "--sizes"), ("atlas", "--shape")])
def test_an_option_the_command_lacks_points_at_the_command_s_help(capsys, command, option):
    """argparse says it from the top parser: 'sweep --budget 5' pointed at `flametool --help`, which lists no
    option of any command."""
    line = one_line_error(capsys, [command, option, "5"])
    assert line == f"flametool: unrecognized arguments: {option} 5 (see flametool {command} --help)", line


def test_the_atlas_help_says_its_processes_are_not_extended():
    """atlas --help's --processes spoke of compare's (more processes while unsettled, --env, --fail-above,
    --budget), none of them what an atlas does or options it has."""
    atlas = " ".join(_help("atlas").split())
    said = atlas[atlas.index("--processes N"):atlas.index("--isolate ")]
    assert "an atlas adds no processes" in said and not any(w in said for w in ("--env", "--budget", "--fail-above"))


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_diff_top_is_refused_where_it_would_do_nothing(capsys, tmp_path, fmt):
    """--top is the text format's frame table: with --format json (every frame) or markdown (the largest) it did
    nothing, silently."""
    line = one_line_error(capsys, ["diff", str(tmp_path), "--base", "a", "--head", "b", "--format", fmt, "--top", "3"])
    assert f"--top with --format {fmt}" in line, line


def test_a_factory_misfit_is_said_as_what_is_wrong_with_it():
    """A factory returning (step, None) was told 'returned tuple, expected a (step, sync) pair of callables',
    though it had returned a pair: the message names the part that is not callable."""
    from flametool.measure.child.building import misfit

    def step():
        pass

    assert misfit((step, None)) == ("returned (step, sync) whose sync is NoneType, not callable: expected a (step, "
                                    "sync) pair of callables (a step with nothing to wait for returns `lambda: None` "
                                    "as its sync)")
    assert "whose step is int and whose sync is str" in misfit((1, "x"))
    assert misfit((step, step, step)).startswith("returned a tuple of 3, expected")
    assert misfit(step).startswith("returned function, expected")
