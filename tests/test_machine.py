"""measure/machine.py: the driver asked ahead in a thread (ask_ahead) gives the answers it would give asked in turn,
each asked once; without it every call asks."""

from __future__ import annotations

import threading

import pytest

from flametool.commands import main
from flametool.measure import machine


@pytest.fixture
def driver(monkeypatch):
    """machine's driver questions replaced by ones that say which thread asked them; nothing asked ahead yet."""
    asked: list[tuple[str, str]] = []

    def question(name, answer):
        def ask():
            asked.append((name, threading.current_thread().name))
            if isinstance(answer, Exception):
                raise answer
            return answer
        return ask

    monkeypatch.setattr(machine, "_asking", None)
    monkeypatch.setattr(machine, "_answers", {})

    def answering(**answers):
        monkeypatch.setattr(machine, "_ASKED", {name: question(name, a) for name, a in answers.items()})
        return asked

    return answering


def test_asked_ahead_once_in_a_thread_of_its_own(driver):
    asked = driver(cuda_device_count=3, cuda_driver_api_version="13.0", nvml_gpus=("580.1", ["H200"]))
    machine.ask_ahead()
    machine.ask_ahead()  # once a process
    assert machine.cuda_device_count() == 3
    assert machine.cuda_device_count() == 3
    assert machine.cuda_driver_api_version() == "13.0"
    assert machine.nvml_gpus() == ("580.1", ["H200"])
    assert asked == [("cuda_device_count", "flametool-driver"), ("cuda_driver_api_version", "flametool-driver"),
                     ("nvml_gpus", "flametool-driver")]


def test_not_asked_ahead_each_call_asks_in_its_own_thread(driver):
    asked = driver(cuda_device_count=0, cuda_driver_api_version=None, nvml_gpus=(None, []))
    assert machine.cuda_device_count() == 0
    assert machine.cuda_device_count() == 0
    assert asked == [("cuda_device_count", threading.current_thread().name)] * 2


def test_a_question_that_failed_ahead_is_asked_again_where_it_is_needed(driver):
    asked = driver(cuda_device_count=OSError("libcuda: bad ELF"), cuda_driver_api_version="12.8",
                   nvml_gpus=(None, []))
    machine.ask_ahead()
    with pytest.raises(OSError, match="bad ELF"):  # raised where the answer is asked for, as without ask_ahead
        machine.cuda_device_count()
    assert machine.cuda_driver_api_version() == "12.8"  # the others answered there
    assert asked[0] == ("cuda_device_count", "flametool-driver")
    assert asked[-1] == ("cuda_device_count", threading.current_thread().name)


def test_the_measuring_commands_ask_ahead_and_the_reading_ones_do_not():
    measuring = {name for name, command in main.COMMANDS.items() if getattr(command, "measures", False)}
    assert measuring == {"compare", "sweep", "atlas"}


def test_a_measuring_command_finds_its_answers_asked(driver, tmp_path, capsys):
    # a compare with an option that fails once the device is known: the count it read is the one asked ahead
    asked = driver(cuda_device_count=0, cuda_driver_api_version=None, nvml_gpus=(None, []))
    code = main.main(["compare", "--device", "cuda:0", "--out", str(tmp_path / "run")])
    assert code == 2
    assert "--device cuda:0: no CUDA device found" in capsys.readouterr().err
    assert ("cuda_device_count", "flametool-driver") in asked
    assert [a for a in asked if a[0] == "cuda_device_count"] == [("cuda_device_count", "flametool-driver")]


def test_without_a_gpu_the_fallback_line_names_numpy_and_torch_only_when_they_are_what_runs(driver, tmp_path, capsys):
    """`compare --libs cupy,torch` with no GPU said 'comparing numpy and torch on the CPU', then refused cupy."""
    driver(cuda_device_count=0, cuda_driver_api_version=None, nvml_gpus=(None, []))
    code = main.main(["compare", "--libs", "cupy,torch", "--shape", "64,64,64", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("no CUDA device found: running on the CPU\n"), err
    assert "comparing numpy and torch" not in err and "case 'cupy' needs a CUDA device" in err
    # and it does not send the user to --device cuda:N, which this machine refuses ('no CUDA device found')
    assert "--device cuda" not in err and "leave it out of --libs" in err, err
