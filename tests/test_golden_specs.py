"""The Python front end resolves the golden scenarios to exactly the frozen run specs that the Rust
golden test (crates/cclab-sim/tests/golden.rs) replays: together the two pin a whole run, from the
scenario file to every number, across refactorings."""

import importlib.util
from pathlib import Path

GOLDEN = Path(__file__).parents[1] / "crates" / "cclab-sim" / "tests" / "golden"


def _make_specs():
    spec = importlib.util.spec_from_file_location("make_specs", GOLDEN / "make_specs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_scenarios_resolve_to_the_frozen_specs():
    mod = _make_specs()
    specs = mod.build_specs()
    frozen = {p.stem: p.read_text() for p in (GOLDEN / "specs").glob("*.json")}
    assert sorted(specs) == sorted(frozen)
    moved = [name for name, spec in specs.items() if mod.render(spec) != frozen[name]]
    assert moved == [], f"resolution changed for {moved}"
