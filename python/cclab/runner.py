"""Running a scenario in the simulator: ``cclab.run``, returning a :class:`~cclab.results.Result`."""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Optional, Union

from . import _native, plotproc, provenance
from .columns import flow_columns, link_columns
from .progress import Progress
from .results import Result, build_summary, flow_table, frame, link_table, prepare_out, trace_table
from .scenario import ScenarioError, ScenarioLike, as_scenario

__all__ = ["Result", "ScenarioLike", "run"]


def run(
    scenario: ScenarioLike,
    out: Optional[Union[str, Path]] = None,
    *,
    seed: Optional[int] = None,
    progress: bool = True,
    trace_packets: Optional[bool] = None,
    plots: bool = True,
) -> Result:
    """Simulates a scenario (a :class:`Scenario`, a dict, or a TOML path). With ``out``, writes
    summary.json, timeseries.parquet, spec.json and PNG plots there.

    Bad input — the scenario, ``seed``, ``trace_packets``, an ``out`` that cannot be written (checked
    before simulating) — raises :class:`ScenarioError` naming the field (docs/scenario.md "Rejections").
    A run over the budget (``[limits]``) is refused before it starts; running out of memory anyway is
    reported the same way. A run that goes over its budget while running (the estimate was too low) stops
    there: what it measured until then is kept (written to ``out``, with ``"stopped"`` in summary.json)
    and a ScenarioError on ``limits.max_memory`` / ``limits.max_events`` is raised, its ``result``
    attribute holding that partial :class:`Result`. RuntimeError("internal error: …") is a bug in cclab."""
    started = provenance.utc_now()
    call = provenance.call("cclab.run", scenario, out=None if out is None else str(out), seed=seed,
                           trace_packets=trace_packets)
    sc = as_scenario(scenario)
    spec = sc.to_spec(seed=seed, trace_packets=trace_packets)
    if out is not None:
        out = prepare_out(out)
    try:
        return _simulate(spec, out, progress, plots, started, call)
    except MemoryError:
        est = _native.estimate(json.dumps(spec))
        raise ScenarioError([("limits.max_memory", f"ran out of memory (the run was estimated to need "
                              f"{est['memory'] / 2**30:.2f} GiB, more than this machine or `ulimit -v` allows): make "
                              "the run smaller (duration, flows, a coarser sample_interval), or give it more memory")]) from None


def _simulate(spec: dict, out: Optional[Path], progress: bool, plots: bool, started: str,
              call: str) -> Result:
    # The figures are drawn by a second process, which imports matplotlib and pandas (~0.55 s) while this
    # one simulates (python/cclab/plotproc.py); the command line starts it even earlier, before validating.
    plotter = plotproc.take()
    if out is not None and plots:
        plotter = plotter or plotproc.Worker()
    elif plotter is not None:
        plotter.cancel()
        plotter = None
    try:
        return _simulate_and_write(spec, out, progress, plots, started, call, plotter)
    finally:
        if plotter is not None:
            plotter.cancel()  # a no-op once it finished; stops it if the run failed


def _simulate_and_write(spec: dict, out: Optional[Path], progress: bool, plots: bool, started: str, call: str,
                        plotter: Optional[plotproc.Worker]) -> Result:
    # The provenance's git queries (three subprocesses, ~10 ms in a checkout) wait on the OS, not on
    # the GIL: they run while the simulator does.
    asker = threading.Thread(target=provenance.git, daemon=True)
    asker.start()
    bar = Progress(spec["duration"], "simulating", decimals=1, eta=True) if progress else None
    try:
        raw_json, fcols, lcols, tcols = _native.run(json.dumps(spec), bar.update if bar else None)
    except _native.SpecError as e:
        if e.field.startswith("limits."):  # the run went over its budget while running
            raise ScenarioError([(e.field, e.message)]) from None
        # The simulator re-checks the resolved spec, which Scenario.to_spec has checked the same way
        # already: reached only by a spec the front door did not write. Named by the run-spec field
        # (spec.json beside the results).
        raise ScenarioError([(f"run spec: {e.field}" if e.field else "run spec", e.message)]) from None
    finally:
        if bar:
            bar.close()
    raw = json.loads(raw_json)
    # The simulator's column dicts are dropped once the tables hold their data (a smaller peak).
    # NumPy columns where they can hold the tables (no pandas import); the pandas path otherwise.
    flows = flow_columns(fcols, spec)
    if flows is None:
        flows = flow_table(frame(fcols, "flow"), spec)
    links = link_columns(lcols, spec)
    if links is None:
        links = link_table(frame(lcols, "link"), spec)
    del fcols, lcols
    summary = build_summary(raw)
    stopped = raw.get("stopped")
    if stopped is not None:
        # Stopped at the budget: the summary covers the run until then (docs/scenario.md "Limits").
        summary["stopped"] = {"reason": stopped["message"], "field": stopped["field"], "at_s": stopped["at_s"],
                              "events": stopped["events"], "memory_bytes": stopped["memory_bytes"],
                              "memory": stopped["memory"]}
    asker.join()
    summary["meta"] = provenance.meta(datapath="sim", started=started, api_call=call)
    trace = None
    if tcols is not None:
        trace = trace_table(tcols)
        summary["trace_records"] = len(trace)
    res = Result(summary, flows, links, spec, trace)
    if out is not None:
        res.to_dir(out, plots=plots, worker=plotter)
    if stopped is not None:
        kept = f"; what it measured until then was written to {out}" if out is not None else ""
        err = ScenarioError([(stopped["field"], stopped["message"] + kept)])
        err.result = res  # type: ignore[attr-defined]
        raise err
    return res
