"""Provenance: which code, on which machine, from which command, made a result.

:func:`meta` is the ``meta`` block of summary.json and of the Parquet files' metadata (key ``cclab``):
the cclab version, the build id of the code that made the run (:func:`build_id`), the git commit when cclab runs
from a checkout (and whether the checkout had uncommitted changes), the command line and the API call, the start time (UTC, ISO 8601), the host (CPU
model, cores, OS) and the Python and NumPy versions (docs/scenario.md, "Provenance"). Nothing here may
fail a run: what cannot be found is null.
"""
from __future__ import annotations

import functools
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

_PACKAGE = Path(__file__).resolve().parent


@functools.lru_cache(maxsize=1)
def version() -> str:
    """The installed cclab package's version (pyproject.toml's), "unknown" if it is not installed."""
    from importlib.metadata import PackageNotFoundError, version as _v

    try:
        return _v("cclab")
    except PackageNotFoundError:
        return "unknown"


# The Python modules that turn the engine's output into a run's files (tables, summary.json): with the engine's
# sources, what decides a run's results once its resolved spec is given.
RESULT_MODULES = ("runner.py", "results.py", "columns.py", "metrics.py", "traces/__init__.py")


@functools.lru_cache(maxsize=1)
def build_id() -> str:
    """Which code makes a run's results: 16 hex digits of a SHA-256 over the engine's build id
    (``_native.ENGINE_ID``, a digest of the Rust sources it was compiled from, crates/cclab-py/build.rs) and
    the bytes of :data:`RESULT_MODULES`. The same wherever those sources are built and installed (another
    machine, a wheel, another checkout at a commit that did not touch them); "unknown" if a part cannot be
    read. ``cclab reproduce`` reuses a finished run only when its ``meta.build_id`` is this (with the same
    resolved spec and cclab version): the code that made it, not the checkout's commit, decides."""
    import hashlib

    try:
        from . import _native

        h = hashlib.sha256(b"engine " + _native.ENGINE_ID.encode())
        for name in RESULT_MODULES:
            data = (_PACKAGE / name).read_bytes()
            h.update(f"\0{name}\0{len(data)}\0".encode() + data)
    except (ImportError, AttributeError, OSError):
        return "unknown"
    return h.hexdigest()[:16]


# Read when cclab's run modules are imported (they import this one), not at the first run: a worker that runs
# for hours must not take files edited since it loaded its code for the code it runs.
build_id()


def _git(*args: str) -> Optional[str]:
    try:
        r = subprocess.run(["git", "-C", str(_PACKAGE), *args], capture_output=True, text=True, timeout=5,
                           env=dict(os.environ, GIT_OPTIONAL_LOCKS="0", LC_ALL="C"))
    except (OSError, subprocess.SubprocessError):
        return None  # no git, or it hung
    return r.stdout if r.returncode == 0 else None


@functools.lru_cache(maxsize=1)
def git() -> Optional[dict[str, Any]]:
    """``{"commit": <sha1>, "dirty": <bool>}`` when this cclab runs from a git checkout of cclab, else None.

    The checkout must be the one holding this very package (``<top>/python/cclab``): an installed wheel in
    a virtualenv that happens to sit inside some repository reports nothing rather than that repository's
    commit. ``dirty``: tracked files differ from the commit (``git status --porcelain
    --untracked-files=no``; untracked files do not count). Computed once per process (~10 ms)."""
    top = _git("rev-parse", "--show-toplevel")
    if not top:
        return None
    try:
        if (Path(top.strip()) / "python" / "cclab").resolve() != _PACKAGE:
            return None
    except OSError:
        return None
    commit = _git("rev-parse", "HEAD")
    if not commit:
        return None
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit.strip(), "dirty": None if status is None else bool(status.strip())}


@functools.lru_cache(maxsize=1)
def host() -> dict[str, Any]:
    """CPU model (/proc/cpuinfo, else :func:`platform.processor`), logical cores, OS and machine."""
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    u = platform.uname()
    return {
        "cpu": cpu or platform.processor() or None,
        "cores": os.cpu_count(),
        "os": f"{u.system} {u.release}".strip() or None,
        "machine": u.machine or None,
    }


def utc_now() -> str:
    """The current time, UTC, ISO 8601 to the second: ``2026-11-23T21:04:05Z``."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def version_line() -> str:
    """What ``cclab --version`` prints: ``cclab 0.1.0`` plus the git commit when run from a checkout."""
    g = git()
    tail = "" if g is None else f" (git {g['commit'][:12]}{', uncommitted changes' if g['dirty'] else ''})"
    return f"cclab {version()}{tail}"


def call(fn: str, *args: Any, **kwargs: Any) -> str:
    """An API call written out, e.g. ``cclab.run('scenarios/default.toml', out='results/x', seed=2)``. A
    scenario given as an object or a dict is shown by its name."""
    def show(x: Any) -> str:
        name = getattr(x, "name", None)
        if isinstance(x, dict):
            name = x.get("name", "scenario")
            return f"<scenario dict {name!r}>"
        if name is not None and not isinstance(x, (str, os.PathLike)):
            return f"<Scenario {name!r}>"
        return repr(str(x)) if isinstance(x, os.PathLike) else repr(x)

    parts = [show(a) for a in args] + [f"{k}={show(v)}" for k, v in kwargs.items()]
    return f"{fn}({', '.join(parts)})"


def meta(*, datapath: str, started: str, api_call: Optional[str] = None) -> dict[str, Any]:
    """The ``meta`` block (docs/scenario.md): version, git, command, start time, host, Python and NumPy."""
    try:
        import numpy

        np_version: Optional[str] = numpy.__version__
    except ImportError:  # pragma: no cover - numpy is a dependency
        np_version = None
    return {
        "cclab_version": version(),
        "build_id": build_id(),
        "git": git(),
        "argv": list(sys.argv),
        "call": api_call,
        "started_utc": started,
        "datapath": datapath,
        "host": host(),
        "python": platform.python_version(),
        "numpy": np_version,
    }
