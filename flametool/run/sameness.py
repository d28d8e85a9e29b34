"""Whether a library is shown to be one copy in every environment of a `compare --env` run, read from what each
environment's probe recorded (run.record.Environment: its version, its installed files, its top-level objects).
Before a run it chooses the default anchor and warns of a given one that differs (measure/environments.py); after
it, every view of the run says that an anchor which differs carries its own change (anchor_caution), as the
warning before the run did: the warning alone was said once, on standard error, and a verdict read without it."""

from __future__ import annotations

from .record import Environment, Run, base_label


def apart(envs: list[Environment], lib: str) -> tuple[bool, str] | None:
    """None when `lib` is shown to be one copy in every environment: one version, the same installed files
    (importcheck.installed_files: one RECORD's files, or the very same directory) and the same top-level objects
    (importcheck.surface). Else (whether it is known to differ, what tells them apart or what is not known).
    A version alone shows nothing: a build from a branch, or an editable install with a patch, keeps the
    release's version string."""
    versions = [e.versions.get(lib) for e in envs]
    if len(set(versions)) > 1 or any(lib not in e.versions for e in envs):  # not probed: not known to differ
        return len(set(versions)) > 1, f"{lib} " + ", ".join(f"{v or 'no version'} in {e.name}"
                                                             for e, v in zip(envs, versions))
    version = f"{lib} {versions[0] or '(no version)'} in every environment"
    files = [e.files.get(lib) for e in envs]
    if None in files:
        return False, f"{version}, its files not known in " + ", ".join(e.name for e, f in zip(envs, files) if f is None)
    if len(set(files)) > 1:
        # two RECORDs that differ are two builds; a copy that is not an installed one (a checkout, an editable
        # install, a copy edited in place) is the same only as the very same directory, which is not known to differ
        known = all(f.startswith("record:") for f in files if f)
        shown = ", ".join(f"{e.name}: {files_shown(f)}" for e, f in zip(envs, files) if f)
        return known, f"{version}, but not the same files ({shown})"
    surfaces = [e.surface.get(lib) for e in envs]
    if None in surfaces:
        return False, f"{version}, its top-level objects not known in " + ", ".join(
            e.name for e, x in zip(envs, surfaces) if x is None)
    if len(set(surfaces)) > 1:
        return True, (f"{version} and the same files, but not the same top-level objects (a function replaced at "
                      "start-up, by a sitecustomize or a .pth?)")
    return None


def files_shown(files: str) -> str:
    """An Environment.files entry in words: the directory of a copy that is not an installed one, or the digest."""
    kind, _, what = files.partition(":")
    return what if kind == "at" else f"installed files {what[:12]}"


def differs(envs: list[Environment], anchor: str, lib: str | None) -> str | None:
    """What an anchor case whose library `lib` is known to differ between the environments does to the figures
    relative to it, in words ('the anchor numpy is numpy 2.4.6 in every environment and the same files, but not
    the same top-level objects (...): its own change is ...'); None where it is not known to differ."""
    found = apart(envs, lib) if lib is not None else None
    if found is None or not found[0]:
        return None
    what = found[1] if found[1].startswith(f"{lib} ") else f"{lib}, {found[1]}"
    return (f"the anchor {anchor} is {what}: its own change is then the host's speed and {lib}'s change together, "
            "and the anchored ratio carries both")


def anchor_caution(run: Run) -> str | None:
    """differs() of a run's own anchor (`compare --env`, config.anchor), as its environments recorded them; None
    in a run without environments or an anchor."""
    anchor = run.config.anchor
    if not anchor or len(run.environments) < 2:
        return None
    lib = next((r.library for l, r in run.results.items() if base_label(l) == anchor and r.library), None)
    return differs(run.environments, anchor, lib)
