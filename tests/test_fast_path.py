"""The pandas-free results path (python/cclab/columns.py, docs/performance.md "Start-up"): `cclab run --no-plots`
imports neither pandas nor matplotlib, and the tables and timeseries.parquet it makes are those of the pandas
path, value for value, dtype for dtype, with the same pandas metadata in the file."""
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import cclab
from cclab import _native, columns, results

# What a run imports is decided by the code, not by timing: checked in a fresh interpreter at the end of a
# whole `cclab run --no-plots`.
_PROBE = """
import json, sys
from cclab.cli import cli
try:
    cli(sys.argv[1:], prog_name="cclab", standalone_mode=False)
finally:
    print("MODULES " + json.dumps(sorted(m for m in ("pandas", "matplotlib", "pyarrow.parquet", "rich")
                                         if m in sys.modules)))
"""


def test_run_no_plots_imports_neither_pandas_nor_matplotlib(tmp_path):
    # Nor pyarrow.parquet (its filesystems, ≈ 40 ms; the compiled writer is enough) nor rich (the table is
    # printed by python/cclab/texttable.py).
    toml = tmp_path / "one.toml"
    toml.write_text('name = "one"\nduration = "1s"\n[topology]\nkind = "dumbbell"\n[topology.bottleneck]\n'
                    'rate = "100Mbps"\nbuffer = "BDP"\n[[flows]]\ncc = "newreno"\ncount = 2\nrtt = "40ms"\n')
    r = subprocess.run([sys.executable, "-c", _PROBE, "run", str(toml), "--out", str(tmp_path / "o"), "-q",
                        "--no-plots"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    line = next(l for l in r.stdout.splitlines() if l.startswith("MODULES "))
    assert json.loads(line[len("MODULES "):]) == []
    # The run still wrote its files, readable by pandas as before.
    ts = pd.read_parquet(tmp_path / "o" / "timeseries.parquet")
    assert set(ts["kind"]) == {"flow", "link"} and str(ts["drops"].dtype) == "Int64"
    assert (tmp_path / "o" / "summary.json").exists()


def _scenarios(base):
    """Scenarios that exercise every branch of the columns path: two algorithms with state columns (prefixed
    per algorithm), RED's state (``red_avg`` -> ``red.avg``), a trace-driven link (capacity per interval),
    FQ-CoDel, cross traffic and short transfers (extra flows and link rows)."""
    mixed = json.loads(json.dumps(base))
    mixed["flows"] = [{"cc": "fast", "rtt": "20ms"}, {"cc": "libra", "rtt": "60ms"}, {"cc": "newreno", "rtt": "40ms"}]
    red = json.loads(json.dumps(base))
    red["topology"]["bottleneck"]["queue"] = "red"
    red["traffic"] = [{"kind": "cbr", "rate": "2Mbps"}]
    trace = json.loads(json.dumps(base))
    trace["topology"]["bottleneck"] = {"trace": "constant-12mbps", "buffer": 100}
    fq = json.loads(json.dumps(base))
    fq["topology"]["bottleneck"]["queue"] = "fq_codel"
    fq["flows"][0]["count"] = 3
    return {"mixed": mixed, "red": red, "trace": trace, "fq_codel": fq}


@pytest.mark.parametrize("name", ["mixed", "red", "trace", "fq_codel"])
def test_columns_path_equals_pandas_path(base, tmp_path, name):
    sc = _scenarios(base)[name]
    res = cclab.run(sc, tmp_path / "fast", progress=False, plots=False)
    assert isinstance(res._flows, dict) and isinstance(res._links, dict)  # the columns path was taken
    spec = res.spec
    _, fcols, lcols, _ = _native.run(json.dumps(spec), None)  # deterministic: the same series again
    ref_flows = results.flow_table(results.frame(fcols, "flow"), spec)
    ref_links = results.link_table(results.frame(lcols, "link"), spec)
    pd.testing.assert_frame_equal(res.flows, ref_flows)
    pd.testing.assert_frame_equal(res.links, ref_links)
    results.Result(res.summary, ref_flows, ref_links, spec).to_dir(tmp_path / "ref", plots=False)
    fast, ref = pq.read_table(tmp_path / "fast" / "timeseries.parquet"), pq.read_table(tmp_path / "ref" / "timeseries.parquet")
    assert fast.equals(ref)  # same columns, types, nulls and values
    assert fast.schema.metadata[b"pandas"] == ref.schema.metadata[b"pandas"]  # pandas restores the same dtypes
    back = cclab.Result.load(tmp_path / "fast")
    pd.testing.assert_frame_equal(back.flows, ref_flows)
    pd.testing.assert_frame_equal(back.links, ref_links)


def test_the_compiled_writer_writes_what_pyarrow_parquet_writes(base, tmp_path):
    # columns.write_table skips pyarrow.parquet's import; the file must be the same bytes as write_table's.
    res = cclab.run(_scenarios(base)["mixed"], None, progress=False, plots=False)
    table = columns.timeseries_table(res._flows, res._links, {"run_id": "x"})
    columns.write_table(table, tmp_path / "a.parquet")
    pq.write_table(table, tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_columns_the_pandas_path_cannot_take_fall_back():
    """An empty table, or a counter with a missing value (pandas' nullable Int64), is left to the pandas
    path: the columns functions say so with None instead of making a table of another shape."""
    assert columns.flow_columns({}, {"flows": []}) is None
    spec = {"flows": [{"cc": "newreno", "group": 0, "rtt": 0.04}]}
    cols = {"t": [0.1, 0.2], "flow": [0.0, 0.0], "delivered_bytes": [0.0, 1500.0], "timeouts": [0.0, float("nan")]}
    assert columns.flow_columns({k: np.asarray(v) for k, v in cols.items()}, spec) is None


def test_results_reexports_the_column_names():
    assert results.FLOW_COLUMNS is columns.FLOW_COLUMNS and results.TIMESERIES_COLUMNS is columns.TIMESERIES_COLUMNS


@pytest.mark.parametrize("split", ["0", "1"])
def test_figures_from_the_plot_process_are_those_drawn_in_process(base, tmp_path, monkeypatch, split):
    """The worker reads the tables back from timeseries.parquet: its PNGs are byte for byte those this
    process draws from the run's own tables, whether it draws all five or forks and draws them in halves."""
    monkeypatch.setenv("CCLAB_PLOT_PROCESS", "1")  # whatever the machine's load
    monkeypatch.setenv("CCLAB_PLOT_SPLIT", split)
    res = cclab.run(base, tmp_path / "worker", progress=False)
    res.to_dir(tmp_path / "here", plots=True)  # no worker: drawn in this process
    for k in results.PLOT_KINDS:
        assert (tmp_path / "worker" / f"{k}.png").read_bytes() == (tmp_path / "here" / f"{k}.png").read_bytes(), k


def test_a_failed_plot_process_leaves_the_figures_to_this_one(base, tmp_path, monkeypatch):
    from cclab import plotproc

    monkeypatch.setattr(plotproc, "_CODE", "import sys; sys.exit(3)")
    monkeypatch.setenv("CCLAB_PLOT_PROCESS", "1")
    cclab.run(base, tmp_path, progress=False)
    for k in results.PLOT_KINDS:
        assert (tmp_path / f"{k}.png").stat().st_size > 10_000, k


# The worker's code with one half of a split made to fail: the forked child (not the process that
# forked it) raises in write_plots.
_FAILING_HALF = ("import sys, os; sys.path.insert(0, sys.argv[1]); from cclab import plots; parent = os.getpid(); "
                 "real = plots.write_plots\n"
                 "def fail(*a, **k):\n"
                 "    if os.getpid() != parent: raise RuntimeError('this half fails')\n"
                 "    return real(*a, **k)\n"
                 "plots.write_plots = fail; from cclab.plotproc import main; main()")


def test_a_failed_half_of_the_figures_is_drawn_by_the_other(base, tmp_path, monkeypatch):
    """The forked half fails: the worker draws its figures after its own, the run gets all five, the
    same bytes as drawn in this process, and this process draws none (the worker exited 0)."""
    from cclab import plotproc, plots

    drawn: list = []
    real = plots.write_plots
    monkeypatch.setattr(plots, "write_plots", lambda *a, **k: drawn.append(k.get("names")) or real(*a, **k))
    monkeypatch.setattr(plotproc, "_CODE", _FAILING_HALF)
    monkeypatch.setenv("CCLAB_PLOT_PROCESS", "1")
    monkeypatch.setenv("CCLAB_PLOT_SPLIT", "1")
    res = cclab.run(base, tmp_path / "worker", progress=False)
    assert drawn == []
    res.to_dir(tmp_path / "here", plots=True)
    for k in results.PLOT_KINDS:
        assert (tmp_path / "worker" / f"{k}.png").read_bytes() == (tmp_path / "here" / f"{k}.png").read_bytes(), k
    assert sorted(n for half in plotproc.HALVES for n in half) == sorted(plots.FIGURES)


def test_the_cclab_command_starts_the_plot_process_only_for_a_run_with_figures(monkeypatch):
    from cclab import plotproc

    started: list = []
    monkeypatch.setattr(plotproc, "prestart", lambda *a: started.append(a))
    for argv in (["run", "s.toml"], ["run", "s.toml", "--out", "o", "--format", "svg"]):
        plotproc.early(argv)
    assert len(started) == 2
    for argv in (["run", "s.toml", "--no-plots"], ["run", "--help"], ["run", "-h"], ["validate", "s.toml"], [],
                 ["net", "run", "s.toml"], ["sweep", "run"]):
        plotproc.early(argv)
    assert len(started) == 2


def test_the_cclab_command_runs_with_its_early_plot_process_and_stops_it_when_refused(tmp_path):
    """The entry point (python/cclab/launch.py) starts the worker before cclab.cli's imports: a run gets its
    figures in the format asked for later on the command line; a refused run exits 2 as the contract says,
    and writes nothing (the worker started for it is stopped by plotproc.cancel_untaken)."""
    toml = tmp_path / "one.toml"
    toml.write_text('name = "one"\nduration = "1s"\n[topology]\nkind = "dumbbell"\n[topology.bottleneck]\n'
                    'rate = "100Mbps"\nbuffer = "BDP"\n[[flows]]\ncc = "newreno"\nrtt = "40ms"\n')
    env = {**os.environ, "CCLAB_PLOT_PROCESS": "1"}
    code = "from cclab.launch import main; main()"
    r = subprocess.run([sys.executable, "-c", code, "run", str(toml), "--out", str(tmp_path / "o"), "-q", "--format", "svg"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    for k in results.PLOT_KINDS:
        assert (tmp_path / "o" / f"{k}.svg").stat().st_size > 10_000, k
    assert not list((tmp_path / "o").glob("*.png"))
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\nduration = "-1s"\n')
    r = subprocess.run([sys.executable, "-c", code, "run", str(bad), "--out", str(tmp_path / "b")], capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 2 and "duration" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "b").exists()


def test_run_with_plots_draws_them_in_the_plot_process(tmp_path):
    """`cclab run` (figures on) does not import matplotlib or pandas itself: the plot process does."""
    toml = tmp_path / "one.toml"
    toml.write_text('name = "one"\nduration = "1s"\n[topology]\nkind = "dumbbell"\n[topology.bottleneck]\n'
                    'rate = "100Mbps"\nbuffer = "BDP"\n[[flows]]\ncc = "newreno"\nrtt = "40ms"\n')
    env = {**os.environ, "CCLAB_PLOT_PROCESS": "1"}  # whatever the machine's load
    r = subprocess.run([sys.executable, "-c", _PROBE, "run", str(toml), "--out", str(tmp_path / "o"), "-q"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    line = next(l for l in r.stdout.splitlines() if l.startswith("MODULES "))
    assert json.loads(line[len("MODULES "):]) == []
    for k in results.PLOT_KINDS:
        assert (tmp_path / "o" / f"{k}.png").stat().st_size > 10_000, k


@pytest.mark.parametrize("forced", ["0", "1"])
def test_the_plot_process_can_be_forced_on_or_off(base, tmp_path, monkeypatch, forced):
    """CCLAB_PLOT_PROCESS decides over the machine's load; either way the figures are written."""
    from cclab import plotproc

    monkeypatch.setenv("CCLAB_PLOT_PROCESS", forced)
    assert plotproc.use_process() is (forced == "1")
    cclab.run(base, tmp_path, progress=False)
    for k in results.PLOT_KINDS:
        assert (tmp_path / f"{k}.png").stat().st_size > 10_000, k
