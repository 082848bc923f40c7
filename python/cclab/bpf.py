"""The kernel datapath from Python: finding the ``cclab-bpf`` binary (crates/cclab-bpf), which makes one of
our algorithms selectable by name for Linux TCP sockets (docs/kernel-datapath.md).

``cclab net run`` needs nothing from here (its ``bpf:*`` flows are served inside ``cclab-net``); this is for
``cclab bpf serve`` and ``cclab bpf leftovers``. The binary is found through ``CCLAB_BPF_BIN``, then
``cclab-bpf`` on ``PATH``, then beside this Python's interpreter (``make build`` copies it into the venv),
then ``<repo>/target/release/cclab-bpf``.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Optional


def find_binary() -> Optional[str]:
    """The ``cclab-bpf`` executable, or None."""
    env = os.environ.get("CCLAB_BPF_BIN")
    if env:
        return env if os.access(env, os.X_OK) and Path(env).is_file() else None
    for cand in (shutil.which("cclab-bpf"), Path(sys.executable).parent / "cclab-bpf",
                 Path(__file__).resolve().parents[2] / "target" / "release" / "cclab-bpf"):
        if cand and os.access(cand, os.X_OK) and Path(cand).is_file():
            return str(cand)
    return None
