"""cclab.metrics against numbers computed by hand (exact arithmetic: tolerances are float rounding)."""
import math

import numpy as np
import pandas as pd
import pytest

import cclab
from cclab import metrics


def test_jain():
    assert metrics.jain([1, 1, 1, 1]) == pytest.approx(1.0)
    assert metrics.jain([1, 0, 0, 0]) == pytest.approx(0.25)          # one takes all: 1/n
    assert metrics.jain([3, 1]) == pytest.approx(16 / 20)             # (3+1)² / (2·(9+1))
    assert metrics.jain([0, 0]) == 1.0                                 # nobody gets anything: equal
    assert math.isnan(metrics.jain([]))


def test_asymmetry():
    assert metrics.asymmetry([3, 3], [1, 1]) == pytest.approx(0.5)    # (3−1)/(3+1)
    assert metrics.asymmetry([1], [3]) == pytest.approx(-0.5)
    assert metrics.asymmetry([2, 4], [3]) == pytest.approx(0.0)       # means 3 and 3
    assert metrics.asymmetry([0], [0]) == 0.0


def test_stability_index_uses_sample_std():
    # [1, 3]: mean 2, sample std sqrt(((1−2)² + (3−2)²)/(2−1)) = √2 → s = √2/2; [2, 2]: s = 0
    assert metrics.stability_index([[1, 3], [2, 2]]) == pytest.approx(math.sqrt(2) / 2 / 2)
    # [2, 4, 6]: mean 4, sample std sqrt((4+0+4)/2) = 2 → 0.5; an idle flow does not count
    assert metrics.stability_index([[2, 4, 6], [0, 0, 0]]) == pytest.approx(0.5)
    assert math.isnan(metrics.stability_index([[5]]))


def test_responsiveness_index():
    # running mean of [0, 2, 1, 1] = 0, 1, 1, 1; interval mean 1 → last k out of the 10% band is k = 1
    assert metrics.responsiveness_index([0, 1, 2, 3], [[0, 2, 1, 1]]) == pytest.approx(1.0)
    # two flows sampled every 0.5 s; the slowest decides:
    # flow A [4, 4, 4, 4] settles at once (k = 0); flow B [0, 0, 6, 6, 8]: mean 4,
    # running means 0, 0, 2, 3, 4 → |3 − 4| = 1 > 0.4 at k = 4 → R = 4 × 0.5 s
    t = [0.0, 0.5, 1.0, 1.5, 2.0]
    assert metrics.responsiveness_index(t, [[4, 4, 4, 4, 4], [0, 0, 6, 6, 8]]) == pytest.approx(2.0)
    # with a 30 % band: |2 − 4| = 2 > 1.2 at k = 3, |3 − 4| = 1 ≤ 1.2 → R = 3 × 0.5 s
    assert metrics.responsiveness_index(t, [[0, 0, 6, 6, 8]], tol=0.3) == pytest.approx(1.5)
    assert metrics.responsiveness_index(t, [[4, 4, 4, 4, 4]]) == 0.0


def test_link_metrics():
    # 24 Mbit in 2 s on a 20 Mbit/s link = 60 %
    assert metrics.utilization(24e6, 20e6, 2.0) == pytest.approx(0.6)
    assert metrics.loss_rate(3, 1000) == pytest.approx(0.003)
    assert metrics.loss_rate(0, 0) == 0.0
    assert metrics.p95(list(range(101))) == pytest.approx(95)
    assert metrics.p95([1.0, 2.0]) == pytest.approx(1.95)            # 1 + 0.95 × (2 − 1)


def test_throughput_samples_from_cumulative_bytes():
    # two flows sampled every 0.1 s; flow 0 delivers 1250 B per sample (100 kbit/s), flow 1 twice that
    t = np.round(np.arange(0, 1.01, 0.1), 10)
    df = pd.DataFrame({
        "t": np.concatenate([t, t]),
        "flow": [0] * len(t) + [1] * len(t),
        "delivered_bytes": np.concatenate([1250 * np.arange(len(t)), 2500 * np.arange(len(t))]),
    })
    ends, (r0, r1) = metrics.throughput_samples(df, 0.2, 1.0, period=0.2)
    assert ends == pytest.approx([0.4, 0.6, 0.8, 1.0])
    assert r0 == pytest.approx([100e3] * 4) and r1 == pytest.approx([200e3] * 4)
    assert metrics.stability_index([r0, r1]) == pytest.approx(0.0)


def test_fast_indices_on_a_run(base):
    # A lone NewReno flow after slow start: its goodput oscillates (sawtooth + queue) but not wildly.
    base["duration"] = "6s"
    res = cclab.run(base, progress=False)
    ends, rates = metrics.throughput_samples(res.flows, 2.0, 6.0, period=0.5)
    assert len(ends) == 8
    # the samples account for every byte delivered in [2, 6] s
    d = res.flows.set_index("t")["delivered_bytes"]
    assert sum(rates[0]) * 0.5 / 8 == pytest.approx(d.loc[6.0] - d.loc[2.0], rel=1e-9)
    # 20 Mbit/s, BDP buffer: the queue never empties after 2 s, so every half second delivers the link's
    # worth to ±1 packet (1448 B × 8 / 0.5 s = 23 kbit/s = 0.12 % of 19.3 Mbit/s goodput)
    assert rates[0] == pytest.approx(20e6 * 1448 / 1500, rel=0.002)
    assert metrics.stability_index(rates) < 0.002
    assert metrics.responsiveness_index(ends, rates) == 0.0
