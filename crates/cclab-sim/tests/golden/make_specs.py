"""Writes the resolved run specs the golden test replays (crates/cclab-sim/tests/golden.rs).

Run from the repository root with the project's venv: `.venv/bin/python crates/cclab-sim/tests/golden/make_specs.py`.
The specs are the Python front end's output frozen at one version, so the golden test checks the
Rust engine alone: a refactoring of the simulator, transport or algorithms must reproduce every
result byte for byte (the digests in digests.txt), or its commit says why the numbers moved.
"""

import json
from pathlib import Path

import cclab
from cclab.scenario import Scenario

HERE = Path(__file__).parent
SCEN = HERE.parents[3] / "python" / "cclab" / "scenarios"


def shorten(sc_dict: dict, duration: float) -> dict:
    d = dict(sc_dict)
    d["duration"] = f"{duration}s"
    d["measure"] = [f"{duration / 4}s", f"{duration}s"]
    return d


def build_specs() -> dict[str, dict]:
    """The golden specs, resolved by the Python front end as it is now (tests/test_golden_specs.py
    compares them with the frozen files, so a change to scenario resolution is caught too)."""
    specs = {}
    import tomllib

    # Every shipped scenario, shortened (the engine paths they use, not their full length).
    for path in sorted(SCEN.glob("*.toml")):
        data = tomllib.loads(path.read_text())
        for duration in (6.0, 25.0, 65.0, 100.0, 130.0, 220.0):  # long enough for the last flow start
            try:
                sc = Scenario.from_dict(shorten(data, duration))
                break
            except cclab.ScenarioError:
                continue
        else:
            raise SystemExit(f"{path.name}: no short duration validates")
        specs[path.stem] = sc.to_spec(seed=3)
    # Every sender algorithm: two flows, mixed RTT, drop-tail, a little random loss at the bottleneck.
    for cc in cclab._native.sender_names():
        sc = Scenario.from_dict({
            "name": f"algo_{cc}", "duration": "6s", "seed": 2, "sample_interval": "50ms",
            "measure": ["1s", "6s"],
            "topology": {"kind": "dumbbell", "bottleneck": {"rate": "30Mbps", "buffer": "BDP",
                                                              "queue": "maxnet" if cc == "maxnet" else "droptail",
                                                              "loss": 0.0005}},
            "flows": [{"cc": cc, "rtt": "30ms", "start": ["0s", "0.5s"]},
                      {"cc": cc, "rtt": "70ms", "start": ["0s", "0.5s"]}],
        })
        specs[f"algo_{cc}"] = sc.to_spec()
    # Packet trace, delayed ACKs, no SACK, RED.
    sc = Scenario.from_dict({
        "name": "trace_red", "duration": "3s", "seed": 5, "sample_interval": "20ms",
        "topology": {"kind": "dumbbell", "bottleneck": {"rate": "10Mbps", "buffer": 40, "queue": "red"}},
        "transport": {"delayed_ack": 2, "sack": False},
        "flows": [{"cc": "reno", "rtt": "20ms"}, {"cc": "cubic", "rtt": "50ms", "start": "0.3s"}],
    })
    specs["trace_red"] = sc.to_spec(trace_packets=True)
    # A delay spike: the bottleneck's one-way delay 20 ms -> 300 ms for 0.5 s, then back (the delay
    # schedule's in-order arrivals and its spurious timeout, RACK and undo with Linux's defaults).
    sc = Scenario.from_dict({
        "name": "delay_spike", "duration": "5s", "seed": 4, "sample_interval": "50ms",
        "topology": {"kind": "dumbbell", "bottleneck": {
            "rate": "20Mbps", "delay": "20ms", "buffer": "BDP",
            "delay_schedule": [["2s", "300ms"], ["2.5s", "20ms"]]}},
        "flows": [{"cc": "cubic", "rtt": "50ms"}, {"cc": "bbr", "rtt": "50ms", "start": "0.2s"}],
    })
    specs["delay_spike"] = sc.to_spec()
    return specs


def render(spec: dict) -> str:
    return json.dumps(spec, sort_keys=True, indent=1) + "\n"


def main() -> None:
    out = HERE / "specs"
    out.mkdir(exist_ok=True)
    for p in out.glob("*.json"):
        p.unlink()
    specs = build_specs()
    for name, spec in specs.items():
        (out / f"{name}.json").write_text(render(spec))
    print(f"{len(specs)} specs in {out}")


if __name__ == "__main__":
    main()
