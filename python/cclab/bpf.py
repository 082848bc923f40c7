"""The kernel datapath from Python: finding the ``cclab-bpf`` binary (crates/cclab-bpf), which makes one of
our algorithms selectable by name for Linux TCP sockets (docs/kernel-datapath.md).

``cclab net run`` needs nothing from here (its ``bpf:*`` flows are served inside ``cclab-net``); this is for
``cclab bpf serve`` and ``cclab bpf leftovers``. The binary is found as ``cclab-net`` is
(:mod:`cclab.executables`), through ``CCLAB_BPF_BIN`` first.
"""
from __future__ import annotations

from typing import Optional

from . import executables


def find_binary() -> Optional[str]:
    """The ``cclab-bpf`` executable, or None (a ``CCLAB_BPF_BIN`` that is not one: None too)."""
    b = executables.find("cclab-bpf", "CCLAB_BPF_BIN")
    return b if b is not None and executables.is_executable(b) else None
