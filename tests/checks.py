"""Checks more than one test file makes, one helper each: a command that fails says one line."""

from __future__ import annotations

from flametool.commands import main


def error_of(err: str, progress_first: bool = False) -> str:
    """The one 'flametool: ...' line of standard error, with no traceback or usage block. With
    `progress_first`, progress lines may come before it (standard error is not a terminal in tests); it is last."""
    assert "Traceback" not in err and "usage:" not in err, err
    if progress_first:
        errors = [l for l in err.splitlines() if l.startswith("flametool: ")]
        assert len(errors) == 1 and err.rstrip().endswith(errors[0]), err
        return errors[0]
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("flametool: "), err
    return lines[0]


def one_line_error(capsys, argv: list[str], code: int = 2, progress_first: bool = False,
                   quiet_stdout: bool = False) -> str:
    """Run the command line `argv` in process: it exits `code` and says one line (error_of); with
    `quiet_stdout`, nothing on standard output."""
    rc = main.main(argv)
    captured = capsys.readouterr()
    assert rc == code, captured.err
    if quiet_stdout:
        assert captured.out == "", captured.out
    return error_of(captured.err, progress_first)
