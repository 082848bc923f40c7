"""What a researcher works with: `res.flows` / `res.links` columns and dtypes, `res.flow_summary`,
`Result.load`, `res.plot`, the HTML view (docs/scenario.md "Python API")."""
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from matplotlib.figure import Figure

import cclab
from cclab.results import FLOW_COLUMNS, INT_COLUMNS, LINK_COLUMNS, PLOT_KINDS, TIMESERIES_COLUMNS, _as_int, _clean

ROOT = Path(__file__).resolve().parents[1]

# Four algorithms whose state keys collide (CUBIC's and BIC's w_max; FAST's alpha and Libra's) behind a
# RED queue: 2 s keeps the run short while every algorithm has left slow start and reports its state.
MIXED = {
    "name": "mixed", "duration": "2s", "seed": 3, "measure": ["0.5s", "2s"],
    "topology": {"kind": "dumbbell", "bottleneck": {"rate": "20Mbps", "buffer": "BDP", "queue": "red"}},
    "flows": [{"cc": "fast", "rtt": "40ms"}, {"cc": "cubic", "rtt": "40ms", "count": 2},
              {"cc": "bic", "rtt": "20ms"}, {"cc": "libra", "rtt": "60ms"}],
}


@pytest.fixture(scope="module")
def mixed():
    return cclab.run(MIXED, progress=False, plots=False, trace_packets=True)


def test_flow_columns_in_the_documented_order(mixed):
    # the order docs/scenario.md promises, read from the doc itself so the two cannot drift apart
    doc = (ROOT / "docs" / "scenario.md").read_text()
    para = doc[doc.index("`res.flows` columns, in order"):]
    para = para[:para.index("then the `<cc>.<key>`")]
    documented = re.findall(r"`([a-z_]+)`", para.split(":", 1)[1])
    assert tuple(documented) == FLOW_COLUMNS
    cols = list(mixed.flows.columns)
    assert cols[:len(FLOW_COLUMNS)] == list(FLOW_COLUMNS)
    state = cols[len(FLOW_COLUMNS):]
    assert state == sorted(state) and all("." in c for c in state)
    assert list(mixed.links.columns)[:len(LINK_COLUMNS)] == list(LINK_COLUMNS)
    # rows: by time, then flow
    assert mixed.flows[["t", "flow"]].equals(mixed.flows[["t", "flow"]].sort_values(["t", "flow"]).reset_index(drop=True))


def test_cc_group_rtt_come_from_the_scenario(mixed):
    f = mixed.flows
    per_flow = f.groupby("flow")[["cc", "group", "rtt"]].agg(lambda x: sorted(set(x)))
    # flows 0..4: fast, cubic ×2 (one [[flows]] table: group 1), bic, libra
    assert per_flow["cc"].tolist() == [["fast"], ["cubic"], ["cubic"], ["bic"], ["libra"]]
    assert per_flow["group"].tolist() == [[0], [1], [1], [2], [3]]
    assert per_flow["rtt"].tolist() == [[0.04], [0.04], [0.04], [0.02], [0.06]]
    # the same as summary.json's per-flow group / cc / rtt
    for s in mixed.summary["flows"]:
        assert per_flow.loc[s["id"], "cc"] == [s["cc"]] and per_flow.loc[s["id"], "group"] == [s["group"]]
    assert f["cc"].map(type).eq(str).all() and f["group"].dtype == "int64" and f["rtt"].dtype == "float64"


def test_counters_are_exact_int64(mixed):
    for df in (mixed.flows, mixed.links):
        for c in INT_COLUMNS & set(df.columns):
            assert df[c].dtype == "int64", c
    # the last sample's cumulative delivered bytes is the run's total in summary.json, to the byte
    last = mixed.flows.groupby("flow")["delivered_bytes"].last()
    assert [int(last[s["id"]]) for s in mixed.summary["flows"]] == [s["delivered_bytes"] for s in mixed.summary["flows"]]
    # rate_bps is still computed from the counter: bytes × 8 / 0.1 s, exactly as before the conversion
    f0 = mixed.flows[mixed.flows["flow"] == 0]
    assert np.allclose(f0["rate_bps"].iloc[1:], np.diff(f0["delivered_bytes"].to_numpy()) * 8 / 0.1)


def test_counter_conversion_is_lossless_or_refused():
    big = 2.0**53 - 1  # the largest integer float64 holds exactly
    assert _as_int(pd.Series([0.0, 5.0, big], name="x")).tolist() == [0, 5, 2**53 - 1]
    # unknown (kernel TCP's timeouts on the real datapath): nullable Int64, not 0 and not float
    s = _as_int(pd.Series([1.0, np.nan], name="timeouts"))
    assert str(s.dtype) == "Int64" and s.iloc[0] == 1 and s.isna().tolist() == [False, True]
    with pytest.raises(ValueError, match=r"'x': 1\.5 is not a whole number"):
        _as_int(pd.Series([1.0, 1.5], name="x"))
    with pytest.raises(ValueError, match="below 2\\^53"):
        _as_int(pd.Series([2.0**53], name="x"))


def test_state_columns_are_prefixed_by_algorithm(mixed):
    f = mixed.flows
    cols = set(f.columns)
    assert {"fast.q", "fast.alpha", "cubic.w_max", "cubic.k", "bic.w_max", "libra.alpha"} <= cols
    # no bare shared names any more
    assert not cols & {"q", "alpha", "w_max", "k", "diff", "price"}
    # each algorithm's column has values only in its own flows' rows, and has them there
    for col in ("fast.q", "cubic.w_max", "bic.w_max", "libra.alpha", "fast.alpha"):
        cc = col.split(".")[0]
        has = f[col].notna()
        assert has.any() and (f.loc[has, "cc"] == cc).all(), col
    assert "red.avg" in mixed.links and mixed.links["red.avg"].notna().any()
    ts = mixed.timeseries()
    assert {"fast.q", "cubic.w_max", "red.avg"} <= set(ts.columns) and "red_avg" not in ts


def test_timeseries_keeps_integers_in_the_file(mixed, tmp_path):
    mixed.to_dir(tmp_path, plots=False)
    schema = pq.read_schema(tmp_path / "timeseries.parquet")
    for c in ("drops", "delivered_bytes", "queue_pkts", "group"):
        assert str(schema.field(c).type) == "int64", c
    ts = pd.read_parquet(tmp_path / "timeseries.parquet")
    cols = list(ts.columns)
    lead = [c for c in TIMESERIES_COLUMNS if c in cols]
    assert cols[:len(lead)] == lead == list(TIMESERIES_COLUMNS)
    assert cols[len(lead):] == sorted(cols[len(lead):])
    # a flow row has no link counter: null, and the column stays integer
    assert ts.loc[ts["kind"] == "flow", "drops"].isna().all()


def test_flow_summary_one_row_per_flow(mixed):
    fs = mixed.flow_summary
    s = mixed.summary["flows"]
    assert len(fs) == len(s) == 5
    assert list(fs.columns[:6]) == ["id", "cc", "group", "rtt", "goodput_bps", "share"]
    assert fs["id"].tolist() == [0, 1, 2, 3, 4] and fs["cc"].tolist() == ["fast", "cubic", "cubic", "bic", "libra"]
    # every summary key is a column, with its value
    assert set(s[0]) <= set(fs.columns)
    assert fs["goodput_bps"].tolist() == [f["goodput_bps"] for f in s]
    assert fs["share"].sum() == pytest.approx(1.0)
    assert fs["retransmits"].dtype == "int64" and fs["mean_rtt"].dtype == "float64"
    # finite flows: `finish` is null for bulk flows → NaN, a float column
    assert fs["finish"].dtype == "float64" and fs["finish"].isna().all()


def test_flow_summary_takes_new_summary_keys():
    # per-flow keys another part of cclab adds to summary.json become columns without code here
    flows = [{"id": 0, "cc": "a", "group": 0, "rtt": 0.02, "goodput_bps": 3e6, "p99_rtt": 0.05,
              "loss": {"events": 2, "pkts": 7}, "timeouts": 1},
             {"id": 1, "cc": "b", "group": 1, "rtt": 0.04, "goodput_bps": 1e6, "p99_rtt": None,
              "loss": {"events": 0, "pkts": 0}, "timeouts": None}]
    res = cclab.Result({"flows": flows}, pd.DataFrame(), pd.DataFrame(), {})
    fs = res.flow_summary
    assert list(fs.columns) == ["id", "cc", "group", "rtt", "goodput_bps", "share", "loss.events", "loss.pkts",
                                "p99_rtt", "timeouts"]
    assert fs["share"].tolist() == [0.75, 0.25]
    assert fs["loss.pkts"].tolist() == [7, 0] and fs["loss.pkts"].dtype == "int64"
    assert str(fs["timeouts"].dtype) == "Int64" and fs["timeouts"].isna().tolist() == [False, True]


def test_load_gives_back_an_equal_result(mixed, tmp_path):
    mixed.to_dir(tmp_path, plots=False)
    back = cclab.Result.load(tmp_path)
    for a, b in ((mixed.flows, back.flows), (mixed.links, back.links), (mixed.trace, back.trace),
                 (mixed.flow_summary, back.flow_summary), (mixed.timeseries(), back.timeseries())):
        pd.testing.assert_frame_equal(a, b, check_exact=True)  # values, column order and dtypes
    assert back.spec == mixed.spec
    assert back.summary == json.loads(json.dumps(_clean(mixed.summary)))


def test_load_without_trace_and_with_maxnet_in_both_tables(tmp_path):
    # a MaxNet sender's and router's `maxnet.price` share one column of the file; load splits them again
    d = {"name": "mx", "duration": "1s", "topology": {"kind": "dumbbell", "bottleneck": {"rate": "20Mbps", "queue": "maxnet"}},
         "flows": [{"cc": "maxnet", "rtt": "30ms"}]}
    res = cclab.run(d, tmp_path, progress=False, plots=False)
    assert res.flows["maxnet.price"].notna().any() and res.links["maxnet.price"].notna().any()
    back = cclab.Result.load(tmp_path)
    assert back.trace is None
    pd.testing.assert_frame_equal(res.flows, back.flows, check_exact=True)
    pd.testing.assert_frame_equal(res.links, back.links, check_exact=True)


def test_load_upgrades_a_folder_from_before_the_prefixes(mixed, tmp_path):
    # the old format: bare state keys, float counters, no cc/group/rtt/queue columns
    ts = mixed.timeseries().drop(columns=["cc", "group", "rtt", "queue"])
    old = {}
    for c in ts.columns:
        if "." in c:
            bare = c.split(".", 1)[1]
            bare = "red_avg" if c == "red.avg" else bare
            old[bare] = old[bare].fillna(ts[c]) if bare in old else ts[c]
        elif c in INT_COLUMNS:
            old[c] = ts[c].astype("float64")
        else:
            old[c] = ts[c]
    mixed.to_dir(tmp_path, plots=False)
    pd.DataFrame(old).to_parquet(tmp_path / "timeseries.parquet", index=False)
    back = cclab.Result.load(tmp_path)
    pd.testing.assert_frame_equal(mixed.flows, back.flows, check_exact=True)
    pd.testing.assert_frame_equal(mixed.links, back.links, check_exact=True)


def test_plot_returns_each_figure(mixed):
    assert PLOT_KINDS == ("rate", "cwnd", "queue", "throughput_delay", "cdf")
    for kind in PLOT_KINDS:
        fig = mixed.plot(kind)
        assert isinstance(fig, Figure) and fig.axes, kind
    with pytest.raises(ValueError, match="kind must be one of rate, cwnd"):
        mixed.plot("nosuch")


def test_html_and_text_views(mixed):
    s = mixed.summary
    assert repr(mixed) == f"<cclab.Result 'mixed': 5 flows, jain {s['jain']:.3f}>"
    h = mixed._repr_html_()
    assert "mixed" in h and "seed 3" in h and "window 0.5–2 s" in h
    for cc in ("fast", "cubic", "bic", "libra"):
        row = re.search(rf"<tr><td>{cc}</td><td>(\d+)</td><td>([\d.]+)</td><td>([\d.]+)</td></tr>", h)
        assert row, cc
        assert int(row[1]) == sum(f["cc"] == cc for f in s["flows"])
        assert float(row[2]) == pytest.approx(s["goodput_by_cc_bps"][cc] / 1e6, abs=0.005)
        assert float(row[3]) == pytest.approx(s["jain_by_cc"][cc], abs=0.0005)
    # warnings are listed, escaped
    res = cclab.Result(dict(s, warnings=["<b>x</b> & y"]), mixed.flows, mixed.links, mixed.spec)
    assert "&lt;b&gt;x&lt;/b&gt; &amp; y" in res._repr_html_()


def test_default_scenario_comment_states_what_it_gives():
    # scenarios/default.toml quotes its own goodput ratio for seed 1: keep the comment true
    text = (ROOT / "scenarios" / "default.toml").read_text()
    quoted = float(re.search(r"\((\d\.\d+)x with seed 1", text)[1])
    res = cclab.run(ROOT / "scenarios" / "default.toml", progress=False, plots=False)
    g = {f["rtt"]: f["goodput_bps"] for f in res.summary["flows"]}
    assert g[0.04] / g[0.08] == pytest.approx(quoted, abs=0.005)  # measured 1.5690 (1.8076 before the Linux default)
