"""cclab._native: the compiled core (crates/cclab-py). Private: use the ``cclab`` package."""
from typing import Callable, final

import numpy as np

__all__ = [
    "ENGINE_ID",
    "SpecError",
    "Stepper",
    "__version__",
    "_golden_digest",
    "_panic",
    "estimate",
    "limits",
    "queue_names",
    "run",
    "sender_names",
    "validate_queue",
    "validate_sender",
    "validate_spec",
]

__version__: str
# The digest of the sources the engine was compiled from (crates/cclab-py/build.rs): 32 hex digits.
ENGINE_ID: str

class SpecError(ValueError):
    """A run spec, algorithm or queue discipline the core rejects. ``str(e)`` is "field: message"."""

    field: str
    """What is wrong: a path into the run spec ("flows[2].transport"), a parameter name, or ""."""
    message: str
    """Why."""

def run(
    spec_json: str, progress: Callable[[float], object] | None = None
) -> tuple[str, dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray] | None]:
    """Simulates a run spec (JSON). Returns (result JSON without the series and the trace, flow series
    columns, link series columns, packet trace columns — t f64, kind u8, link i32, flow i32, seq u64,
    pkt u8 — or None when the spec's ``trace_packets`` is false). The GIL is released while the simulator runs; ``progress(sim_time_s)`` is called at
    most every ~0.25 s of wall time. Raises the progress callback's exception, KeyboardInterrupt on
    Ctrl-C, SpecError for a spec the simulator rejects, RuntimeError("internal error: …") if the core
    panicked (a bug: never a PanicException)."""

def validate_spec(spec_json: str, build: bool = True) -> list[str]:
    """Checks a run spec exactly as ``run`` does before simulating (RunSpec::validate — values, paths,
    bounds, the budget — then building every algorithm and queue, without running; ``build=False``: the
    spec's own checks only). Returns the algorithms' warnings; raises SpecError."""

def _golden_digest(spec_json: str) -> str:
    """Runs the spec; its result's golden digest (crates/cclab-sim/tests/golden/digests.txt records them):
    for the test that holds this module, built with other flags than the Rust tests, to the same results."""

def _panic(message: str) -> None:
    """Panics inside the core (tests: a panic reaches Python as RuntimeError, never as a crash)."""

def estimate(spec_json: str) -> dict[str, float]:
    """What running the spec is estimated to need (crates/cclab-spec/src/limits.rs): ``memory`` (bytes)
    and its terms ``memory_state``, ``memory_series``, ``memory_packets``, ``memory_trace``; ``events``,
    ``packets`` (transmissions summed over links), ``in_flight``, ``series_rows``, ``trace_records``; and the
    budget the spec runs under, ``max_memory`` (bytes) and ``max_events``."""

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
    """The run spec's limits by name (crates/cclab-spec/src/limits.rs): max_series_rows, max_flow_count,
    max_delayed_ack, seed_limit, max_time_ns, min_rate_bps, max_rate_bps, min_packet_size, max_packet_size,
    max_initial_cwnd, max_window_pkts, max_rto_ns, max_buffer_pkts, max_buffer_bytes, max_shape, max_flows,
    max_flow_size, default_max_memory, default_max_events."""

@final
class Stepper:
    """A simulation run in steps with flow ``agent_flow``'s (and each of ``more_agents``') algorithm
    replaced by the ``external`` sender (crates/cclab-py/src/gym.rs); ``link`` is the directional link
    whose counters each step reports. ``agent`` arguments index the driven flows (0: ``agent_flow``).
    Used by :mod:`cclab.gym` and :mod:`cclab.gym_multi`."""

    FIELDS: list[str]
    """The names of :meth:`advance`'s values, in order."""
    def __new__(cls, spec_json: str, agent_flow: int, link: int, more_agents: list[int] = ...) -> Stepper: ...
    @property
    def now(self) -> float: ...
    @property
    def end(self) -> float: ...
    @property
    def start(self) -> float:
        """When the agent flow starts (s)."""
    @property
    def starts(self) -> list[float]:
        """When each driven flow starts (s), in order."""
    @property
    def events(self) -> int: ...
    @property
    def cwnd(self) -> float:
        """The agent's window now (packets)."""
    def cwnd_of(self, agent: int) -> float:
        """Driven flow ``agent``'s window now (packets)."""
    def set_cwnd(self, pkts: float, agent: int = 0) -> None:
        """Window mode: the agent's window (packets, ≥ 1), no pacing; takes effect now."""
    def set_rate(self, bps: float, gain: float = 2.0, agent: int = 0) -> None:
        """Rate mode: pace at ``bps`` with a window cap of ``gain × bps × srtt`` (≥ 4 packets)."""
    def advance(self, until: float, on_ack: bool = False) -> list[float]:
        """Runs to ``until`` seconds (clamped to [now, end]), or with ``on_ack`` only until the event that
        brings the agent an ACK; the step's values named by FIELDS."""
    def advance_all(self, until: float, on_ack: bool = False) -> list[list[float]]:
        """:meth:`advance` for every driven flow: one list of FIELDS values each (``on_ack``: until any
        driven flow's next ACK)."""
