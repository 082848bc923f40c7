"""cclab._native: the compiled core (crates/cclab-py). Private: use the ``cclab`` package."""
from typing import Callable

import numpy as np

__version__: str

def run(
    spec_json: str, progress: Callable[[float], object] | None = None
) -> tuple[str, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Simulates a run spec (JSON). Returns (result JSON without the series, flow series columns, link
    series columns). The GIL is released while the simulator runs; ``progress(sim_time_s)`` is called at
    most every ~0.25 s of wall time. Raises the progress callback's exception, KeyboardInterrupt on
    Ctrl-C, ValueError("field\\x1fmessage") for a spec the simulator rejects."""

def validate_sender(
    name: str, params_json: str, mss: int = 1448, packet_size: int = 1500, initial_cwnd: float = 10.0
) -> list[str]:
    """Builds the named sender with these parameters; returns its warnings or raises
    ValueError("field\\x1fmessage")."""

def validate_queue(
    kind: str,
    params_json: str,
    rate_bps: float,
    buffer_pkts: int | None = None,
    buffer_bytes: int | None = None,
    packet_size: int = 1500,
) -> None:
    """Builds the named queue discipline; raises ValueError("field\\x1fmessage")."""

def sender_names() -> list[str]: ...
def queue_names() -> list[str]: ...
