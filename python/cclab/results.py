"""A run's result, whichever datapath ran it: :class:`Result` (summary dict + time-series DataFrames),
and the framing both runners share — series columns into DataFrames, per-interval rates, RTT masking,
the summary.json dict (docs/scenario.md). ``runner.py`` frames the simulator's output with it,
``net.py`` the real datapath's."""
from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import pandas as pd

from .metrics import jain

# The leading columns of timeseries.parquet, in this order (docs/scenario.md documents each).
TIMESERIES_COLUMNS = (
    "kind", "id", "t",
    # flows
    "cwnd", "rate_bps", "srtt", "min_rtt", "in_flight", "ssthresh", "pacing_bps", "delivered_bytes",
    "sent_bytes", "retransmits", "timeouts",
    # links
    "queue_pkts", "queue_bytes", "utilization", "drops", "marks", "random_losses", "arrivals", "tx_bytes",
)


def _clean(x: Any) -> Any:
    """NaN/inf are not JSON: write null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    return x


def prepare_out(out: Union[str, Path], field: str = "out") -> Path:
    """Creates the results folder ``out`` (and its parents) and checks that files can be written into
    it, before a run starts: a run's results are never lost to a bad folder after it finished. Raises a
    ScenarioError naming ``field`` (``--out`` on the command line) and why."""
    from .errors import ScenarioError, show

    where = show(str(out))
    try:
        p = Path(out)
        if p.exists() and not p.is_dir():
            raise ScenarioError([(field, f"{where} exists and is not a folder: results go into a folder")])
        p.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=p, prefix=".cclab-write-test-")
        os.close(fd)
        os.unlink(probe)
    except ScenarioError:
        raise
    except OSError as e:
        raise ScenarioError([(field, f"cannot write results into {where}: {e.strerror or e}")]) from None
    except ValueError as e:  # a NUL in the path
        raise ScenarioError([(field, f"cannot write results into {where}: {e}")]) from None
    return p


class Result:
    """One run.

    * ``summary`` — the summary.json dict (docs/scenario.md);
    * ``flows`` — one row per (t, flow): t, flow, cwnd, rate_bps, srtt, … and the algorithm's state;
    * ``links`` — one row per (t, link): t, link, queue_pkts, rate_bps, utilization, drops, … and the
      queue discipline's state;
    * ``spec`` — the resolved run spec the simulator ran (spec.json);
    * ``trace`` — the per-packet event log when run with ``trace_packets``, else None.
    """

    def __init__(self, summary: dict, flows: pd.DataFrame, links: pd.DataFrame, spec: dict,
                 trace: Optional[pd.DataFrame] = None):
        self.summary = summary
        self.flows = flows
        self.links = links
        self.spec = spec
        self.trace = trace

    def timeseries(self) -> pd.DataFrame:
        """Both tables in one long frame (timeseries.parquet): one row per (t, flow or link), ``kind``
        says which. Columns: kind, id, t, the common flow and link columns (docs/scenario.md), then the
        algorithms' and queue disciplines' state columns in name order; NaN where a row has no value."""
        f = self.flows.assign(kind="flow").rename(columns={"flow": "id"})
        l = self.links.assign(kind="link").rename(columns={"link": "id"})
        df = pd.concat([f, l], ignore_index=True, sort=False)
        common = [c for c in TIMESERIES_COLUMNS if c in df.columns]
        df = df[common + sorted(c for c in df.columns if c not in TIMESERIES_COLUMNS)]
        df["id"] = df["id"].astype("int64")
        return df

    def to_dir(self, out: Union[str, Path], plots: bool = True) -> Path:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps(_clean(self.summary), indent=1, sort_keys=True) + "\n")
        self.timeseries().to_parquet(out / "timeseries.parquet", index=False)
        (out / "spec.json").write_text(json.dumps(self.spec, indent=1, sort_keys=True) + "\n")
        if self.trace is not None:
            self.trace.to_parquet(out / "trace.parquet", index=False)
        if plots:
            from .plots import write_plots

            write_plots(self.flows, self.links, self.summary, out, self.spec)
        return out

    def __repr__(self) -> str:
        s = self.summary
        return f"<cclab.Result {s['scenario']!r}: {len(s['flows'])} flows, jain {s['jain']:.3f}>"


# ---- series columns -> the flows and links tables ----

def frame(cols: dict[str, Any], id_col: str) -> pd.DataFrame:
    """One table from series columns (equal-length arrays): ``t``, ``id_col`` (int64) first, then the
    other columns in name order."""
    df = pd.DataFrame({k: np.asarray(v) for k, v in cols.items()})
    if df.empty:
        return df
    df[id_col] = df[id_col].astype("int64")
    first = ["t", id_col]
    return df[first + sorted(c for c in df.columns if c not in first)]


def add_rates(df: pd.DataFrame, id_col: str, bytes_col: str) -> pd.DataFrame:
    """``rate_bps`` over each sample interval from a cumulative byte counter (0 at the first sample)."""
    if df.empty:
        return df
    df = df.sort_values([id_col, "t"], kind="stable").reset_index(drop=True)
    dt = df.groupby(id_col)["t"].diff()
    db = df.groupby(id_col)[bytes_col].diff()
    df["rate_bps"] = (db * 8.0 / dt).fillna(0.0)
    return df.sort_values(["t", id_col], kind="stable").reset_index(drop=True)


def flow_table(flows: pd.DataFrame) -> pd.DataFrame:
    """The flows table from framed flow series: per-interval ``rate_bps`` from ``delivered_bytes``, and
    RTTs of 0 (no sample yet, see :func:`rtt_or_none`) as NaN, so plots and means skip them."""
    flows = add_rates(flows, "flow", "delivered_bytes")
    for col in ("srtt", "min_rtt"):
        if col in flows:
            flows[col] = flows[col].where(flows[col] > 0)
    return flows


def link_table(links: pd.DataFrame, spec: dict) -> pd.DataFrame:
    """The links table from framed link series: per-interval ``rate_bps`` from ``tx_bytes`` and
    ``utilization`` against each link's rate in the run spec."""
    if links.empty:
        return links
    links = add_rates(links, "link", "tx_bytes")
    links["utilization"] = links["rate_bps"] / links["link"].map({i: l["rate_bps"] for i, l in enumerate(spec["links"])})
    return links


# ---- the summary ----

def rtt_or_none(x: Optional[float]) -> Optional[float]:
    """The transport reports an RTT of 0 until its first sample; no real path has a zero RTT (a packet
    always takes its serialisation time), so 0 means "no sample" and is written as null."""
    return None if x is None or x <= 0 else x


def build_summary(raw: dict) -> dict:
    """summary.json from a run's per-flow and per-link window counters (the simulator's result JSON, or
    the real datapath's brought to the same keys)."""
    flows = []
    for f in raw["flows"]:
        flows.append({
            "id": f["id"], "group": f["group"], "cc": f["cc"], "rtt": f["rtt"],
            "goodput_bps": f["goodput_bps"], "throughput_bps": f["throughput_bps"],
            "mean_cwnd_pkts": f["mean_cwnd_pkts"], "mean_rtt": f["mean_rtt"], "min_rtt": rtt_or_none(f["min_rtt"]),
            "retransmits": f["retransmits"], "timeouts": f["timeouts"], "fast_recoveries": f["fast_recoveries"],
            "start": f["start"], "finish": f["finish"], "delivered_bytes": f["delivered_bytes"],
            "sent_pkts": f["sent_pkts"], "received_pkts": f["received_pkts"], "dropped_pkts": f["dropped_pkts"],
        })
    links = []
    for l in raw["links"]:
        links.append({
            "id": l["id"], "rate_bps": l["rate_bps"], "utilization": l["utilization"], "drops": l["drops"],
            "marks": l["marks"], "random_losses": l["random_losses"], "loss_rate": l["loss_rate"],
            "mean_queue_pkts": l["mean_queue_pkts"], "max_queue_pkts": l["max_queue_pkts"],
            "mean_queue_delay_s": l["mean_queue_delay_s"], "p95_queue_delay_s": l["p95_queue_delay_s"],
        })
    good = [f["goodput_bps"] for f in flows]
    by_cc: dict[str, list[float]] = {}
    for f in flows:
        by_cc.setdefault(f["cc"], []).append(f["goodput_bps"])
    return {
        "scenario": raw["name"],
        "seed": raw["seed"],
        "measure": list(raw["measure"]),
        "flows": flows,
        "links": links,
        "jain": jain(good),
        "jain_by_cc": {k: jain(v) for k, v in sorted(by_cc.items())},
        "goodput_by_cc_bps": {k: float(np.sum(v)) for k, v in sorted(by_cc.items())},
        "sim": {"wall_s": raw["wall_s"], "events": raw["events"], "packets": raw["packets"]},
        "conservation": raw["conservation"],
        "warnings": raw["warnings"],
    }
