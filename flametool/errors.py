"""Errors the command line turns into one line and an exit code (no traceback), and the exit codes of a
--fail-above verdict."""

# --fail-above: SLOWER_EXIT when the change's 95% interval lies wholly above the threshold, INCONCLUSIVE_EXIT when
# the interval holds it (here, below the analyses, so that the options' help can say them without importing those)
SLOWER_EXIT = 3
INCONCLUSIVE_EXIT = 4


class FlametoolError(Exception):
    """A known failure: bad input or a fault the user can act on. Exit code 2 unless said otherwise."""

    exit_code = 2


class RunDirError(FlametoolError):
    """A run directory (or a file in it) that cannot be read."""


class CaseError(FlametoolError):
    """A case that could not be set up or run (its factory raised, its library is missing, ...)."""

    exit_code = 1


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, ending a run as Ctrl-C does (children stopped, run.json kept), with the exit code a
    shell gives for it (130 as for Ctrl-C; 129 for a closed terminal or a dropped ssh connection)."""

    def __init__(self, exit_code: int = 130) -> None:
        super().__init__()
        self.exit_code = exit_code


def interrupt_code(exc: KeyboardInterrupt) -> int:
    return getattr(exc, "exit_code", 130)


class WriteError(FlametoolError):
    """A file that cannot be written (a full disk, no permission); what was written before is kept."""
