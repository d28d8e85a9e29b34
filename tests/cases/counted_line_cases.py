"""A step of three lines with known calls per line, for the counted-per-line tests (tests/test_counted_lines.py):
line 1 calls the helper twice, line 2 calls nothing, line 3 keeps one new list per step (a host allocation).
`temporaries`: a NumPy step whose lines allocate arrays it frees after its last line (keeping none)."""

import numpy as np


def helper(x):
    return x + 1


def three_lines(m, k, n, dtype, device):
    kept = []

    def step():
        y = helper(1) + helper(2)  # LINE 1
        z = y * 3  # LINE 2
        kept.append([z])  # LINE 3

    return step, lambda: None


def temporaries(m, k, n, dtype, device):
    a = np.ones((m, k), dtype=dtype)
    b = np.ones((k, n), dtype=dtype)

    def step():
        c = a @ b  # TEMP 1
        d = c + 1  # TEMP 2
        return d

    return step, lambda: None
