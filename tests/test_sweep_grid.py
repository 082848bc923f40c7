"""Grid values of a sweep (issue 28, item 7): what a grid value may be is checked before any run, and a
grid of mixed values (a string with a unit beside a plain number) writes its table instead of failing
after every run."""
import math
import subprocess
import sys

import pandas as pd
import pytest
from sweepfile import base_toml

from cclab import sweep as sw
from cclab.scenario import ScenarioError

BASE = base_toml("grid", "1s", "0.2s")


def write(tmp_path, grid, seeds="1"):
    p = tmp_path / "s.toml"
    p.write_text(f"seeds = {seeds}\n" + BASE + "[grid]\n" + grid)
    return p


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "cclab.cli", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


def test_mixed_units_and_numbers_become_one_numeric_column(tmp_path):
    # "10Mbps" and 2e7 are both rates: a number is bit/s (SI base unit), as in the scenario file.
    f = write(tmp_path, '"topology.bottleneck.rate" = ["10Mbps", 2e7]\n')
    out = tmp_path / "o"
    r = cli("sweep", str(f), "--out", str(out), "-j", "1")
    assert r.returncode == 0, r.stderr
    t = pd.read_parquet(out / "results.parquet")
    assert list(t["topology.bottleneck.rate"]) == [1e7, 2e7]
    assert list(t["topology.bottleneck.rate_label"]) == ["10Mbps", "20000000.0"]
    s = pd.read_csv(out / "summary.csv")
    assert list(s["topology.bottleneck.rate"]) == [1e7, 2e7] and list(s["n"]) == [1, 1]
    # The rerun (which used to fail writing the table every time) finds both runs done and writes it again.
    r = cli("sweep", str(f), "--out", str(out), "-j", "1")
    assert r.returncode == 0 and "(2 runs)" in r.stdout, r.stdout + r.stderr


def test_values_of_two_kinds_that_share_no_unit_are_kept_as_written(tmp_path):
    # A BDP multiple and a byte count have no common unit: the column holds the values as strings.
    t = pd.DataFrame({"run": ["a", "b", "c"], "topology.bottleneck.buffer": ["2BDP", 30000, True], "seed": [1, 1, 1]})
    t = sw._numeric_grid(t)
    assert list(t["topology.bottleneck.buffer"]) == ["2BDP", "30000", "true"]
    assert "topology.bottleneck.buffer_label" not in t
    t.to_parquet(tmp_path / "t.parquet")  # the column Arrow refused before
    # Whole numbers and fractions are one kind (numbers): left as they are.
    t = sw._numeric_grid(pd.DataFrame({"run": ["a", "b"], "k": [1, 0.5], "seed": [1, 1]}))
    assert list(t["k"]) == [1.0, 0.5]


@pytest.mark.parametrize("grid, says", [
    ('"flows[0].params" = [{initial_ssthresh = 10}, {initial_ssthresh = 20}]\n', "a table"),
    ('"topology.bottleneck.rate" = [{a = 1}, "10Mbps"]\n', "a table"),
    ('"measure" = [["0.2s", "1s"], ["0.5s", "1s"]]\n', "a list"),
    ('"topology.bottleneck.rate" = [1979-05-27]\n', "a date"),
    ('"flows[0].rtt, flows[0].cc" = [["40ms", {x = 1}]]\n', "a table"),
])
def test_tables_lists_and_dates_are_refused_before_any_run(tmp_path, grid, says):
    f = write(tmp_path, grid)
    with pytest.raises(ScenarioError) as e:
        sw.load(f)
    msg = str(e.value)
    assert msg.startswith("grid.") and says in msg and "strings, numbers or booleans" in msg, msg
    out = tmp_path / "o"
    r = cli("sweep", str(f), "--out", str(out))
    assert r.returncode == 2 and r.stderr.startswith("error: grid."), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert not out.exists()  # refused before the folder was made: nothing ran


def test_non_finite_grid_numbers_are_refused_naming_the_key(tmp_path):
    with pytest.raises(ScenarioError) as e:
        sw.load(write(tmp_path, '"flows[0].params.initial_ssthresh" = [10, nan]\n'))
    assert "grid.flows[0].params.initial_ssthresh" in str(e.value) and "finite" in str(e.value)


def test_linked_values_are_checked_the_same_way(tmp_path):
    base, seeds, grid = sw.load(write(tmp_path, '"flows[0].rtt, flows[0].cc" = [["40ms", "cubic"], [0.08, "newreno"]]\n'))
    pts = sw.expand(base, seeds, grid)
    assert [p.values["flows[0].rtt"] for p in pts] == ["40ms", 0.08]
    t = sw._numeric_grid(pd.DataFrame({"run": ["a", "b"], "flows[0].rtt": ["40ms", 0.08], "seed": [1, 1]}))
    # 40 ms and 0.08 s: one unit (seconds); 1e-9 is float rounding of the parsed "40ms".
    assert math.isclose(t["flows[0].rtt"][0], 0.04, rel_tol=1e-9) and t["flows[0].rtt"][1] == 0.08


def test_a_huge_grid_key_or_value_gives_a_short_message(tmp_path):
    # Red-team pass (2026-11-27): a grid key of 100,000 characters made a 200 kB error line (the key twice).
    with pytest.raises(ScenarioError) as e:
        sw.load(write(tmp_path, '"' + "a" * 100_000 + '" = [1]\n'))
    assert len(str(e.value)) < 300 and "100,000 characters" in str(e.value), str(e.value)[:500]
    with pytest.raises(ScenarioError) as e:
        sw.expand(*sw.load(write(tmp_path, '"flows[0].cc" = ["' + "b" * 100_000 + '"]\n')))
    assert len(str(e.value)) < 1000, str(e.value)[:1500]


def test_a_folder_of_an_older_cclab_with_table_values_still_gives_a_table():
    # Red-team pass: folders written when tables were accepted as grid values (their runs finished, their
    # table never written) made `cclab plot` and `sweep.table` fail on unhashable dicts.
    t = sw._numeric_grid(pd.DataFrame({"run": ["a", "b"], "flows[0].params": [{"k": 1}, {"k": 2}], "seed": [1, 1]}))
    assert list(t["flows[0].params"]) == ['{"k": 1}', '{"k": 2}']
    assert len(sw.summarize(t)) == 2


def test_the_seed_is_not_a_grid_key(tmp_path):
    # Red-team pass: "seed" = [5, 6] in the grid was overwritten by `seeds` for every run, the two points
    # became one, and the table's seed column hid the grid's: the sweep silently ran other seeds than asked.
    for grid in ('"seed" = [5, 6]\n', '"flows[0].cc, seed" = [["cubic", 5]]\n'):
        with pytest.raises(ScenarioError, match=r"grid\..*seed.*seeds = \[5, 6\]"):
            sw.load(write(tmp_path, grid))


def test_plot_quotes_a_huge_key_cut(tmp_path):
    # Red-team pass: `cclab plot DIR x=<100,000 characters>` printed the key whole (one line of 100 kB).
    from cclab.plots.sweep import _check

    t = pd.DataFrame({"run": ["a"], "k": [1], "seed": [1], "goodput_mbps": [1.0]})
    with pytest.raises(ScenarioError) as e:
        _check(t, "a" * 100_000, None, None)
    assert len(str(e.value)) < 300 and "100000 characters" in str(e.value), str(e.value)[:400]
