"""The figures without pandas (python/cclab/plots/_table.py, columns.read_timeseries): the figures' process
reads timeseries.parquet into NumPy columns that hold what Result.load's DataFrames hold, value for value,
the table operations the figures use give what pandas gives, and that process never imports pandas.

(When this path was built, 2026-11-29, the 160 PNGs of 15 runs, from 2 to 200 flows, RED, CoDel, PIE,
MaxNet, a trace-driven link, a parking lot, drawn both from DataFrames and from the file, were byte for byte
those the pandas code drew.)"""
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import cclab
from cclab import columns
from cclab.plots._table import Table, as_table

SCENARIOS = {
    "red_mixed": {"name": "t1", "duration": "2s", "seed": 3,
                  "topology": {"kind": "dumbbell", "bottleneck": {"rate": "20Mbps", "buffer": "BDP", "queue": "red"}},
                  "flows": [{"cc": "fast", "rtt": "20ms"}, {"cc": "cubic", "rtt": "60ms", "start": "0.5s"}],
                  "traffic": [{"kind": "cbr", "rate": "2Mbps"}]},
    "maxnet": {"name": "t2", "duration": "2s", "seed": 1,
               "topology": {"kind": "dumbbell", "bottleneck": {"rate": "50Mbps", "buffer": "BDP", "queue": "maxnet"}},
               "flows": [{"cc": "maxnet", "rtt": "30ms"}, {"cc": "maxnet", "rtt": "30ms", "start": "1s"}]},
    "trace": {"name": "t3", "duration": "2s", "seed": 1,
              "topology": {"kind": "dumbbell", "bottleneck": {"trace": "step-6-24mbps", "buffer": 100}},
              "flows": [{"cc": "cubic", "rtt": "20ms"}]},
}


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.kind == "O" or b.dtype.kind == "O":
        return a.tolist() == b.tolist()
    return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_file_read_without_pandas_is_the_tables_result_load_reads(name, tmp_path):
    cclab.run(SCENARIOS[name], tmp_path, progress=False, plots=False)
    back = cclab.Result.load(tmp_path)
    ts = columns.read_timeseries(tmp_path / "timeseries.parquet")
    assert ts is not None
    for kind, fixed, frame in (("flow", columns.FLOW_COLUMNS, back.flows), ("link", columns.LINK_COLUMNS, back.links)):
        got = columns.split_timeseries(ts, kind, fixed)
        want = as_table(frame)
        assert got is not None and sorted(got) == sorted(want.columns), kind
        for c in want.columns:
            assert _same(got[c], want[c]), (kind, c, got[c][:5], want[c][:5])


def test_as_table_turns_nullable_integers_into_floats_with_nan():
    df = pd.DataFrame({"flow": [0, 1, 0], "timeouts": pd.array([1, None, 3], dtype="Int64"), "cc": ["a", "b", "a"]})
    t = as_table(df)
    assert t["flow"].dtype == np.int64 and t["cc"].tolist() == ["a", "b", "a"]
    assert t["timeouts"].dtype == np.float64 and np.isnan(t["timeouts"][1]) and t["timeouts"][2] == 3.0


def test_table_operations_give_what_pandas_gives():
    rng = np.random.default_rng(7)
    n = 200
    df = pd.DataFrame({"t": np.repeat(np.arange(50) * 0.1, 4), "flow": np.tile([3, 1, 2, 0], 50),
                       "x": rng.normal(size=n)})
    df.loc[rng.choice(n, 30, replace=False), "x"] = np.nan
    df = df.sample(frac=1.0, random_state=1).reset_index(drop=True)  # rows in no order
    t = as_table(df)
    # pivot: rows and columns ascending, NaN where a pair has no value
    rows, cols, m = t.pivot(index="t", columns="flow", values="x")
    ref = df.pivot(index="t", columns="flow", values="x")
    assert np.array_equal(rows, ref.index.to_numpy()) and cols.tolist() == ref.columns.tolist()
    assert np.array_equal(m, ref.to_numpy(dtype=float), equal_nan=True)
    # groups in ascending key order, each group's rows in table order; reduce skips NaN like pandas
    assert [k for k, _ in t.groups("flow")] == sorted(df["flow"].unique().tolist())
    for k, g in t.groups("flow"):
        assert np.array_equal(g["x"], df.loc[df["flow"] == k, "x"].to_numpy(), equal_nan=True)
    assert t.reduce("flow", "x", np.max) == pytest.approx(df.groupby("flow")["x"].max().to_dict())
    q = t.reduce("flow", "x", lambda x: np.quantile(x, 0.95))
    assert q == pytest.approx(df.groupby("flow")["x"].quantile(0.95).to_dict(), rel=1e-12)
    # an all-missing group gives NaN, as pandas
    e = Table({"k": np.array([1, 1]), "v": np.array([np.nan, np.nan])})
    assert np.isnan(e.reduce("k", "v", np.max)[1])
    assert not e.has_values("v") and not e.has_values("absent") and Table().empty


_PROBE = """
import json, sys
from cclab import plotproc, plots
d = sys.argv[1]
job = {"out": d, "summary": json.load(open(d + "/summary.json")), "spec": json.load(open(d + "/spec.json")),
       "format": "png", "style": "screen"}
plotproc._draw(job, list(plots.FIGURES))
print("PANDAS", "pandas" in sys.modules)
"""


def test_the_figures_process_draws_without_importing_pandas(tmp_path):
    # What the figures' process imports is decided by the code: checked in a fresh interpreter after it drew.
    cclab.run(SCENARIOS["red_mixed"], tmp_path, progress=False, plots=False)
    r = subprocess.run([sys.executable, "-c", _PROBE, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "PANDAS False" in r.stdout
    for k in cclab.results.PLOT_KINDS:
        assert (tmp_path / f"{k}.png").stat().st_size > 10_000, k
    assert json.loads((tmp_path / "summary.json").read_text())["flows"]
