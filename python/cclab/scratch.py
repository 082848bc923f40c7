"""Scratch folders that a killed process does not leave behind for good.

A scratch folder is made under the system's temporary folder with a name prefix and holds ``LOCK``, which its
owner keeps locked (``flock``) while it is alive. The kernel drops the lock when the owner dies, however it
dies (SIGKILL included), so a folder whose lock is free was left by a killed owner: the next owner with the
same prefix removes it before making its own. ``LOCK`` appears already locked (locked under another name,
then renamed), so a free one is always a dead owner's; a folder without one yet is being made this instant,
unless it is older than a minute. Used by the real datapath's runs (``cclab-net-``, python/cclab/net.py; cclab-net
inherits the lock) and by pool workers' runs (``cclab-run-``, python/cclab/executor.py), whose scratch a
SIGKILLed sweep or reproduce used to leave in /tmp, one empty folder per run in flight.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Optional, Union

LOCK = "LOCK"
STALE_AFTER_S = 60.0


def clean_stale(prefix: str, root: Optional[Union[str, Path]] = None) -> list[Path]:
    """Removes the folders named ``prefix…`` under ``root`` (the temporary folder) whose lock is free; returns them."""
    root = Path(root if root is not None else tempfile.gettempdir())
    removed: list[Path] = []
    try:
        candidates = [p for p in root.iterdir() if p.name.startswith(prefix) and p.is_dir()]
    except OSError:
        return removed
    for d in candidates:
        try:
            fd = os.open(d / LOCK, os.O_RDWR)
        except FileNotFoundError:
            # A folder being made this instant has no lock yet: only old ones are stale.
            try:
                if time.time() - d.stat().st_mtime < STALE_AFTER_S:
                    continue
            except OSError:
                continue
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
            continue
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
        except OSError:
            pass  # a live owner holds it
        finally:
            os.close(fd)
    return removed


def make(prefix: str) -> tuple[Path, int]:
    """A new scratch folder with its lock taken, after removing the stale ones: (folder, the lock's descriptor).
    The caller closes the descriptor once the folder is removed (:func:`folder` does both)."""
    clean_stale(prefix)
    d = Path(tempfile.mkdtemp(prefix=prefix))
    # LOCK appears already locked: it is locked under another name and renamed. Created and then locked in
    # place, it was free for an instant, and another owner's clean_stale took it for a killed owner's and
    # removed a live run's folder (two concurrent sweeps, 2026-11-29: FileNotFoundError in the run).
    fd = os.open(d / (LOCK + ".new"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.rename(d / (LOCK + ".new"), d / LOCK)
    return d, fd


@contextmanager
def folder(prefix: str) -> Iterator[Path]:
    """A scratch folder for the ``with`` block, removed at its end."""
    d, fd = make(prefix)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
        os.close(fd)
