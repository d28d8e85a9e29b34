"""The child's end of the message pipe: protocol.py's messages, one JSON line each, written to the file
descriptor the parent gave, which is first moved out of the case's way."""

from __future__ import annotations

import fcntl
import os
from typing import Any

from ..protocol import Message, Phase, encode


class Reporter:
    def __init__(self, fd: int) -> None:
        # Out of the case's way: moved to a high number, closed on exec (what the case starts does not get
        # it), and the number it came on points at /dev/null, so a case that writes there reaches no one.
        try:
            moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 512)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd, inheritable=False)
            os.close(null)
            fd = moved
        except (OSError, AttributeError):  # no F_DUPFD_CLOEXEC, or a low limit on open files
            os.set_inheritable(fd, False)
        self.out = os.fdopen(fd, "w", buffering=1, encoding="utf-8")

    def send(self, message: Message) -> None:
        self.out.write(encode(message))
        self.out.flush()

    def phase(self, name: str, **fields: Any) -> None:
        self.send(Phase(name, **fields))
