"""The error contract (docs/scenario.md "Rejections") under fuzzing: a few thousand mutated scenarios
(tests/fuzz/mutate.py: wrong types, out-of-range and non-finite numbers, integers past 64 bits, unit
garbage, deep nesting, unknown and duplicate keys, graph shapes, odd strings, raw bytes) are each accepted
or refused with a ScenarioError naming fields, never anything else; raw files through `cclab validate`
exit 0 or 2 without a traceback; short runs of accepted cases succeed or are refused the same way.
Deterministic (fixed seeds) and fast (~10 s); the long campaign is `make fuzz-scenarios`
(tests/fuzz/campaign.py, results in docs/scenario.md "Fuzzing")."""
import importlib.util
import random
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import cclab
from cclab import ScenarioError

FUZZ = Path(__file__).parent / "fuzz"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, FUZZ / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


mutate = _load("mutate")
contract = _load("contract")

CASES = 5000
RUNS = 40


@pytest.fixture(scope="module")
def cases():
    return list(mutate.cases(seed=11, n=CASES))


def test_every_mutated_scenario_is_accepted_or_refused_by_field(cases):
    findings, accepted = [], 0
    for i, case in enumerate(cases):
        finding, sc = contract.check_validation(case)
        accepted += sc is not None
        if finding:
            findings.append(f"case {i}: {finding}")
    assert findings == [], "\n".join(findings[:20])
    # The mutations keep some cases valid: the accepted path is exercised too.
    assert 50 < accepted < len(cases) - 1000, accepted


def test_the_real_datapath_front_door_too(cases):
    findings = []
    for i, case in enumerate(cases[:1000]):
        finding, _ = contract.check_validation(case, datapath="net")
        if finding:
            findings.append(f"case {i}: {finding}")
    assert findings == [], "\n".join(findings[:20])


def test_raw_files_through_cclab_validate(tmp_path, cases):
    runner = CliRunner()
    files = list(mutate.raw_file_cases(random.Random(5)))
    # Mutated scenarios written as TOML (what TOML can say of them), and a few files that are not files.
    files += [text.encode() for text in map(contract.toml_of, cases[:300]) if text is not None]
    findings = []
    for i, data in enumerate(files):
        p = tmp_path / f"case{i}.toml"
        p.write_bytes(data)
        finding = contract.check_cli_validate(runner, p)
        if finding:
            findings.append(f"file {i}: {finding}")
    for p in (Path("/dev/zero"), Path("/dev/null"), tmp_path, tmp_path / "missing.toml"):
        finding = contract.check_cli_validate(runner, p)
        if finding:
            findings.append(f"{p}: {finding}")
    assert findings == [], "\n".join(findings[:20])


def test_short_runs_of_accepted_cases(cases):
    findings, ran = [], 0
    for i, case in enumerate(cases):
        if ran >= RUNS:
            break
        _, sc = contract.check_validation(case)
        short = contract.shortened(case) if sc is not None else None
        if short is None:
            continue
        ran += 1
        finding = contract.check_run(short)
        if finding:
            findings.append(f"case {i}: {finding}")
    assert ran == RUNS
    assert findings == [], "\n".join(findings[:20])


def test_algorithm_and_queue_parameters_at_the_edges():
    findings, ran = [], 0
    # 400 cases: the link impairments are drawn at and beyond their edges (jitter above the delay, reorder
    # without delay), so only ~5 % of cases validate and run, and the draws shift whenever an algorithm gains
    # a parameter (200 cases gave 10 once `abe` and `table` were added, one short of the bound): 400 give 19.
    for i, case in enumerate(mutate.param_cases(seed=13, n=400)):
        finding, sc = contract.check_validation(case)
        if finding is None and sc is not None:
            ran += 1
            finding = contract.check_run(case)
        if finding:
            findings.append(f"case {i}: {finding}")
    assert ran > 10
    assert findings == [], "\n".join(findings[:20])


def test_assignments_keep_the_contract(cases):
    # Any nasty value assigned to a field of a valid scenario: refused at once, or accepted and then
    # refused (or run) by cclab.run, which validates the scenario again.
    rng = random.Random(7)
    base = cclab.Scenario.load(Path(cclab.__file__).parent / "scenarios" / "default.toml")
    findings = []
    for _ in range(300):
        sc = base.model_copy(deep=True)
        field = rng.choice(["name", "duration", "seed", "sample_interval", "measure", "packet_size", "trace_packets"])
        value = rng.choice(mutate.NASTY_SCALARS)
        try:
            setattr(sc, field, value)
        except ScenarioError as e:
            finding = contract.check_error(e)
            if finding:
                findings.append(f"{field} = {value!r:.60}: {finding}")
            continue
        except Exception as e:
            findings.append(f"{field} = {value!r:.60}: {type(e).__name__}: {e}")
            continue
        try:
            cclab.Scenario.model_validate(sc)
        except ScenarioError as e:
            finding = contract.check_error(e)
            if finding:
                findings.append(f"{field} = {value!r:.60} (revalidated): {finding}")
        except Exception as e:
            findings.append(f"{field} = {value!r:.60} (revalidated): {type(e).__name__}: {e}")
    assert findings == [], "\n".join(findings[:20])
