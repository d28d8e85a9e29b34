"""Errors the command line turns into one line and an exit code (no traceback)."""


class FlametoolError(Exception):
    """A known failure: bad input or a fault the user can act on. Exit code 2 unless said otherwise."""

    exit_code = 2


class RunDirError(FlametoolError):
    """A run directory (or a file in it) that cannot be read."""


class CaseError(FlametoolError):
    """A case that could not be set up or run (its factory raised, its library is missing, ...)."""

    exit_code = 1


class WriteError(FlametoolError):
    """A file that cannot be written (a full disk, no permission); what was written before is kept."""
