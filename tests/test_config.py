"""config: one set of defaults per device, read alike by the command line and by a Config built in code."""

from pathlib import Path

import pytest

from flametool.commands import main, options, settings
from flametool.measure import config, protocol
from flametool.measure.config import CPU, CUDA, Config


def parsed(*argv: str) -> Config:
    args = main.build_parser().parse_args(["compare", "--device", "cpu", "--out", "run", *argv])
    return settings.compare_config(args, lambda text: None)


def test_the_command_line_takes_the_cpu_defaults():
    c = parsed()
    assert (c.iters, c.warmup, c.repeats, c.processes, c.max_processes) == (
        CPU.iters, CPU.warmup, CPU.repeats, CPU.processes, CPU.max_processes)
    assert (c.rate_hz, c.sample_seconds, c.pool_threads, c.shape, c.timed_seconds) == (
        CPU.rate_hz, CPU.sample_seconds, CPU.pool_threads, list(CPU.shape), CPU.timed_seconds)
    assert [s.label for s in c.cases] == list(CPU.libs) and set(c.dtypes.values()) == {CPU.dtype}


def test_the_rounds_a_job_asks_for_come_from_the_config():
    from flametool.measure.child import loops
    from flametool.measure import jobs

    job = lambda c: protocol.TimeJob(**jobs.job_base(c))  # noqa: E731
    assert loops.extend_seconds(job(parsed())) == CPU.timed_seconds
    assert loops.extend_seconds(job(parsed("--repeats", "4"))) == 0.0  # rounds as given
    gpu = Config(cases=[], device="cuda:0", shape=[8, 8, 8], dtypes={}, out=Path("x"), timed_seconds=0.25)
    assert loops.extend_seconds(job(gpu)) == 0.25


def test_a_given_process_count_is_run_as_given():
    c = parsed("--processes", "3")
    assert c.processes == c.max_processes == 3


def test_a_config_built_in_code_has_the_cpu_defaults_and_no_extra_processes():
    c = Config(cases=[], device="cpu", shape=[8, 8, 8], dtypes={}, processes=4, out=Path("x"))
    assert (c.rate_hz, c.sample_seconds, c.iters, c.warmup) == (CPU.rate_hz, CPU.sample_seconds, CPU.iters, CPU.warmup)
    assert c.max_processes == 4


def test_the_devices_differ_where_they_should():
    assert config.defaults("cpu") is CPU and config.defaults("cuda:1") is CUDA
    assert CUDA.rate_hz < CPU.rate_hz and CUDA.sample_seconds > CPU.sample_seconds
    assert CUDA.spares and not CPU.spares
    assert list(CUDA.sweep_sizes[-1]) == config.SEED_SHAPE
    assert options.default_sizes("cpu") == [list(s) for s in CPU.sweep_sizes]


def test_the_cprofile_loop_s_seconds_come_from_the_environment_where_set(monkeypatch):
    """FLAMETOOL_CPROFILE_SECONDS (the suite sets it in conftest.py: a shorter cProfile loop): unset, the default;
    a number of seconds in (0, 60], that; anything else one line, from the command before anything runs."""
    from flametool.errors import FlametoolError
    from flametool.measure.child import loops

    monkeypatch.delenv(loops.CPROFILE_SECONDS_ENV, raising=False)
    assert loops.cprofile_seconds() == loops.CPROFILE_SECONDS == 0.5
    monkeypatch.setenv(loops.CPROFILE_SECONDS_ENV, "0.05")
    assert loops.cprofile_seconds() == 0.05
    assert parsed().cases  # a good value is taken
    for bad in ("", "abc", "0", "-1", "61", "nan", "inf"):
        monkeypatch.setenv(loops.CPROFILE_SECONDS_ENV, bad)
        with pytest.raises(ValueError) as raised:
            loops.cprofile_seconds()
        assert str(raised.value) == (f"FLAMETOOL_CPROFILE_SECONDS={bad!r}: must be a number of seconds, more than 0 "
                                     "and at most 60")
        with pytest.raises(FlametoolError, match="^FLAMETOOL_CPROFILE_SECONDS=.*: must be a number of seconds"):
            parsed()
