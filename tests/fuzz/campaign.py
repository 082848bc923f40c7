"""The long fuzzing campaign of the scenario error contract (``make fuzz-scenarios``): many more cases than
tests/test_fuzz_contract.py, through the same checks (tests/fuzz/contract.py), with seeds of their own.
Prints what ran and every distinct finding; exit 1 if there is one. Its last result is recorded in
docs/scenario.md ("Fuzzing").

    python tests/fuzz/campaign.py --cases 200000 --runs 2000 --files 5000 --seed 1
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import contract  # (the campaign's sibling modules, found through sys.path above)
import mutate


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=200_000, help="mutated scenarios validated")
    ap.add_argument("--runs", type=int, default=2_000, help="short runs of accepted cases")
    ap.add_argument("--files", type=int, default=5_000, help="files through `cclab validate` (CLI, in-process)")
    ap.add_argument("--params", type=int, default=2_000, help="runs with random algorithm and queue parameters")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    from click.testing import CliRunner

    t0 = time.monotonic()
    findings: Counter[str] = Counter()
    example: dict[str, str] = {}

    def note(where: str, finding: str) -> None:
        key = finding[:100]
        findings[key] += 1
        example.setdefault(key, f"{where}: {finding}")

    accepted = runs = files = 0
    runnable = []
    tv = time.monotonic()
    for i, case in enumerate(mutate.cases(args.seed, args.cases)):
        finding, sc = contract.check_validation(case)
        if finding:
            note(f"case {i}", finding)
        if i % 4 == 0:  # a quarter of them for the real datapath's front door too
            finding, _ = contract.check_validation(case, datapath="net")
            if finding:
                note(f"case {i} (net)", finding)
        if sc is not None:
            accepted += 1
            if len(runnable) < args.runs:
                runnable.append((i, case))
    tv = time.monotonic() - tv

    tr = time.monotonic()
    for i, case in runnable:
        short = contract.shortened(case)
        if short is None:
            continue
        runs += 1
        finding = contract.check_run(short)
        if finding:
            note(f"run of case {i}", finding)
    tr = time.monotonic() - tr

    tp = time.monotonic()
    param_runs = 0
    for i, case in enumerate(mutate.param_cases(args.seed, args.params)):
        finding, sc = contract.check_validation(case)
        if finding:
            note(f"params case {i}", finding)
        if sc is not None:
            param_runs += 1
            finding = contract.check_run(case)
            if finding:
                note(f"run of params case {i}", finding)
    tp = time.monotonic() - tp

    tf = time.monotonic()
    runner = CliRunner()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="cclab-fuzz-") as tmp:
        sources = (mutate.raw_file_cases(rng) + [t.encode() for t in map(contract.toml_of, mutate.cases(args.seed + 1, args.files))
                                                 if t is not None])[: args.files]
        for i, data in enumerate(sources):
            if rng.random() < 0.3:  # flip some bytes too
                b = bytearray(data)
                for _ in range(rng.randint(1, 8)):
                    if b:
                        b[rng.randrange(len(b))] = rng.randrange(256)
                data = bytes(b)
            p = Path(tmp) / f"case{i}.toml"
            p.write_bytes(data)
            files += 1
            finding = contract.check_cli_validate(runner, p)
            if finding:
                note(f"file {i}", finding)
    tf = time.monotonic() - tf

    total = time.monotonic() - t0
    print(f"seed {args.seed}: {args.cases} cases validated in {tv:.1f} s ({accepted} accepted), {runs} short runs in "
          f"{tr:.1f} s, {args.params} parameter cases in {tp:.1f} s ({param_runs} ran), {files} files through "
          f"`cclab validate` in {tf:.1f} s; {total:.1f} s in all")
    print(f"findings: {sum(findings.values())} ({len(findings)} distinct)")
    for key, n in findings.most_common():
        print(f"  {n} x {example[key]}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
