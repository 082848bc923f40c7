"""`cclab schema`: the scenario file's JSON Schema, generated from the model (docs/scenario.md)."""
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest

from cclab.scenario import json_schema

SCENARIOS = sorted((Path(__file__).resolve().parents[1] / "python" / "cclab" / "scenarios").glob("*.toml"))


@pytest.fixture(scope="module")
def validator():
    r = subprocess.run([sys.executable, "-m", "cclab.cli", "schema"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    schema = json.loads(r.stdout)  # valid JSON
    assert schema == json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)  # a valid draft 2020-12 schema
    return jsonschema.Draft202012Validator(schema)


def test_titles_and_descriptions(validator):
    s = validator.schema
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema" and s["title"] == "cclab scenario"
    assert "docs/scenario.md" in s["description"]
    assert s["properties"]["duration"]["description"].startswith("Length of the run")
    link = s["$defs"]["Link"]["properties"]
    assert link["rate"]["title"] == "Rate" and "100Mbps" in link["rate"]["description"]
    assert s["$defs"]["Flow"]["properties"]["cc"]["description"].startswith("Congestion-control algorithm")


def test_every_shipped_scenario_is_valid(validator):
    assert len(SCENARIOS) >= 8
    for p in SCENARIOS:
        errs = [e.message for e in validator.iter_errors(tomllib.loads(p.read_text()))]
        assert errs == [], p.name



@pytest.mark.parametrize("change, where", [
    (lambda d: d["flows"][0].update(colour="red"), ["flows", 0]),               # unknown key
    (lambda d: d["topology"]["bottleneck"].update(rate=True), ["topology"]),    # a boolean is no quantity
    (lambda d: d.pop("duration"), []),                                          # required
    (lambda d: d["flows"][0].update(count=0), ["flows", 0, "count"]),           # minimum 1
    (lambda d: d["topology"].update(kind="ring"), ["topology"]),                # no such topology
    (lambda d: d["flows"][0].update(transport={"sack": "yes"}), ["flows", 0, "transport"]),  # [transport]'s types
    (lambda d: d.update(flows=[]), ["flows"]),                                  # at least one flow
])
def test_a_bad_scenario_is_rejected_where_it_is_wrong(validator, change, where):
    d = tomllib.loads(next(p for p in SCENARIOS if p.name == "default.toml").read_text())
    assert validator.is_valid(d)
    change(d)
    errs = list(validator.iter_errors(d))
    assert errs and any(list(e.absolute_path)[:len(where)] == where for e in errs), [e.message for e in errs]
