"""Builds cclab's Python module (``cclab._native``, the simulator) with profile-guided optimisation.

Why: the engine's profile is flat (no function above ~5 % of the instructions, docs/performance.md), so
no single change to the code takes much off; what the compiler lays out from a measured profile does:
≈ 15-20 % off the simulation loop on the benchmark dumbbells, with every result bit for bit the same
(PGO changes inlining, block order and register use, never what the code computes).

``python tools/pgo.py build --venv .venv`` (what ``make build`` runs):

1. finds ``llvm-profdata`` of the Rust toolchain (rustup's ``llvm-tools`` component; added with
   ``rustup component add llvm-tools`` when missing: it must match rustc's LLVM, so Debian's llvm does not do);
2. builds an instrumented module (``-Cprofile-generate``) in ``target/pgo/``;
3. runs it on the training set below (``python tools/pgo.py train``, about a minute);
4. merges the counts and builds the module again with ``-Cprofile-use``, into the usual target folder.

Where a step cannot be taken (no rustup, no network for the component, a failed training run), it says so
and builds the module without a profile: the same results, a slower loop. ``CCLAB_PGO=0`` skips it.

The training set is fixed (scenarios, seeds and simulated durations), so two builds of the same code get
all but the same profile (only the loop's wall-clock progress checks differ: 9 counts in 4.45 billion
between two builds, `llvm-profdata overlap` 100.000 %); the modules are not bit-identical, their results
are (tests/test_golden_module.py). The set: the bundled scenarios (every paper's algorithm, queue and cross-traffic
kind), every algorithm and every queue discipline on a small dumbbell (an algorithm left out would be
laid out as cold code, slower than without PGO), two episodes of the Gymnasium environment, and the engine
benchmarks' dumbbells (bench/run.py), which weigh the most.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PGO_DIR = ROOT / "target" / "pgo"


def log(msg: str) -> None:
    print(f"pgo: {msg}", flush=True)


# ---- the build ----

def profdata_tool() -> Path | None:
    """rustc's own llvm-profdata (rustup component llvm-tools), added if missing; None if it cannot be had."""
    try:
        sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True, check=True).stdout.strip()
        host = next(line.split(":", 1)[1].strip() for line in
                    subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout.splitlines()
                    if line.startswith("host:"))
    except (OSError, subprocess.CalledProcessError, StopIteration):
        return None
    tool = Path(sysroot) / "lib" / "rustlib" / host / "bin" / "llvm-profdata"
    if not tool.exists() and shutil.which("rustup"):
        log("adding rustup's llvm-tools component (llvm-profdata, matching rustc's LLVM)")
        subprocess.run(["rustup", "component", "add", "llvm-tools"], capture_output=True, text=True)
    return tool if tool.exists() else None


def maturin_develop(venv: Path, rustflags: str, target_dir: Path | None) -> None:
    env = dict(os.environ, VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    env["RUSTFLAGS"] = " ".join(f for f in (os.environ.get("RUSTFLAGS", ""), rustflags) if f)
    if target_dir is not None:
        env["CARGO_TARGET_DIR"] = str(target_dir)
    subprocess.run([str(venv / "bin" / "maturin"), "develop", "--profile", "dist", "-q"], cwd=ROOT, env=env, check=True)


def build(venv: Path) -> int:
    venv = venv.resolve()
    switch = os.environ.get("CCLAB_PGO", "")
    if switch not in ("", "0", "1"):
        print(f"error: CCLAB_PGO={switch!r}: allowed values are 0 (build without a profile) or 1 (the default)",
              file=sys.stderr)
        return 2
    profile = make_profile(venv) if switch != "0" else None
    if switch == "0":
        log("CCLAB_PGO=0: building without a profile")
    elif profile is None:
        log("building without a profile (same results, the simulation loop ~15 % slower)")
    else:
        log("3/3 building the module with the profile")
    maturin_develop(venv, f"-Cprofile-use={profile}" if profile else "", None)
    return 0


def make_profile(venv: Path) -> Path | None:
    """Steps 1 and 2: the merged profile, or None (said why) when it cannot be made."""
    tool = profdata_tool()
    if tool is None:
        log("no llvm-profdata for this rustc (rustup's llvm-tools component)")
        return None
    raw = PGO_DIR / "raw"
    shutil.rmtree(raw, ignore_errors=True)
    raw.mkdir(parents=True)
    profile = PGO_DIR / "native.profdata"
    try:
        log("1/3 building the instrumented module (target/pgo)")
        maturin_develop(venv, f"-Cprofile-generate={raw}", PGO_DIR / "build")
        log("2/3 training it")
        subprocess.run([str(venv / "bin" / "python"), str(Path(__file__).resolve()), "train"], cwd=ROOT,
                       env=dict(os.environ, CCLAB_DAEMON="0"), check=True)
        subprocess.run([str(tool), "merge", "-o", str(profile), str(raw)], check=True, capture_output=True)
    except subprocess.CalledProcessError as e:
        log(f"profile not made ({e})")
        return None
    return profile


# ---- the training set (run by the instrumented module) ----

# Simulated seconds each bundled scenario runs for; the engine's benchmark dumbbells run longer below.
CAP_S = 10.0
# The small dumbbell every algorithm and every queue discipline is trained on (bench/run.py's form).
SMALL = {"rate": "50Mbps", "buffer": "BDP", "groups": [(2, 40), (1, 80)]}


def capped(spec: dict, cap: float) -> dict:
    if spec["duration"] > cap:
        spec["duration"] = cap
        spec["measure"] = [min(spec["measure"][0], cap / 2), cap]
    return spec


def gym_episodes() -> int:
    """One episode of the Gymnasium environment per step kind (an interval, an ACK), seeded actions: the
    stepping path (`Stepper`, `Simulation::run_until`) is laid out as hot code too. 0 without gymnasium."""
    try:
        import numpy as np

        from cclab.gym import CongestionControlEnv
    except ImportError:
        log("  gym: not run (gymnasium is not installed)")
        return 0
    for step_on in ("interval", "ack"):
        env = CongestionControlEnv(step="10ms", step_on=step_on)
        rng = np.random.default_rng(1)
        env.reset(seed=1)
        for _ in range(2000):
            _, _, terminated, truncated, _ = env.step(rng.uniform(-1, 1, size=1).astype(np.float32))
            if terminated or truncated:
                break
    return 2


def training_specs() -> list[tuple[str, dict]]:
    """The training set's runs: (name, run spec), in order."""
    from cclab import _native
    from cclab.scenario import Scenario

    sys.path.insert(0, str(ROOT / "bench"))
    from run import SCENARIOS, toml_for  # type: ignore[import-not-found]  # bench/ is not a package

    texts = [(f"cc {cc}", toml_for(cc, dict(SMALL, cc=cc), 5.0)) for cc in _native.sender_names()]
    texts += [(f"queue {q}", toml_for(q, dict(SMALL, queue=q, cc="cubic"), 5.0)) for q in _native.queue_names()]
    texts += [(f"bench {name}", toml_for(name, SCENARIOS[name], secs))
              for name, secs in (("a", 20.0), ("b", 5.0), ("c", 10.0), ("b-bbr", 3.0), ("b-fq_codel", 3.0))]
    specs = [(path.stem, capped(Scenario.load(path).to_spec(seed=1), CAP_S))
             for path in sorted((ROOT / "python" / "cclab" / "scenarios").glob("*.toml"))]
    return specs + [(name, Scenario.from_toml(text).to_spec(seed=1)) for name, text in texts]


def train() -> int:
    from cclab import _native

    specs = training_specs()
    done = gym_episodes()
    for name, spec in specs:
        try:
            _native.run(json.dumps(spec), None)
            done += 1
        except ValueError as e:
            log(f"  {name}: not run ({str(e).splitlines()[0]})")
    log(f"  {done} of {len(specs) + 2} training runs done")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build cclab._native with a profile (the default of `make build`)")
    b.add_argument("--venv", type=Path, default=ROOT / ".venv")
    sub.add_parser("train", help="run the training set (in the venv, with the instrumented module)")
    args = ap.parse_args()
    return build(args.venv) if args.cmd == "build" else train()


if __name__ == "__main__":
    sys.exit(main())
