"""Finding the project's Rust executables (``cclab-net``, ``cclab-bpf``) from Python, in one order for all:
the environment variable naming it, then ``PATH``, then beside this Python's interpreter (``make build``
copies them into the venv), then ``<repo>/target/release``."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Optional

REPO_RELEASE = Path(__file__).resolve().parents[2] / "target" / "release"


def find(name: str, env_var: str) -> Optional[str]:
    """The executable ``name``, or None. A path given in ``env_var`` is returned as it is (the caller says
    what is wrong with it if it is not an executable file)."""
    env = os.environ.get(env_var)
    if env:
        return env
    for cand in (shutil.which(name), Path(sys.executable).parent / name, REPO_RELEASE / name):
        if cand and is_executable(cand):
            return str(cand)
    return None


def is_executable(path: str | Path) -> bool:
    return os.access(path, os.X_OK) and Path(path).is_file()
