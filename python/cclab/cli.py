"""The command line: ``cclab run``, ``cclab validate``, ``cclab algorithms``, ``cclab reproduce``,
``cclab sweep``, ``cclab net run|check``.

Bad input prints one message per problem naming the field, and exits with code 2 (no traceback)."""
from __future__ import annotations

import functools
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

import click

from .scenario import Scenario, ScenarioError

if TYPE_CHECKING:
    import pandas as pd

    from .reproduce import Report

F = TypeVar("F", bound=Callable[..., Any])


def _fail(e: Exception) -> None:
    click.echo(f"error: {e}".replace("\n", "\nerror: "), err=True)
    sys.exit(2)


def _contract(f: F) -> F:
    """The error contract of every command (docs/scenario.md "Rejections"): bad input (a ScenarioError,
    whichever part of cclab raised it) prints one ``error:`` line per problem and exits with code 2;
    results that cannot be written exit with code 1; anything else is a bug in cclab, reported in one
    line (exit 1) instead of a traceback — ``CCLAB_DEBUG=1`` shows the traceback."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return f(*args, **kwargs)
        except ScenarioError as e:
            _fail(e)
        except OSError as e:
            if os.environ.get("CCLAB_DEBUG"):
                raise
            where = f" {e.filename!r}" if getattr(e, "filename", None) else ""
            click.echo(f"error: cannot write{where}: {e.strerror or e}", err=True)
            sys.exit(1)
        except MemoryError:
            click.echo("error: out of memory (docs/scenario.md \"Limits\")", err=True)
            sys.exit(1)
        except (KeyboardInterrupt, SystemExit, click.exceptions.Exit, click.ClickException):
            raise
        except Exception as e:
            if os.environ.get("CCLAB_DEBUG"):
                raise
            text = str(e)
            if not text.startswith("internal error"):
                text = f"internal error: {type(e).__name__}: {text} (a bug in cclab, please report it; " \
                       "CCLAB_DEBUG=1 shows the traceback)"
            click.echo(f"error: {text}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


def _default_out(name: str, suffix: str = "") -> Path:
    """``results/<name><suffix>``: a scenario's name is a plain name (checked when it was validated),
    so the folder is always inside results/ — checked once more here, as the folder is created from it."""
    out = Path("results") / f"{name}{suffix}"
    if out.resolve().parent != Path("results").resolve():
        raise ScenarioError([("name", f"{name!r} is not a plain name: it would write outside results/")])
    return out


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """cclab: simulate and compare congestion-control algorithms."""


@cli.command("run")
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "-o", type=click.Path(file_okay=False, path_type=Path), help="results folder [results/<name>]")
@click.option("--seed", type=int, default=None, help="override the scenario's seed")
@click.option("--trace-packets", is_flag=True, help="also write a per-packet event log (trace.parquet)")
@click.option("--no-plots", is_flag=True, help="skip the PNG plots")
@click.option("--quiet", "-q", is_flag=True, help="no progress bar")
@_contract
def run_cmd(scenario: Path, out: Optional[Path], seed: Optional[int], trace_packets: bool, no_plots: bool, quiet: bool) -> None:
    """Simulate SCENARIO (TOML) and write summary.json, timeseries.parquet and plots."""
    from .results import prepare_out
    from .runner import run

    sc = Scenario.load(scenario)
    if seed is not None and not 0 <= seed < 2**63:
        raise ScenarioError([("--seed", f"must be an integer in [0, 2^63), got {seed}")])
    sc.to_spec(seed=seed, trace_packets=trace_packets or None)  # bad input is refused before a folder is made
    out = out or _default_out(sc.name)
    prepare_out(out, "--out")
    try:
        res = run(sc, out, seed=seed, progress=not quiet, trace_packets=trace_packets or None, plots=not no_plots)
    except KeyboardInterrupt:
        # The simulator stops within ~0.25 s of Ctrl-C; nothing was written for this run.
        click.echo("interrupted: nothing written", err=True)
        sys.exit(130)
    _print_table(res.summary)
    click.echo(f"wrote {out}/summary.json, timeseries.parquet" + ("" if no_plots else ", rate.png, cwnd.png, queue.png"))


def _print_table(s: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{s['scenario']} (seed {s['seed']}, window {s['measure'][0]:g}–{s['measure'][1]:g} s)")
    for c in ("flows", "cc", "goodput Mbit/s", "Jain", "utilisation", "drops", "mean queue (pkts)", "sim wall s", "events/s"):
        t.add_column(c, justify="right")
    link = s["links"][0]
    ccs = ",".join(sorted(s["jain_by_cc"]))
    total = sum(f["goodput_bps"] for f in s["flows"]) / 1e6
    eps = s["sim"]["events"] / max(s["sim"]["wall_s"], 1e-9)
    t.add_row(str(len(s["flows"])), ccs, f"{total:.2f}", f"{s['jain']:.3f}", f"{link['utilization']:.3f}",
              str(link["drops"]), f"{link['mean_queue_pkts']:.1f}", f"{s['sim']['wall_s']:.2f}", f"{eps:.3g}")
    Console(width=150).print(t)
    for w in s.get("warnings", []):
        click.echo(f"warning: {w}", err=True)


@cli.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@_contract
def validate(scenario: Path) -> None:
    """Check SCENARIO without running it: exactly the checks `cclab run` makes before simulating (the
    scenario, the run spec, every algorithm and queue built, the budget). Prints the estimate."""
    sc = Scenario.load(scenario)
    est = sc.estimate()
    click.echo(f"{scenario}: ok ({len(sc.flows)} flow groups, {sc.topology.kind}; estimated "
               f"{est['memory'] / 2**20:,.0f} MiB of {est['max_memory'] / 2**20:,.0f} MiB, "
               f"{est['events']:.2g} of {est['max_events']:.2g} events)")


@cli.command()
def algorithms() -> None:
    """List every algorithm and queue discipline name."""
    from . import algorithms as algs, queues

    click.echo("algorithms: " + ", ".join(algs()))
    click.echo("queues: " + ", ".join(queues()))


@cli.command()
@click.argument("experiments", nargs=-1)
@click.option("--out", "-o", type=click.Path(file_okay=False, path_type=Path),
              help="results folder [results/reproduce]; one subfolder per experiment")
@click.option("--quick", is_flag=True, help="every run at a tenth of its duration (a first look; the claims are about full size)")
@_contract
def reproduce(experiments: tuple[str, ...], out: Optional[Path], quick: bool) -> None:
    """Run a paper's headline experiment and print its claims beside our measurements.

    EXPERIMENTS are ids from docs/experiments.md (F2, M2, B1, L4, L5, D2, D3) or `all`; none lists them.
    A claim that does not hold is a finding, not an error: the exit code is 0 once the runs are done."""
    from . import reproduce as rp

    exps = rp.experiments()
    if not experiments:
        for e in exps.values():
            click.echo(f"{e.id:3} {e.paper}: {e.title} ({len(e.variants)} variants x {len(e.seeds)} seeds; "
                       f"scenario {e.scenario})")
        return
    ids = list(exps) if [x.lower() for x in experiments] == ["all"] else [x.lower() for x in experiments]
    bad = [x for x in ids if x not in exps]
    if bad:
        _fail(ValueError(f"experiments: unknown {', '.join(bad)}; allowed: "
                         f"{', '.join(e.id for e in exps.values())} or all"))
        return
    out = out or Path("results") / "reproduce"
    for x in ids:
        where = out / exps[x].id
        try:
            rep = rp.reproduce(x, where, quick=quick, progress=lambda m: click.echo(f"running {m}", err=True))
        except KeyboardInterrupt:
            click.echo("interrupted: finished experiments are in " + str(out), err=True)
            sys.exit(130)
        _print_report(rep)
        click.echo(f"wrote {where}/reproduce.json and each run's results")


def _print_report(rep: Report) -> None:
    from rich.console import Console
    from rich.table import Table

    e = rep.experiment
    t = Table(title=f"{e.id} {e.paper}: {e.title}" + (" [QUICK: a tenth of the duration]" if rep.quick else ""),
              caption=e.notes, show_lines=True)
    for c, kw in (("claim", {"ratio": 3}), ("paper", {"ratio": 2}), ("measured (cclab)", {"ratio": 3}),
                  ("criterion", {"ratio": 2}), ("holds", {"justify": "center"})):
        t.add_column(c, **kw)
    for claim in rep.claims:
        t.add_row(claim.claim, claim.paper, claim.measured, claim.criterion,
                  {True: "[green]yes[/]", False: "[red]no[/]", None: "—"}[claim.holds])
    Console(width=160).print(t)


@cli.command()
@click.argument("sweep_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "-o", type=click.Path(file_okay=False, path_type=Path), help="results folder [results/<sweep file name>]")
@click.option("--workers", "-j", type=click.IntRange(min=1), default=None, help="local worker processes [CPU count]")
@click.option("--scheduler", default=None, help="a Dask scheduler address (tcp://host:8786) instead of local workers")
@click.option("--plots", is_flag=True, help="also write each run's PNG plots")
@click.option("--force", is_flag=True, help="run into --out even if it holds a different sweep")
@_contract
def sweep(sweep_file: Path, out: Optional[Path], workers: Optional[int], scheduler: Optional[str], plots: bool,
          force: bool) -> None:
    """Run SWEEP_FILE (a scenario over a grid of settings and seeds); resumes where it stopped.

    Writes runs/<id>/ per run and results.csv / results.parquet (one row per run); prints the mean over
    seeds of each grid point. Exit code 2: bad input, or --out holds a different sweep; 1: some runs failed
    (the others are kept); 130: Ctrl-C. See docs/sweep.md."""
    from rich.progress import Progress

    from . import sweep as sw

    out = out or _default_out(sweep_file.stem or "sweep")
    failed = None
    with Progress(transient=True) as bar:
        task = bar.add_task("sweep", total=None)
        try:
            t = sw.run(sweep_file, out, workers=workers, scheduler=scheduler, plots=plots, force=force,
                       on_done=lambda n, total: bar.update(task, completed=n, total=total))
        except sw.RunsFailed as e:  # the other runs are finished and in the table; exit 1 after it
            failed, t = e, e.table
        except ScenarioError as e:
            _fail(e)
            return
        except KeyboardInterrupt:
            click.echo(f"interrupted: {len(sw.finished(out))} finished runs kept in {out}; run the same command "
                       "to resume", err=True)
            sys.exit(130)
    _print_sweep(t)
    click.echo(f"wrote {out}/results.csv, results.parquet and runs/ ({len(t)} runs)" if len(t) else
               f"no finished runs: no results.csv in {out}")
    if failed:
        click.echo(f"error: {failed}", err=True)
        sys.exit(1)


def _print_sweep(t: pd.DataFrame) -> None:
    from rich.console import Console
    from rich.table import Table

    if t.empty:
        return
    names = list(t.columns)
    keys = names[1:names.index("seed")]  # the grid's columns: cclab.sweep.table puts them between run and seed
    cols = ["goodput_mbps", "jain", "utilization", "loss_rate", "mean_queue_pkts"]
    g = t.groupby(keys, dropna=False)[cols].mean().reset_index() if keys else t[cols].mean().to_frame().T
    n = t.groupby(keys, dropna=False).size().to_numpy() if keys else [len(t)]
    tab = Table(title="mean over seeds")
    for c in [*keys, "runs", *cols]:
        tab.add_column(c, justify="right")
    for (_, r), k in zip(g.iterrows(), n):
        tab.add_row(*[str(r[c]) for c in keys], str(k), *[f"{r[c]:.4g}" for c in cols])
    Console(width=160).print(tab)


@cli.group("net")
def net_group() -> None:
    """The real datapath: real sockets through a userspace link emulator (root; docs/real-datapath.md)."""


@net_group.command("run")
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "-o", type=click.Path(file_okay=False, path_type=Path), help="results folder [results/<name>-net]")
@click.option("--seed", type=int, default=None, help="override the scenario's seed")
@click.option("--no-plots", is_flag=True, help="skip the PNG plots")
@click.option("--quiet", "-q", is_flag=True, help="no progress bar")
@click.option("--loopback", is_flag=True,
              help="no root: our transport on 127.0.0.1 through the emulator as a UDP relay (no kernel TCP)")
@_contract
def net_run_cmd(scenario: Path, out: Optional[Path], seed: Optional[int], no_plots: bool, quiet: bool,
                loopback: bool) -> None:
    """Run SCENARIO (TOML) on the real datapath, in real time, and write the same summary.json,
    timeseries.parquet and plots as `cclab run`. Flows may use cc = "kernel:cubic|reno|bbr" (Linux TCP),
    except with --loopback (no namespaces, no root needed; docs/real-datapath.md, Loopback mode)."""
    from . import net
    from .results import prepare_out

    try:
        sc = Scenario.load(scenario, datapath="net")
        if seed is not None and not 0 <= seed < 2**63:
            raise ScenarioError([("--seed", f"must be an integer in [0, 2^63), got {seed}")])
        net.validate(sc, sc.to_spec(seed=seed, datapath="net"), loopback=loopback)  # before a folder is made
        out = out or _default_out(sc.name, "-net")
        prepare_out(out, "--out")
        res = net.run(sc, out, seed=seed, progress=not quiet, plots=not no_plots, loopback=loopback)
    except ScenarioError as e:
        _fail(e)
        return
    except net.NetUnavailable as e:
        click.echo(f"error: real datapath unavailable: {e}", err=True)
        sys.exit(2)
    except net.NetInterrupted as e:
        # Ctrl-C: 130; SIGTERM / SIGHUP: 128 + the signal, as a shell reports a process killed by it.
        how = "interrupted" if e.signum == signal.SIGINT else f"stopped by {signal.Signals(e.signum).name}"
        if e.result is not None:
            _print_net_table(e.result.summary)
            click.echo(f"{how}: partial result (net.interrupted = true) written to {out}", err=True)
        else:
            click.echo(f"{how}: the real run ended before it had a result; nothing written", err=True)
        sys.exit(128 + e.signum)
    except RuntimeError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    _print_net_table(res.summary)
    click.echo(f"wrote {out}/summary.json, timeseries.parquet" + ("" if no_plots else ", rate.png, cwnd.png, queue.png"))
    if res.summary["net"]["interrupted"]:
        # Stopped by a signal sent to cclab-net itself (SIGTERM): the result is partial.
        click.echo("interrupted: partial result (net.interrupted = true)", err=True)
        sys.exit(130)


@net_group.command("check")
def net_check_cmd() -> None:
    """Say whether real runs can happen here, and why not (exit 0 if available, 1 if not)."""
    from . import net

    ok, reason = net.check()
    click.echo(("available: " if ok else "unavailable: ") + reason)
    if not ok:
        click.echo("loopback mode (`cclab net run --loopback`: our transport on 127.0.0.1, no root) "
                   "needs only the cclab-net binary")
    sys.exit(0 if ok else 1)


def _print_net_table(s: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{s['scenario']} on the real datapath (seed {s['seed']}, window {s['measure'][0]:g}–{s['measure'][1]:g} s)")
    for c in ("flow", "cc", "RTT ms", "goodput Mbit/s", "mean RTT ms", "retransmits", "timeouts"):
        t.add_column(c, justify="right")
    for f in s["flows"]:
        t.add_row(str(f["id"]), f["cc"], f"{f['rtt'] * 1e3:g}", f"{f['goodput_bps'] / 1e6:.2f}",
                  f"{f['mean_rtt'] * 1e3:.1f}", str(f["retransmits"]), "–" if f["timeouts"] is None else str(f["timeouts"]))
    Console(width=150).print(t)
    link, emu = s["links"][0], s["net"]["emulator"]
    click.echo(f"Jain {s['jain']:.3f}, utilisation {link['utilization']:.3f}, drops {link['drops']}, "
               f"mean queue {link['mean_queue_pkts']:.1f} pkts; wall {s['net']['wall_s']:.2f} s, "
               f"emulator lateness mean {emu['late_mean_ns'] / 1e3:.0f} µs, p99 {emu['late_p99_ns'] / 1e3:.0f} µs"
               + ("" if emu.get("priority_raised") else " (priority not raised: as root, timing is exact on a busy machine)"))
    for w in s.get("warnings", []):
        click.echo(f"warning: {w}", err=True)


def main() -> None:
    cli(prog_name="cclab")


if __name__ == "__main__":
    main()
