"""Stored run folders under benchmarks/results packed into one .tar.xz each, and unpacked again.

    python3 benchmarks/pack_results.py pack benchmarks/results/h200-2026-12-01g-cal [FOLDER ...]
    python3 benchmarks/pack_results.py unpack benchmarks/results/h200-2026-12-01g-cal.tar.xz [ARCHIVE ...]

Why: what travels to the device (the tracked files and the carried wheels) may be at most 64 MiB, and the
calibration runs' run.json files were 22 MB of the 41 MiB tracked on 2026-12-04; xz keeps them in about a quarter.
`pack` writes FOLDER.tar.xz beside the folder (its members named from the folder's parent, so `unpack` puts the
folder back where it was) and removes the folder; `unpack` extracts an archive beside itself and keeps it. The
readers (flametool report, diff; calibrate.py --reestimate; estimators.py) read the unpacked folder."""

from __future__ import annotations

import argparse
import shutil
import sys
import tarfile
from pathlib import Path


def pack(folder: Path) -> Path:
    folder = folder.resolve()
    if not folder.is_dir():
        raise SystemExit(f"pack_results.py: {folder}: not a folder")
    archive = folder.with_name(folder.name + ".tar.xz")
    if archive.exists():
        raise SystemExit(f"pack_results.py: {archive} exists already")
    partial = archive.with_name(archive.name + ".partial")
    # sorted: the same folder packs to the same members in order
    members = sorted(str(path.relative_to(folder.parent)) for path in folder.rglob("*"))
    with tarfile.open(partial, "w:xz", preset=9) as tar:
        for name in members:
            tar.add(folder.parent / name, arcname=name, recursive=False)
    with tarfile.open(partial, "r:xz") as tar:  # read back before anything is removed
        names = set(tar.getnames())
    missing = [name for name in members if name not in names]
    if missing:
        partial.unlink()
        raise SystemExit(f"pack_results.py: {folder}: {len(missing)} files not in the archive; nothing removed")
    partial.rename(archive)
    shutil.rmtree(folder)
    return archive


def unpack(archive: Path) -> Path:
    archive = archive.resolve()
    if not archive.name.endswith(".tar.xz") or not archive.is_file():
        raise SystemExit(f"pack_results.py: {archive}: not a .tar.xz file")
    folder = archive.with_name(archive.name[:-len(".tar.xz")])
    if folder.exists():
        raise SystemExit(f"pack_results.py: {folder} exists already")
    with tarfile.open(archive, "r:xz") as tar:
        tar.extractall(archive.parent, filter="data")  # nothing outside the archive's folder, no links out
    return folder


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("action", choices=("pack", "unpack"))
    p.add_argument("paths", nargs="+", type=Path)
    args = p.parse_args(argv)
    for path in args.paths:
        done = pack(path) if args.action == "pack" else unpack(path)
        print(f"{args.action}ed: {done}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
