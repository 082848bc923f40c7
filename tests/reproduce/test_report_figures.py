"""Every experiment's figures drawn from real runs, through the report's own path: ``cclab.reproduce.report
.figures`` (what `cclab report` and `cclab reproduce` call: the experiment's ``figures`` hook, each figure
saved as PNG bytes) given one seed of every variant instead of a results folder; each PNG is written out
and checked to exist, to be a PNG and to be more than empty axes, and each figure to hold data in some
panel. A figure that reads a column or a variant its runs do not have (B8's ``cwnd_pkts``, found only after
a full ``make reproduce``) fails here; so does an engine that crashes on one of the 300 variants (a
half-built delivery change did on D1's two-source Poisson variant while this test was written).

The runs are tiny rather than the quick size: every variant's scenario scaled to TINY_S seconds of
simulated time (before the variant's change, as --quick does, and again after it if the variant sets a
longer duration of its own), one seed. Alone, this file takes ~60 s on this 2-core machine (18 s of CPU:
~35 s runs, the rest drawing); where the claim tests of this folder already ran an experiment
(``claims_of``: F2, F3, M1-M8, B1, B8, B9) their first seed's runs are drawn instead of new ones. The
figures' numbers are not judged here (the claim tests do that), only drawn: a tiny run is all start-up."""
from __future__ import annotations

import json

import pytest

from cclab import reproduce as rp
from cclab.reproduce import _run_once, _secs, report as rr

TINY_S = 2.0
# F3's 16 join/leave phases at 2 s would be 0.125 s each, fewer than two of its 0.1 s samples per half
# phase (the stability index needs two): 10 s gives 0.6 s phases.
LONGER_S = {"F3": 10.0}
DRAWN = [e.id for e in rp.experiments().values() if e.figures is not None]


def tiny_runs(exp_id: str) -> rp.Runs:
    """One seed of every variant of ``exp_id``, each scaled down to TINY_S (LONGER_S) seconds."""
    e = rp.experiments()[exp_id.lower()]
    most = LONGER_S.get(e.id, TINY_S)
    base = rp.scenario_dict(e.scenario)
    # Shortened before the variant's change, as `cclab reproduce --quick` does (a variant may place an event
    # at a fraction of the duration: M8's drop of the base RTT), and again after it if the variant sets a
    # longer duration of its own (L3's 1000 s, L4's 300 s, B2's 1500 s).
    base = rp.shorten(base, min(1.0, most / _secs(base["duration"])))
    out: rp.Runs = {}
    for name, change in e.variants.items():
        d = rp.paper_transport(change(json.loads(json.dumps(base))))
        dur = _secs(d["duration"])
        if dur > most * 1.001:
            d = rp.shorten(d, most / dur)
        d["seed"] = 1
        out[name] = [_run_once(d, None)]
    return out


def _drawn(fig) -> bool:
    """Whether some panel of ``fig`` holds a line, a set of points or bars with data."""
    for ax in fig.axes:
        for line in ax.get_lines():
            if len(line.get_xdata()) >= 1:
                return True
        if ax.collections or ax.patches or ax.images:
            return True
    return False


def test_every_experiment_with_figures_is_tested_here():
    # The experiments without a figure hook are the ones whose report shows tables only (docs/reproduce.md);
    # a new hook is picked up by the parametrisation below without a change here.
    assert set(DRAWN) | {"F4", "B3", "B5", "B6", "L2", "L4", "L6", "D2"} == {e.id for e in rp.experiments().values()}


@pytest.mark.parametrize("exp_id", DRAWN)
def test_figures_are_drawn_from_real_runs(exp_id, cached_runs, tmp_path, monkeypatch):
    e = rp.experiments()[exp_id.lower()]
    assert e.figures is not None
    runs = cached_runs(exp_id) or tiny_runs(exp_id)
    # The report's own path (cclab.reproduce.report.figures: the hook, then each figure saved as PNG bytes),
    # given these runs instead of loading them from a results folder; the hook is wrapped to look at each
    # figure before the report saves and closes it.
    hook, drawn = e.figures, {}

    def looked_at(res: rp.Runs) -> dict:
        figs = hook(res)
        drawn.update({name: _drawn(fig) for name, fig in figs.items()})
        return figs

    monkeypatch.setattr(e, "figures", looked_at)
    monkeypatch.setattr(rr, "_runs", lambda folder, rep: runs)
    pngs = rr.figures(tmp_path, {"id": exp_id, "runs": {name: [] for name in runs}, "seeds": [1]})
    assert pngs and set(pngs) == set(drawn), f"{exp_id} draws no figure"
    for name, data in pngs.items():
        assert drawn[name], f"{exp_id} {name}: no panel holds data"
        png = tmp_path / f"{name}.png"
        png.write_bytes(data)
        # A PNG, and more than empty axes: one empty panel saves to 8-10 KB at the report's 110 dpi; the
        # smallest figure drawn from these runs is 25 KB (M6's parking lot, B9's window).
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 15_000, \
            (exp_id, name, png.stat().st_size)
