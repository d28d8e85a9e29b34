"""Where the folder flametool was imported from goes on a child's sys.path (measure/bootpath.py): back where the
interpreter itself has it, not first (a package beside flametool shadowed an --env venv's own) and not last (a
--system-site-packages venv's own copy then lost to its base's: the review of 4ce966d saw array_api_compat 1.16.0
of the base where the venv held 9.9)."""

from __future__ import annotations

import os
import subprocess
import sys

from flametool.measure import bootpath, spawn

BASE = "/py/lib/python3.11/site-packages"
VENV = "/venv/lib/python3.11/site-packages"
USER = "/root/.local/lib/python3.11/site-packages"
STDLIB = ["/py/lib/python311.zip", "/py/lib/python3.11", "/py/lib/python3.11/lib-dynload"]


def test_the_folder_goes_before_the_site_folders_the_interpreter_adds_after_it():
    # flametool in a venv that sees the system's packages: the venv's own before the base's, as the venv has it
    path = [VENV, *STDLIB, BASE, "/src/editable"]
    assert bootpath.placed(path, VENV, [VENV, BASE]) == [*STDLIB, VENV, BASE, "/src/editable"]
    # flametool in the base's site-packages run by that venv: after the venv's own
    assert bootpath.placed([BASE, *STDLIB, VENV], BASE, [VENV, BASE]) == [*STDLIB, VENV, BASE]
    # an --env venv that does not see the base's: the base's folder last, there for what the venv has not
    assert bootpath.placed([BASE, *STDLIB, VENV], BASE, [VENV]) == [*STDLIB, VENV, BASE]
    # the user's site folder comes before site-packages, as site adds it
    assert bootpath.placed([BASE, *STDLIB, USER], BASE, [USER, BASE]) == [*STDLIB, USER, BASE]
    # a checkout (no site folder): last, every copy of it
    assert bootpath.placed(["/src", *STDLIB, "/src/", BASE], "/src", [BASE]) == [*STDLIB, BASE, "/src"]


def test_only_a_folder_child_env_added_is_moved(monkeypatch):
    """child_env marks the folder it put first on PYTHONPATH; one the user's own PYTHONPATH named is theirs to
    order, and is left where they put it."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(spawn.__file__))))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    env = spawn.child_env()
    assert env[bootpath.ADDED] == root and env["PYTHONPATH"].split(os.pathsep)[0] == root
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/elsewhere", root]))
    monkeypatch.setenv(bootpath.ADDED, root)  # a mark inherited from a process of flametool's: not this run's
    env = spawn.child_env()
    assert bootpath.ADDED not in env and env["PYTHONPATH"].split(os.pathsep) == [root, "/elsewhere", root]
    # a child of this interpreter: flametool's folder is where this interpreter would have it, the mark gone
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.delenv(bootpath.ADDED, raising=False)
    code = spawn.BOOT + "import os, sys, json; print(json.dumps([sys.path, os.environ.get('%s')]))" % bootpath.ADDED
    done = subprocess.run([sys.executable, "-c", code], env=spawn.child_env(), cwd="/", capture_output=True,
                          text=True, check=True)
    import json

    path, mark = json.loads(done.stdout)
    assert mark is None and path.count(root) == 1
    named = [p for p in path if p]  # '' is the child's current folder, '/' there, not this process's
    assert named == bootpath.placed(named, root, bootpath.site_dirs())
