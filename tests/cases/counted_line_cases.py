"""A step of three lines with known calls per line, for the counted-per-line tests (tests/test_counted_lines.py):
line 1 calls the helper twice, line 2 calls nothing, line 3 keeps one new list per step (a host allocation)."""


def helper(x):
    return x + 1


def three_lines(m, k, n, dtype, device):
    kept = []

    def step():
        y = helper(1) + helper(2)  # LINE 1
        z = y * 3  # LINE 2
        kept.append([z])  # LINE 3

    return step, lambda: None
