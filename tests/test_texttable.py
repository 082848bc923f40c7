"""`cclab run`'s table is printed without rich (python/cclab/texttable.py, ≈ 40–50 ms of start-up); its
characters must be those rich prints into a file or pipe, for every table shape the command makes."""
from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table as RichTable

from cclab.texttable import Table, print_table

HEAD = ("cc", "flows", "goodput Mbit/s", "share", "Jain", "p95 RTT ms", "loss %", "retx %")


def _both(title, columns, rows, width=150):
    t, r = Table(title=title), RichTable(title=title)
    for c in columns:
        t.add_column(c, justify="right")
        r.add_column(c, justify="right")
    for cells, end in rows:
        t.add_row(*cells, end_section=end)
        r.add_row(*cells, end_section=end)
    buf = io.StringIO()
    Console(width=width, file=buf).print(r)
    return t.render(width), buf.getvalue()


@pytest.mark.parametrize("title", [
    "bench-one-second (seed 1, window 0–1 s)",  # an en dash (east-asian "ambiguous": one column)
    "x (seed 12, window 10–30 s)",  # odd and even margins around the title
    "default (seed 1, window 5–20 s)",
    None,
])
def test_the_run_table_is_rich_s(title):
    rows = [(["newreno", "2", "82.41", "50.0%", "0.998", "80.2", "8.442", "8.442"], False),
            (["cubic", "12", "1082.41", "50.0%", "–", "–", "0.000", "0.000"], True),
            (["all", "14", "1164.82", "100.0%", "0.998", "80.2", "8.442", "8.442"], True)]  # a last end_section
    mine, rich = _both(title, HEAD, rows)
    assert mine == rich, "\n" + mine + "\n" + rich


def test_sections_the_verbose_table_and_one_row():
    rows = [(["forward", "3", "1.00", "75.0%", "1.000", "1.0", "0.000", "0.000"], False),
            (["newreno", "3", "1.00", "75.0%", "1.000", "1.0", "0.000", "0.000"], True),
            (["reverse", "1", "0.33", "25.0%", "1.000", "1.0", "0.000", "0.000"], False),
            (["newreno", "1", "0.33", "25.0%", "1.000", "1.0", "0.000", "0.000"], True),
            (["all", "4", "1.33", "100.0%", "0.9", "1.0", "0.000", "0.000"], False)]
    mine, rich = _both("d (seed 3, window 0–10 s)", HEAD, rows)
    assert mine == rich
    flows = ("flow", "cc", "RTT group", "goodput Mbit/s", "p50 RTT ms", "p95 RTT ms", "p99 RTT ms", "loss %", "retx %")
    rows = [([str(i), "newreno", f"{i % 2} ({40 + i:g} ms)", "12.00", "40.1", "41.0", "42.9", "0.100", "0.100"], False)
            for i in range(12)]
    mine, rich = _both("per flow", flows, rows)
    assert mine == rich
    mine, rich = _both("t", HEAD, [(["a", "1", "2", "3", "4", "5", "6", "7"], False)])
    assert mine == rich


def test_what_it_cannot_lay_out_goes_to_rich(capsys):
    # Wider than the console, a title wider than the table, wide characters: rich's layout, printed by rich.
    assert _both("t", HEAD, [(["x" * 200, *"1234567"], False)])[0] is None
    assert _both("a title far wider than the little table under it", ("a",), [(["1"], False)])[0] is None
    assert _both("t", ("a",), [(["表"], False)])[0] is None
    t = Table(title="t")
    t.add_column("a")
    t.add_row("表")
    print_table(t)
    buf = io.StringIO()
    r = RichTable(title="t")
    r.add_column("a", justify="right")
    r.add_row("表")
    Console(width=150, file=buf).print(r)
    assert capsys.readouterr().out == buf.getvalue()
