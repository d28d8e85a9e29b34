"""Standard output and error as the commands write them: a reader that goes away is not a fault, a stream
that cannot be written ends the command in one line."""

from __future__ import annotations

import errno
import os

from ..errors import FlametoolError


class Stdout:
    """Standard output as the commands write it. A reader that stops reading (`| head`) is not a fault: the
    rest of the output is dropped, nothing is said, and the command finishes with its own exit code (a diff
    that passed exits 0, one over --fail-above 3; compare still writes its analysis and report). Any other
    failure (a full disk, /dev/full) ends the command in one line."""

    def __init__(self, stream, quiet: bool = False) -> None:
        self.stream = stream
        self.quiet = quiet  # standard error: a failure is not said (where would it go?), later output dropped
        self.dropped = False  # set after a failure: later output goes nowhere

    def write(self, text: str) -> int:
        if not self.dropped:
            try:
                self.stream.write(text)
                self.stream.flush()
            except OSError as exc:
                self._failed(exc)
        return len(text)

    def flush(self) -> None:
        if not self.dropped:
            try:
                self.stream.flush()
            except OSError as exc:
                self._failed(exc)

    def _failed(self, exc: OSError) -> None:
        self.dropped = True
        try:  # what is still buffered goes nowhere, so Python's own flush at exit cannot fail again
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass
        if exc.errno == errno.EPIPE or self.quiet:
            return
        raise FlametoolError(f"standard output: cannot be written ({exc.strerror or exc})") from None

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self.stream, "encoding", None) or "utf-8"
