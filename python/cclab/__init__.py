"""cclab: a congestion-control laboratory.

>>> import cclab
>>> res = cclab.run("scenarios/default.toml")          # doctest: +SKIP
>>> res.summary["jain"], res.flows.head()              # doctest: +SKIP
"""
from . import metrics
from .results import Result
from .runner import run
from .scenario import Scenario, ScenarioError

__all__ = ["Result", "Scenario", "ScenarioError", "algorithms", "metrics", "queues", "run"]


def algorithms() -> list[str]:
    """Every sender algorithm name a scenario's ``cc`` accepts."""
    from . import _native

    return list(_native.sender_names())


def queues() -> list[str]:
    """Every queue discipline name a link's ``queue`` accepts."""
    from . import _native

    return list(_native.queue_names())
