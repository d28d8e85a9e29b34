"""child's own pieces on hand-built steps (the real loops run in test_compare_cpu and test_sweep)."""

from __future__ import annotations

import time

from flametool.measure import child


def test_warm_up_reads_the_rate_after_the_first_calls():
    """A step whose first call takes 50 ms (a shape's set-up) and the others 1 ms: the rate the calls per
    loop are chosen from is the 1 ms one, not the average of all of them."""
    calls = []

    def step():
        time.sleep(0.05 if not calls else 0.001)
        calls.append(1)

    per_call = child.warm_up(step, lambda: None, 10)
    assert len(calls) == 10
    assert 0.001 <= per_call < 0.004
