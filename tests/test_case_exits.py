"""A case's own sys.exit or KeyboardInterrupt (in its step or its factory) is the case's failure, said as any
exception of its own is, not as its process ending unexplained. Real runs, a couple of seconds each."""

from __future__ import annotations

import pytest

import faultkit as fk

CASES = fk.CASES / "user_cases.py"


@pytest.mark.parametrize("factory, words", [
    ("step_exits", "step() raised in its warm-up: SystemExit: 0"),
    ("step_raises_keyboard_interrupt", "step() raised in its warm-up: KeyboardInterrupt"),
    ("factory_raises_keyboard_interrupt", "factory factory_raises_keyboard_interrupt failed: KeyboardInterrupt"),
])
def test_a_case_s_exit_or_keyboard_interrupt_is_its_failure(tmp_path, factory, words):
    out = tmp_path / "run"
    proc = fk.run(["compare", "--device", "cpu", "--libs", "numpy", "--case", f"{CASES}:{factory}", "--iters", "100",
                   "--warmup", "10", "--repeats", "2", "--processes", "2", "--no-sample", "--out", str(out)])
    assert proc.returncode == 1, proc.stderr
    assert fk.error_line(proc).startswith(f"flametool: case '{factory}': {words} (finished cases kept in {out}")
