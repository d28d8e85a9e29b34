"""Opening a run directory's files as files of that run, not as whatever they point at.

Run directories are shared (samples, bug reports, a colleague's run): one made elsewhere may hold a link
to any file of this machine (`torch.folded -> ~/.ssh/id_rsa`), whose `text N` lines a report would embed
and `export` would print, or a FIFO or a device (/dev/zero), which blocks or spins a reader forever. So a
run's files are opened without following a symlink (O_NOFOLLOW), without waiting on a FIFO (O_NONBLOCK,
cleared once open), and only a regular file is read (fstat on the descriptor opened, so nothing can be
swapped in between the check and the read)."""

from __future__ import annotations

import errno
import fcntl
import os
import sys
import stat
from pathlib import Path
from typing import BinaryIO

from ..errors import RunDirError

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def open_regular(path: Path | str) -> BinaryIO:
    """The regular file at `path` (not a link's target), open for reading bytes; anything else, or a path
    that cannot be opened, is one RunDirError naming it."""
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW | NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except UnicodeEncodeError:  # a ValueError too: a name this locale's file-name encoding cannot spell (LC_ALL=C)
        raise RunDirError(f"{_shown(path)}: the name cannot be spelled in this system's file-name encoding "
                          f"({sys.getfilesystemencoding()}); run with a UTF-8 locale (LC_ALL=C.UTF-8)") from None
    except ValueError:  # a NUL in the name
        raise RunDirError(f"{_shown(path)}: not a file name (it holds a NUL character)") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RunDirError(f"{path}: a symbolic link; a run directory's files are read only as regular files "
                              "in it, never through a link (copy the file in instead)") from None
        raise RunDirError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise RunDirError(f"{path}: not a regular file ({kind(mode)}); a run directory's files are read only "
                              "as regular files")
        if NONBLOCK:
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: Path | str, most: int | None = None) -> bytes:
    """The regular file's bytes; with `most`, a file larger than that is refused before any of it is read."""
    with open_regular(path) as fh:
        try:
            if most is not None and (size := os.fstat(fh.fileno()).st_size) > most:
                raise RunDirError(f"{path}: {size / 2**20:,.0f} MiB, larger than any file flametool writes there "
                                  f"(at most {most / 2**20:,.0f} MiB is read)")
            return fh.read()
        except OSError as exc:
            raise RunDirError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def size(path: Path | str) -> int:
    """The size of the regular file at `path` (checked as open_regular checks it)."""
    with open_regular(path) as fh:
        return os.fstat(fh.fileno()).st_size


def kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a file"


def _shown(path: Path | str) -> str:
    return str(path).replace("\0", "\\0")
