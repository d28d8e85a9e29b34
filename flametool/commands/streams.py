"""Standard output and error as the commands write them: a reader that goes away is not a fault, a stream
that cannot be written ends the command in one line."""

from __future__ import annotations

import codecs
import errno
import os
import sys

from ..errors import FlametoolError
from ..render.symbols import ASCII


def ascii_fallback(exc: UnicodeError) -> tuple[str, int]:
    """The error handler ("flametool-ascii") of an output that cannot take a character: the symbols flametool
    prints in ASCII (render/symbols.py), lines and corners of boxes as '-', '|' and '+', bars as '#', and anything
    else as its escape (backslashreplace), so that nothing is lost and the command does not fail."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    said = []
    for c in exc.object[exc.start:exc.end]:
        if c in ASCII:
            said.append(ASCII[c])
        elif "\u2500" <= c <= "\u257f":  # box drawing
            import unicodedata

            name = unicodedata.name(c, "")
            said.append("-" if "HORIZONTAL" in name and "VERTICAL" not in name and "AND" not in name else
                        "|" if "VERTICAL" in name and "HORIZONTAL" not in name and "AND" not in name else "+")
        elif "\u2580" <= c <= "\u259f":  # block elements (bars)
            said.append("#")
        else:
            said.append(c.encode("ascii", "backslashreplace").decode("ascii"))
    return "".join(said), exc.end


codecs.register_error("flametool-ascii", ascii_fallback)


def reopen_closed_standard_streams() -> None:
    """A standard stream flametool was started without (`>&-`, `2>&-`, `<&-`: a cron job, a daemon) becomes
    /dev/null: what would be said there goes nowhere, and no file flametool opens later takes descriptor 0, 1
    or 2 (where a child process or py-spy would read or write it as a standard stream)."""
    for fd, name, flags in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY), (2, "stderr", os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:
            try:
                null = os.open(os.devnull, flags)
            except OSError:
                continue
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        if getattr(sys, name, None) is None:
            try:
                setattr(sys, name, open(fd, "r" if fd == 0 else "w", encoding="utf-8", errors="flametool-ascii",
                                        closefd=False))
            except OSError:
                pass


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
