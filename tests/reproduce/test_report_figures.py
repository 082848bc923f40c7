"""Every experiment's figures drawn from real runs: the experiment's own ``figures`` hook (the one `cclab report`
and `cclab reproduce` call through ``cclab.reproduce.report.figures``) on one seed of every variant, each
figure saved as a PNG the way the report saves it, and the file checked to exist and to carry a drawing.
A figure that reads a column or a variant its runs do not have (B8's ``cwnd_pkts``, found only after a full
``make reproduce``) fails here.

The runs are tiny rather than the quick size: every variant's scenario (after the variant's own change, so
a variant that sets its own duration is shortened too) scaled to TINY_S seconds of simulated time, one
seed. Tiny runs of every variant of all 26 experiments that draw figures cost ~35 s on this 2-core machine,
drawing them ~30 s; where the claim tests of this folder already ran the experiment (``claims_of``, e.g. M5's
32 variants) their first seed's runs are drawn instead of new ones. The figures are not judged here
(the numbers in them are tested by the claim tests), only drawn: a tiny run is all start-up."""
from __future__ import annotations

import io
import json

import pytest

from cclab import reproduce as rp
from cclab.reproduce import _run_once, _secs

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
def test_figures_are_drawn_from_real_runs(exp_id, cached_runs, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    e = rp.experiments()[exp_id.lower()]
    assert e.figures is not None
    runs = cached_runs(exp_id) or tiny_runs(exp_id)
    figs = e.figures(runs)
    assert figs, f"{exp_id} draws no figure"
    for name, fig in figs.items():
        assert _drawn(fig), f"{exp_id} {name}: no panel holds data"
        buf = io.BytesIO()
        # As cclab.reproduce.report.figures saves them.
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
        plt.close(fig)
        png = tmp_path / f"{name}.png"
        png.write_bytes(buf.getvalue())
        data = png.read_bytes()
        # A PNG, and more than an empty frame: a blank 6 × 4 in figure at 110 dpi is ~3 KB; the smallest
        # drawn figure here is ~15 KB.
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 8_000, (exp_id, name, len(data))
