"""cclab: a congestion-control laboratory.

>>> import cclab
>>> res = cclab.run("scenarios/default.toml")          # doctest: +SKIP
>>> res.summary["jain"], res.flows.head()              # doctest: +SKIP
"""
from __future__ import annotations

import importlib

# Not `typing` (≈ 15 ms to import): `import cclab` is the first thing the `cclab` command does, and with a warm
# server (python/cclab/daemon_client.py) it is most of what that command does before handing over.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from . import metrics
    from .results import Result
    from .runner import run
    from .scenario import Scenario, ScenarioError

__all__ = ["Result", "Scenario", "ScenarioError", "algorithms", "metrics", "queues", "run"]

# The package's names are imported when first used, not by ``import cclab``: a process that needs only part
# of cclab (the figures' process, python/cclab/plotproc.py) then does not pay for pydantic and the
# scenario models (~0.1 s).
_LAZY = {"Result": ".results", "run": ".runner", "Scenario": ".scenario", "ScenarioError": ".scenario"}


def __getattr__(name: str) -> Any:
    if name == "metrics":
        return importlib.import_module(".metrics", __name__)
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def algorithms() -> list[str]:
    """Every sender algorithm name a scenario's ``cc`` accepts."""
    from . import _native

    return list(_native.sender_names())


def queues() -> list[str]:
    """Every queue discipline name a link's ``queue`` accepts."""
    from . import _native

    return list(_native.queue_names())
