"""Where the folder flametool was imported from goes on a child's sys.path once flametool is imported (spawn.BOOT).

child_env puts that folder first on the child's PYTHONPATH, so that the child runs the parent's flametool. Where
flametool is installed it is a site-packages, and first on sys.path every package beside flametool came before the
interpreter's own: an --env venv's mylib 1.1 ran as the 1.0 installed beside flametool (B read 1.002x of A where
it is 1.085x), a --system-site-packages venv's own copy lost to the base's. So once flametool is imported the
folder goes back where the interpreter itself would have it: before the site folders that come after it in its
own order (a venv's base site-packages after the venv's), at the end where it is none of the interpreter's own or
the last of them (there still for what the environment has not). Only the folder child_env added: one the user's
own PYTHONPATH named stays where the user put it. Standard library only (importcheck's interpreters may have
nothing else)."""

from __future__ import annotations

import os
import sys

ADDED = "FLAMETOOL_PATH_ADDED"  # child_env: the folder it put first on PYTHONPATH, one the user's had not


def settle() -> None:
    """The folder child_env added (ADDED, taken out of the environment: what the child starts does not carry it)
    moved from the front of sys.path to its place (placed)."""
    root = os.environ.pop(ADDED, None)
    if root:
        sys.path[:] = placed(sys.path, root, site_dirs())


def placed(path: list[str], root: str, own: list[str]) -> list[str]:
    """`path` with `root` (every copy of it) moved: before the first of `own` (this interpreter's site folders, in
    the order it adds them) that comes after `root` in `own`, else at the end."""
    def norm(p: str) -> str:
        return os.path.normcase(os.path.abspath(p or os.curdir))

    r, own_normed = norm(root), [norm(p) for p in own]
    rest = [p for p in path if norm(p) != r]
    later = set(own_normed[own_normed.index(r) + 1:]) if r in own_normed else set()
    at = next((i for i, p in enumerate(rest) if norm(p) in later), len(rest))
    return rest[:at] + [root] + rest[at:]


def site_dirs() -> list[str]:
    """This interpreter's site folders in the order `site` adds them: the user's (where enabled), then its
    site-packages (a venv's own, then its base's where it sees the system's)."""
    import site

    user = [site.getusersitepackages()] if site.ENABLE_USER_SITE else []
    return user + list(site.getsitepackages())
