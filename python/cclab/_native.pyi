"""cclab._native: the compiled core (crates/cclab-py). Private: use the ``cclab`` package."""
from typing import Callable

import numpy as np

__all__ = [
    "SpecError",
    "__version__",
    "limits",
    "queue_names",
    "run",
    "sender_names",
    "validate_queue",
    "validate_sender",
]

__version__: str

class SpecError(ValueError):
    """A run spec, algorithm or queue discipline the core rejects. ``str(e)`` is "field: message"."""

    field: str
    """What is wrong: a path into the run spec ("flows[2].transport"), a parameter name, or ""."""
    message: str
    """Why."""

def run(
    spec_json: str, progress: Callable[[float], object] | None = None
) -> tuple[str, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Simulates a run spec (JSON). Returns (result JSON without the series, flow series columns, link
    series columns). The GIL is released while the simulator runs; ``progress(sim_time_s)`` is called at
    most every ~0.25 s of wall time. Raises the progress callback's exception, KeyboardInterrupt on
    Ctrl-C, SpecError for a spec the simulator rejects."""

def validate_sender(
    name: str, params_json: str, mss: int = 1448, packet_size: int = 1500, initial_cwnd: float = 10.0
) -> list[str]:
    """Builds the named sender with these parameters; returns its warnings or raises SpecError
    (``field``: "cc" or the parameter's name)."""

def validate_queue(
    kind: str,
    params_json: str,
    rate_bps: float,
    buffer_pkts: int | None = None,
    buffer_bytes: int | None = None,
    packet_size: int = 1500,
) -> None:
    """Builds the named queue discipline; raises SpecError (``field``: "queue" or the parameter's name)."""

def sender_names() -> list[str]: ...
def queue_names() -> list[str]: ...
def limits() -> dict[str, int]:
    """The run spec's limits by name (crates/cclab-spec/src/limits.rs): max_series_rows,
    max_flow_count, max_delayed_ack, seed_limit."""
