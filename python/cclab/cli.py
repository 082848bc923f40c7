"""The command line: ``cclab run``, ``cclab validate``, ``cclab schema``, ``cclab algorithms``, ``cclab reproduce``,
``cclab sweep``, ``cclab search``, ``cclab plot`` (a sweep's figures), ``cclab compare`` (runs side by side),
``cclab net run|check``, ``cclab cluster local``, ``cclab daemon start|stop|status`` (a warm server).

Bad input prints one message per problem naming the field, and exits with code 2 (no traceback).

Why one file of ~930 lines (≈ 770 of code): it is the commands' declarations (arguments, options, help)
and the error contract they share (``_contract``, ``_Cli``); each command's work is in its own module
(runner, sweep, reproduce, search, net, compare, daemon_client), imported inside the command so that a
command pays only for its own imports. Splitting the declarations would scatter the one place that
lists what the command line accepts."""
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


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from .provenance import version_line

    click.echo(version_line())
    ctx.exit()


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
            if os.environ.get("CCLAB_DEBUG") == "1":
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
            if os.environ.get("CCLAB_DEBUG") == "1":
                raise
            text = str(e)
            if not text.startswith("internal error"):
                text = f"internal error: {type(e).__name__}: {text} (a bug in cclab, please report it; " \
                       "CCLAB_DEBUG=1 shows the traceback)"
            click.echo(f"error: {text}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


class _Cli(click.Group):
    """The ``cclab`` group: a usage error (missing argument, unknown option or command, bad value) is one
    ``error:`` line on stderr and exit code 2, like every other bad input (docs/scenario.md "Rejections"),
    instead of click's usage lines; ``--help`` is unchanged."""

    def main(self, args: Any = None, prog_name: Optional[str] = None, complete_var: Optional[str] = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as e:
            msg = e.format_message().replace("\n", " ")
            if not isinstance(e, _OutError) and e.ctx is not None:
                msg += f" (`{e.ctx.command_path} --help` lists what it takes)"
            click.echo(f"error: {msg}", err=True)
            sys.exit(2)
        except click.ClickException as e:
            click.echo(f"error: {e.format_message()}", err=True)
            sys.exit(e.exit_code)
        except click.Abort:  # click's form of a Ctrl-C that no command caught itself
            click.echo("interrupted", err=True)
            sys.exit(130)
        sys.exit(rv if isinstance(rv, int) else 0)


class _OutError(click.UsageError):
    """A bad ``--out``, said as ``error: --out: …`` (the form of every other field)."""


class _OutPath(click.Path):
    """``--out``: an empty path (it would be the current folder) and a path that is not UTF-8 (Parquet
    cannot write it, which used to fail after the run) are refused before anything runs."""

    def convert(self, value: Any, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> Any:
        from .results import out_problem

        if isinstance(value, (str, bytes)):
            why = out_problem(value)
            if why:
                name = max(param.opts, key=len) if param is not None else "--out"
                raise _OutError(f"{name}: {why}", ctx)
        return super().convert(value, param, ctx)


def _default_out(name: str, suffix: str = "") -> Path:
    """``results/<name><suffix>``: a scenario's name is a plain name (checked when it was validated),
    so the folder is always inside results/ — checked once more here, as the folder is created from it."""
    out = Path("results") / f"{name}{suffix}"
    if out.resolve().parent != Path("results").resolve():
        raise ScenarioError([("name", f"{name!r} is not a plain name: it would write outside results/")])
    return out


# The figures' format and style options, shared by the commands that draw a run's kind of figures.
_FORMAT = click.option("--format", "fmt", type=click.Choice(["png", "pdf", "svg"]), default="png", show_default=True,
                       help="the figures' file format")
_STYLE = click.option("--style", type=click.Choice(["screen", "paper", "paper2"]), default="screen", show_default=True,
                      help="screen: notes and title; paper / paper2: one (3.5 in) / two (7 in) columns, no notes")


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="print the cclab version (and git commit when run from a checkout) and exit")
def cli() -> None:
    """cclab: simulate and compare congestion-control algorithms."""


@cli.command("run")
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "-o", type=_OutPath(file_okay=False, path_type=Path), help="results folder [results/<name>]")
@click.option("--seed", type=int, default=None, help="override the scenario's seed")
@click.option("--trace-packets", is_flag=True, help="also write a per-packet event log (trace.parquet)")
@click.option("--no-plots", is_flag=True, help="skip the figures")
@_FORMAT
@_STYLE
@click.option("--quiet", "-q", is_flag=True, help="no progress bar")
@click.option("--verbose", "-v", is_flag=True, help="also print one row per flow")
@_contract
def run_cmd(scenario: Path, out: Optional[Path], seed: Optional[int], trace_packets: bool, no_plots: bool, fmt: str,
            style: str, quiet: bool, verbose: bool) -> None:
    """Simulate SCENARIO (TOML) and write summary.json, timeseries.parquet and plots."""
    from . import plotproc
    from .results import prepare_out
    from .runner import run

    if not no_plots:
        # The figures' process starts now, so that it imports matplotlib while this one validates and
        # simulates (python/cclab/plotproc.py); the run takes it.
        plotproc.prestart(fmt, style)
    try:
        sc = Scenario.load(scenario)
        if seed is not None and not 0 <= seed < 2**63:
            raise ScenarioError([("--seed", f"must be an integer in [0, 2^63), got {seed}")])
        sc.to_spec(seed=seed, trace_packets=trace_packets or None)  # bad input is refused before a folder is made
        out = out or _default_out(sc.name)
        prepare_out(out, "--out")
        res = run(sc, out, seed=seed, progress=not quiet, trace_packets=trace_packets or None, plots=not no_plots)
    except KeyboardInterrupt:
        # The simulator stops within ~0.25 s of Ctrl-C; nothing was written for this run.
        click.echo("interrupted: nothing written", err=True)
        sys.exit(130)
    finally:
        plotproc.cancel_untaken()  # started but not taken: the input was refused before the run
    _print_table(res.summary, verbose, res.spec)
    click.echo(f"wrote {out}/summary.json, timeseries.parquet, spec.json" + ("" if no_plots else "".join(
        f", {k}.{fmt}" for k in ("rate", "cwnd", "queue", "throughput_delay", "cdf"))))


def _num(x: Optional[float], fmt: str, scale: float = 1.0) -> str:
    return "–" if x is None else format(x * scale, fmt)


def _print_stats(s: dict, title: str, verbose: bool, reverse: frozenset[int] = frozenset()) -> None:
    """The run's table: one row per algorithm (flows, goodput, share of the total, Jain among that
    algorithm's flows, p95 RTT, loss and retransmission rates over the window) and an "all" row; with
    reverse-direction flows (``reverse``: their ids), the forward and the reverse flows in two blocks,
    each with its own total (`cclab.derived.direction_rows`). With ``verbose`` a second table, one row
    per flow (docs/scenario.md, "What cclab run prints"). Printed as rich prints it, without importing rich
    (python/cclab/texttable.py: ~45 ms of a run's start-up)."""
    from .derived import direction_rows
    from .texttable import Table, print_table

    t = Table(title=title)
    for c in ("cc", "flows", "goodput Mbit/s", "share", "Jain", "p95 RTT ms", "loss %", "retx %"):
        t.add_column(c, justify="right")
    rows: list[tuple[str, Optional[dict]]]
    if reverse:
        rows = list(direction_rows(s, set(reverse)))
        ends = {i for i, (label, _) in enumerate(rows) if label in ("forward", "reverse")}
        ends |= {i - 1 for i in ends}
    else:
        rows = [*s.get("by_cc", {}).items(), ("all", s.get("total"))]
        ends = {len(rows) - 2}
    for i, (cc, g) in enumerate(rows):
        if g is None:
            continue
        t.add_row(cc, str(g["flows"]), f"{g['goodput_bps'] / 1e6:.2f}", _num(g["share"], ".1%"), _num(g["jain"], ".3f"),
                  _num(g["p95_rtt_s"], ".1f", 1e3), _num(g["loss_rate"], ".3f", 100), _num(g["retransmit_rate"], ".3f", 100),
                  end_section=i in ends)
    print_table(t)
    if verbose:
        v = Table(title="per flow")
        for c in ("flow", "cc", "RTT group", "goodput Mbit/s", "p50 RTT ms", "p95 RTT ms", "p99 RTT ms", "loss %", "retx %"):
            v.add_column(c, justify="right")
        for f in s["flows"]:
            v.add_row(str(f["id"]), f["cc"], f"{f['group']} ({f['rtt'] * 1e3:g} ms)", f"{f['goodput_bps'] / 1e6:.2f}",
                      *(_num(f.get(k), ".1f", 1e3) for k in ("p50_rtt_s", "p95_rtt_s", "p99_rtt_s")),
                      _num(f.get("loss_rate"), ".3f", 100), _num(f.get("retransmit_rate"), ".3f", 100))
        print_table(v)


def _print_table(s: dict, verbose: bool = False, spec: Optional[dict] = None) -> None:
    from .derived import reverse_flows
    from .metrics import jain

    back = frozenset(reverse_flows(s, spec))
    _print_stats(s, f"{s['scenario']} (seed {s['seed']}, window {s['measure'][0]:g}–{s['measure'][1]:g} s)", verbose,
                 back)
    link = s["links"][0]
    eps = s["sim"]["events"] / max(s["sim"]["wall_s"], 1e-9)
    # With reverse flows, the headline Jain is the forward flows' (they share the forward links).
    j = jain([f["goodput_bps"] for f in s["flows"] if int(f["id"]) not in back]) if back else s["jain"]
    click.echo(f"Jain {j:.3f}{' (forward flows)' if back else ''}; link 0: utilisation {link['utilization']:.3f}, "
               f"drops {link['drops']}, "
               f"mean queue {link['mean_queue_pkts']:.1f} pkts; simulated in {s['sim']['wall_s']:.2f} s ({eps:.3g} events/s)")
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
def schema() -> None:
    """Print the scenario file's JSON Schema (from the scenario model)."""
    import json

    from .scenario import json_schema

    click.echo(json.dumps(json_schema(), indent=2, ensure_ascii=False))


@cli.command()
def algorithms() -> None:
    """List every algorithm, queue discipline and shipped capacity trace name."""
    from . import algorithms as algs, queues, traces

    click.echo("algorithms: " + ", ".join(algs()))
    click.echo("queues: " + ", ".join(queues()))
    click.echo("traces: " + ", ".join(traces.builtin()))


@cli.command()
@click.argument("experiments", nargs=-1)
@click.option("--out", "-o", type=_OutPath(file_okay=False, path_type=Path),
              help="results folder [results/reproduce]; one subfolder per experiment")
@click.option("--quick", is_flag=True, help="every run at a tenth of its duration (a first look; the claims are about full size)")
@click.option("--workers", "-j", type=click.IntRange(min=1), help="local worker processes [one per core]")
@click.option("--scheduler", help="run on a Dask cluster at this address (tcp://host:8786) instead")
@click.option("--seeds", "seeds_arg", help="the seeds to start from: a count (5 = seeds 1-5), a range (11-15) or a "
              "list (1,4,9) [each experiment's own]")
@click.option("--max-seeds", type=int, help="run batches of 5 more seeds while a row is inconclusive, up to this "
              "many seeds in all [30; L1 and L2: 10]; set it to the count of --seeds (--seeds 5 --max-seeds 5) to "
              "run exactly those seeds")
@_contract
def reproduce(experiments: tuple[str, ...], out: Optional[Path], quick: bool, workers: Optional[int],
              scheduler: Optional[str], seeds_arg: Optional[str], max_seeds: Optional[int]) -> None:
    """Run a paper's headline experiment and print its claims beside our measurements.

    EXPERIMENTS are ids from docs/experiments.md (F1-F4, M1-M8, B1-B9, L1-L6, D1-D7) or `all`; none lists
    them. `cclab report OUT` then builds the HTML report from what this wrote.
    A claim that does not hold is a finding, not an error: the exit code is 0 once the runs are done."""
    from . import executor, reproduce as rp

    executor.check_scheduler(scheduler)  # `--scheduler ""` would run on local workers without a word
    exps = rp.experiments()
    if not experiments:
        for e in exps.values():
            click.echo(f"{e.id:3} {e.paper}: {e.title} ({len(e.variants)} variants x {len(e.seeds)} seeds; "
                       f"scenario {e.scenario})")
        return
    ids = list(exps) if [x.lower() for x in experiments] == ["all"] else [x.lower() for x in experiments]
    bad = [x for x in ids if x not in exps]
    if bad:
        from .errors import did_you_mean
        from .units import escape_invisible  # an id holding a newline stays on its one error line

        hint = did_you_mean(bad[0].upper(), [e.id for e in exps.values()]) if len(bad) == 1 else ""
        _fail(ValueError(f"experiments: unknown {escape_invisible(', '.join(bad))}{hint}; allowed: "
                         f"{', '.join(e.id for e in exps.values())} or all"))
        return
    seeds = _parse_seeds(seeds_arg) if seeds_arg is not None else None
    if max_seeds is not None and max_seeds < (len(seeds) if seeds else 1):
        _fail(ValueError(f"--max-seeds: {max_seeds} is fewer than the seeds asked for; allowed: at least "
                         f"{len(seeds) if seeds else 1}"))
        return
    out = out or Path("results") / "reproduce"
    from rich.progress import Progress

    # Every run of every experiment first, on all cores (or a Dask cluster), like a sweep; then each
    # experiment loads its runs and judges its claims.
    try:
        with Progress(transient=True) as bar:
            task = bar.add_task("runs", total=None)
            reports = rp.run_many(ids, out, quick=quick, workers=workers, scheduler=scheduler, seeds=seeds,
                                  max_seeds=max_seeds, grow_chosen=True,
                                  on_done=lambda n, total: bar.update(task, completed=n, total=total))
    except KeyboardInterrupt:
        click.echo(f"interrupted: finished runs are kept in {out}; the same command resumes", err=True)
        sys.exit(130)
    except rp.RunsFailed as e:  # the other runs are finished and kept; the same command retries these
        click.echo(f"error: {e}".replace("\n", "\nerror: "), err=True)
        sys.exit(1)
    for x in ids:
        _print_report(reports[x])
        click.echo(f"wrote {out / exps[x].id}/reproduce.json and each run's results")


def _parse_seeds(text: str) -> tuple[int, ...]:
    """``--seeds``: a count ("5": seeds 1-5), a range ("11-15") or a list ("1,4,9"); seeds are integers
    from 0 to 2**32 - 1 (the scenario's ``seed``), each at most once."""
    t = text.strip()
    allowed = "allowed: a count (5), a range (11-15) or a comma-separated list (1,4,9) of seeds 0-4294967295"
    try:
        if "," in t:
            seeds = tuple(int(x) for x in t.split(","))
        elif "-" in t[1:]:
            a, b = t.split("-", 1)
            lo, hi = int(a), int(b)
            if hi < lo:
                raise ValueError
            seeds = tuple(range(lo, hi + 1))
        else:
            n = int(t)
            if n < 1:
                raise ValueError
            seeds = tuple(range(1, n + 1))
    except ValueError:
        raise ScenarioError([("--seeds", f"{text!r} is not a seed set; {allowed}")]) from None
    if any(s < 0 or s > 2**32 - 1 for s in seeds) or len(set(seeds)) != len(seeds):
        raise ScenarioError([("--seeds", f"{text!r}: seeds must be distinct and within 0-4294967295; {allowed}")])
    return seeds


@cli.command()
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", "-o", type=_OutPath(dir_okay=False, path_type=Path),
              help="the HTML file [FOLDER/report.html]")
@click.option("--markdown", "markdown_doc", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="also rewrite the results section of this Markdown file (docs/reproduce.md) from the same data")
@_contract
def report(folder: Path, out: Optional[Path], markdown_doc: Optional[Path]) -> None:
    """Build one self-contained HTML page (figures embedded; opens from disk) from the reproduce.json files
    `cclab reproduce --out FOLDER` wrote, without rerunning anything."""
    from .files import check_output_file, write_text
    from .reproduce import report as rr

    out = check_output_file(out or folder / "report.html", "--out")  # before any work: a FIFO, a folder, …
    try:
        page = rr.build_html(folder, progress=lambda m: click.echo(m, err=True))
    except FileNotFoundError as e:
        _fail(ValueError(f"folder: {e}"))
        return
    write_text(out, page, "--out")
    click.echo(f"wrote {out} ({len(page) / 1e6:.1f} MB)")
    if markdown_doc is not None:
        try:
            rr.write_markdown(folder, markdown_doc)
        except ValueError as e:
            _fail(ValueError(f"markdown: {e}"))
            return
        click.echo(f"rewrote the results section of {markdown_doc}")


def _print_report(rep: Report) -> None:
    from dataclasses import asdict

    from rich.console import Console
    from rich.table import Table

    from .reproduce.markdown import verdict_text

    e = rep.experiment
    t = Table(title=f"{e.id} {e.paper}: {e.title}" + (" [QUICK: a tenth of the duration]" if rep.quick else ""),
              caption=e.notes, show_lines=True)
    for c, kw in (("claim", {"ratio": 3}), ("paper", {"ratio": 2}), ("measured (cclab)", {"ratio": 3}),
                  ("criterion", {"ratio": 2}), ("verdict", {"justify": "center"})):
        t.add_column(c, **kw)
    for claim in rep.claims:
        verdict = verdict_text(asdict(claim), {"holds": "[green]yes[/]", "does not hold": "[red]no[/]",
                                               "inconclusive": "[yellow]inconclusive[/]", "reported": "—"})
        t.add_row(claim.claim, claim.paper, claim.measured, claim.criterion, verdict)
    Console(width=160).print(t)


@cli.command()
@click.argument("sweep_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "-o", type=_OutPath(file_okay=False, path_type=Path), help="results folder [results/<sweep file name>]")
@click.option("--workers", "-j", type=click.IntRange(min=1), default=None, help="local worker processes [CPU count]")
@click.option("--scheduler", default=None, help="a Dask scheduler address (tcp://host:8786) instead of local workers")
@click.option("--plots", is_flag=True, help="also write each run's PNG plots")
@click.option("--force", is_flag=True, help="run into --out even if it holds a different sweep")
@click.option("--plot", "plot", is_flag=True,
              help="then draw the sweep: goodput vs the first grid key (mean, 95 %% CI) and throughput vs delay")
@_contract
def sweep(sweep_file: Path, out: Optional[Path], workers: Optional[int], scheduler: Optional[str], plots: bool,
          force: bool, plot: bool) -> None:
    """Run SWEEP_FILE (a scenario over a grid of settings and seeds); resumes where it stopped.

    Writes runs/<id>/ per run, results.csv / results.parquet (one row per run) and summary.csv (per grid
    point: mean, std, n, 95 % CI half-width over seeds); prints the mean ± CI of each grid point. With
    --plot, also the figures of `cclab plot` (default settings). Exit code 2: bad input, or --out holds a
    different sweep; 1: some runs failed (the others are kept); 130: Ctrl-C. See docs/sweep.md."""
    from rich.progress import Progress

    from . import sweep as sw

    out = out or _default_out(sweep_file.stem or "sweep")
    failed = None
    with Progress(transient=True) as bar:
        task = bar.add_task("sweep", total=None)
        try:
            t = sw.run(sweep_file, out, workers=workers, scheduler=scheduler, plots=plots, force=force,
                       on_done=lambda n, total: bar.update(task, completed=n, total=total),
                       on_note=lambda m: bar.console.print(f"note: {m}", highlight=False, soft_wrap=True))
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
    click.echo(f"wrote {out}/results.csv, results.parquet, summary.csv and runs/ ({len(t)} runs)" if len(t) else
               f"no finished runs: no results.csv in {out}")
    if plot and len(t):
        from .plots.sweep import write_sweep_plots

        try:
            paths = write_sweep_plots(out)
        except ScenarioError as e:
            _fail(e)
            return
        click.echo("wrote " + ", ".join(str(p) for p in paths))
    if failed:
        click.echo(f"error: {failed}", err=True)
        sys.exit(1)


def _print_sweep(t: pd.DataFrame) -> None:
    from rich.console import Console
    from rich.table import Table

    from . import sweep as sw

    if t.empty:
        return
    s = sw.summarize(t)
    keys = [k for k in sw.grid_keys(t) if sw.labels(t, k).nunique(dropna=False) > 1]  # the grid keys that vary
    cols = [("goodput_mbps", "forward goodput Mbit/s", 1.0), ("jain", "Jain", 1.0), ("utilization", "utilisation", 1.0),
            ("loss_rate", "loss rate", 1.0), ("mean_queue_pkts", "mean queue pkts", 1.0),
            ("p95_queue_delay_s", "p95 queue delay ms", 1e3)]
    # Reverse-direction flows are not in the goodput column (the forward flows'): their own total follows.
    cols[1:1] = [("goodput_mbps_reverse", "reverse goodput Mbit/s", 1.0)] if "goodput_mbps_reverse" in t else []
    cols += [(m, m, 1.0) for m in t.attrs.get("derived", [])]  # the sweep file's [[metrics]]
    tab = Table(title="mean ± 95 % CI half-width over seeds (Student t; std in summary.csv)")
    for c in keys:
        tab.add_column(c, justify="right", overflow="fold")
    for c in ["seeds", *(name for _, name, _ in cols)]:
        tab.add_column(c, justify="right", no_wrap=True)
    for _, r in s.iterrows():
        cells = [str(r.get(k + sw.LABEL, r[k])) for k in keys] + [str(r["n"])]
        for m, _, scale in cols:
            mean, ci = r[f"{m}_mean"] * scale, r[f"{m}_ci95"] * scale
            cells.append(f"{mean:.4g}" + ("" if ci != ci else f" ± {ci:.2g}"))
        tab.add_row(*cells)
    Console(width=200).print(tab)


@cli.command("plot")
@click.argument("sweep_dir", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.argument("settings", nargs=-1, metavar="[x=KEY] [y=METRIC] [hue=KEY]")
@click.option("--out", "-o", "file", type=_OutPath(path_type=Path),
              help="the y-vs-x figure [SWEEP_DIR/<y>_vs_<x>.png]; the throughput-delay one goes beside it. "
                   "For a run's folder: the folder to write its figures into [the run's folder]")
@click.option("--format", "fmt", type=click.Choice(["png", "pdf", "svg"]), default=None,
              help="a run's figures: file format [png]")
@click.option("--style", type=click.Choice(["screen", "paper", "paper2"]), default=None,
              help="a run's figures: screen, or paper / paper2 for one / two columns [screen]")
@_contract
def plot_cmd(sweep_dir: Path, settings: tuple[str, ...], file: Optional[Path], fmt: Optional[str],
             style: Optional[str]) -> None:
    """Redraw a run's figures (a `cclab run` folder, with --format/--style), or draw a sweep: METRIC
    (default goodput_mbps) against grid key KEY, mean over seeds with 95 % CI error bars, one line per
    hue value; and throughput vs delay across seeds (one 1-σ ellipse per grid point, coloured by algorithm
    or hue, delay axis reversed). Keys are the grid's as in the sweep file
    (x=topology.bottleneck.rate), metrics the columns of results.csv. See docs/sweep.md, "Plots"."""
    if (sweep_dir / "summary.json").is_file():  # a run's folder, not a sweep's
        if settings:
            _fail(ValueError(f"{settings[0]!r}: x=, y= and hue= are a sweep's; {sweep_dir} is a run's folder"))
            return
        from .plots import write_plots
        from .results import Result

        if file is not None and file.exists() and not file.is_dir():
            _fail(ValueError(f"--out: {file} is a file; for a run's folder give the folder to write the figures into"))
            return
        res = Result.load(sweep_dir)
        paths = write_plots(res.flows, res.links, res.summary, file or sweep_dir, res.spec, format=fmt or "png",
                            style=style)
        click.echo("wrote " + ", ".join(str(p) for p in paths))
        return
    if fmt is not None or style is not None:
        _fail(ValueError("--format and --style redraw a run's folder; a sweep's format follows --out's suffix"))
        return
    kw: dict[str, str] = {}
    for s in settings:
        k, eq, v = s.partition("=")
        if not eq or k not in ("x", "y", "hue") or not v:
            _fail(ValueError(f"{s!r}: give x=KEY, y=METRIC or hue=KEY"))
            return
        kw[k] = v
    try:
        from .plots.sweep import write_sweep_plots

        paths = write_sweep_plots(sweep_dir, x=kw.get("x"), y=kw.get("y", "goodput_mbps"), hue=kw.get("hue"),
                                  file=file)
    except ScenarioError as e:
        _fail(ScenarioError([("--out" if f == "file" else f, m) for f, m in e.errors]))
        return
    click.echo("wrote " + ", ".join(str(p) for p in paths))


@cli.command("compare")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--label", "-l", "labels", multiple=True, metavar="NAME",
              help="a RUN's name in the legends and the table, once per RUN in order [each folder's name]")
@click.option("--out", "-o", type=_OutPath(file_okay=False, path_type=Path),
              help="folder for table.csv, table.json and the figures [results/compare]")
@_FORMAT
@_STYLE
@_contract
def compare_cmd(runs: tuple[Path, ...], labels: tuple[str, ...], out: Optional[Path], fmt: str, style: str) -> None:
    """Overlay RUNs (folders of cclab run, cclab net run [--repeat], or a sweep) in one set of figures (rate,
    cwnd, queue, throughput CDF, throughput vs delay) and one table: per run and flow group the mean over
    flows with its 95 % CI, and over the runs that share a label (Student t). See docs/plots.md."""
    from . import compare as cmp

    t, paths = cmp.compare(list(runs), out or Path("results") / "compare", list(labels), fmt, style)
    cmp.print_table(t)
    click.echo("wrote " + ", ".join(str(p) for p in paths))


@cli.group("net")
def net_group() -> None:
    """The real datapath: real sockets through a userspace link emulator (root; docs/real-datapath.md)."""


@net_group.command("run")
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "-o", type=_OutPath(file_okay=False, path_type=Path), help="results folder [results/<name>-net]")
@click.option("--seed", type=int, default=None, help="override the scenario's seed")
@click.option("--no-plots", is_flag=True, help="skip the PNG plots")
@click.option("--quiet", "-q", is_flag=True, help="no progress bar")
@click.option("--loopback", is_flag=True,
              help="no root: our transport on 127.0.0.1 through the emulator as a UDP relay (no kernel TCP)")
@click.option("--verbose", "-v", is_flag=True, help="also print one row per flow")
@click.option("--repeat", type=click.IntRange(min=1, max=1000), default=1, show_default=True,
              help="N real runs one after another, into OUT/rep-<i>/, aggregated as `cclab compare` does into OUT")
@_contract
def net_run_cmd(scenario: Path, out: Optional[Path], seed: Optional[int], no_plots: bool, quiet: bool,
                loopback: bool, verbose: bool, repeat: int) -> None:
    """Run SCENARIO (TOML) on the real datapath, in real time, and write the same summary.json,
    timeseries.parquet and plots as `cclab run`. Flows may use cc = "kernel:cubic|reno|bbr" (Linux TCP) and
    cc = "bpf:<algorithm>" (Linux TCP steered by ours; docs/kernel-datapath.md), except with --loopback (no
    namespaces, no root needed; docs/real-datapath.md, Loopback mode)."""
    from . import net
    from .results import prepare_out

    try:
        sc = Scenario.load(scenario, datapath="net")
        if seed is not None and not 0 <= seed < 2**63:
            raise ScenarioError([("--seed", f"must be an integer in [0, 2^63), got {seed}")])
        # What the real datapath cannot run is refused before the results folder is created.
        net.validate(sc, sc.to_spec(seed=seed, datapath="net"), loopback=loopback)
        out = out or _default_out(sc.name, "-net")
        prepare_out(out, "--out")
        if repeat > 1:
            _net_repeat(sc, out, seed, no_plots, quiet, loopback, repeat)
            return
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
            _print_net_table(e.result.summary, verbose, e.result.spec)
            click.echo(f"{how}: partial result (net.interrupted = true) written to {out}", err=True)
        else:
            click.echo(f"{how}: the real run ended before it had a result; nothing written", err=True)
        sys.exit(128 + e.signum)
    except RuntimeError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    _print_net_table(res.summary, verbose, res.spec)
    click.echo(f"wrote {out}/summary.json, timeseries.parquet" + ("" if no_plots else ", rate.png, cwnd.png, queue.png"))
    if res.summary["net"]["interrupted"]:
        # Stopped by a signal sent to cclab-net itself (SIGTERM): the result is partial.
        click.echo("interrupted: partial result (net.interrupted = true)", err=True)
        sys.exit(130)


def _net_repeat(sc: Scenario, out: Path, seed: Optional[int], no_plots: bool, quiet: bool, loopback: bool,
                repeat: int) -> None:
    """``cclab net run --repeat N``: N real runs of the same scenario and seed into OUT/rep-<i>/, one after
    another (a real run has the machine to itself), then their table and figures as `cclab compare OUT`
    writes them. Exceptions are the caller's (the same handling as one real run)."""
    import shutil

    from . import compare as cmp, net
    from .derived import reverse_flows

    # OUT holds the repeated runs: an earlier single run's files or more rep-<i>/ of an earlier, longer
    # repetition would be taken for part of this one by `cclab compare OUT`.
    stale = [d for d in cmp.repeats(out) if int(d.name[4:]) > repeat]
    stale += [out / n for n in ("summary.json", "timeseries.parquet", "spec.json", "trace.parquet") if (out / n).exists()]
    for d in stale:
        shutil.rmtree(d) if d.is_dir() else d.unlink()
    if stale:
        click.echo(f"note: removed from {out}: " + ", ".join(d.name for d in stale), err=True)
    from .results import prepare_out

    for i in range(1, repeat + 1):  # every rep-<i>/ can be written before the first real run takes its time
        prepare_out(out / f"rep-{i}", "--out")
    cmp.check_out(out)  # and so can the aggregate's table and figures
    reps = []
    for i in range(1, repeat + 1):
        rep = out / f"rep-{i}"
        res = net.run(sc, rep, seed=seed, progress=not quiet, plots=not no_plots, loopback=loopback)
        s, back = res.summary, reverse_flows(res.summary, res.spec)
        fwd = sum(f["goodput_bps"] or 0 for f in s["flows"] if f["id"] not in back)
        click.echo(f"run {i}/{repeat}: forward goodput {fwd / 1e6:.2f} Mbit/s, "
                   f"Jain {s['jain']:.3f}, utilisation {s['links'][0]['utilization']:.3f} -> {rep}")
        if s["net"]["interrupted"]:
            click.echo(f"interrupted: partial result (net.interrupted = true) in {rep}; no aggregate", err=True)
            sys.exit(130)
        reps.append(rep)
    t, paths = cmp.write(cmp.collect(reps, [sc.name] * repeat), out, figures=not no_plots)
    cmp.print_table(t)
    click.echo("wrote " + ", ".join(str(p) for p in paths) + f" and rep-1 … rep-{repeat}/")


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


@cli.group("bpf")
def bpf_group() -> None:
    """The kernel datapath: our algorithms inside Linux TCP (root, Linux 6.4+; docs/kernel-datapath.md)."""


_PASSTHROUGH = {"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []}


@bpf_group.command("serve", context_settings=_PASSTHROUGH)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def bpf_serve_cmd(args: tuple[str, ...]) -> None:
    """cclab bpf serve ALGORITHM [--name NAME] [--param KEY=VALUE]... [--packet-size B] [--initial-cwnd N]
    [--seed N] [--hystart true|false] [--stale-ms MS] [--ring-kb KB] [--kernel-stats]

    Make ALGORITHM selectable as TCP congestion control "cclab_ALGORITHM" (or NAME) by any program on this
    machine (iperf3 -C cclab_fast) until Ctrl-C; then print the controller's statistics as JSON. Runs the
    cclab-bpf binary with these arguments (exit 2: bad arguments, 1: the kernel refused)."""
    _exec_bpf(["serve", *args])


@bpf_group.command("leftovers")
def bpf_leftovers_cmd() -> None:
    """Print, as JSON, what of the kernel datapath is alive: our BPF maps and registered cclab* names."""
    _exec_bpf(["leftovers"])


def _exec_bpf(argv: list[str]) -> None:
    from .bpf import find_binary

    b = find_binary()
    if b is None:
        click.echo("error: the cclab-bpf binary was not found (looked at $CCLAB_BPF_BIN, PATH, beside this "
                   "Python, target/release); build it with `make build`", err=True)
        sys.exit(2)
    # Replaced by the binary: its signals, output and exit code are the command's.
    os.execv(b, [b, *argv])


def _print_net_table(s: dict, verbose: bool = False, spec: Optional[dict] = None) -> None:
    from .derived import reverse_flows

    _print_stats(s, f"{s['scenario']} on the real datapath (seed {s['seed']}, window {s['measure'][0]:g}–{s['measure'][1]:g} s)",
                 verbose, frozenset(reverse_flows(s, spec)))
    link, emu = s["links"][0], s["net"]["emulator"]
    click.echo(f"Jain {s['jain']:.3f}, utilisation {link['utilization']:.3f}, drops {link['drops']}, "
               f"mean queue {link['mean_queue_pkts']:.1f} pkts; wall {s['net']['wall_s']:.2f} s, "
               # over the window, what the results come from (older results have only the whole run's)
               f"emulator lateness mean {emu.get('window_late_mean_ns', emu['late_mean_ns']) / 1e3:.0f} µs, "
               f"p99 {emu.get('window_late_p99_ns', emu['late_p99_ns']) / 1e3:.0f} µs"
               + ("" if emu.get("priority_raised") else " (priority not raised: as root, timing is exact on a busy machine)"))
    for w in s.get("warnings", []):
        click.echo(f"warning: {w}", err=True)


@cli.group()
def cluster() -> None:
    """Dask clusters for `cclab sweep --scheduler` and `cclab reproduce --scheduler` (docs/sweep.md)."""


@cluster.command("local")
@click.option("--workers", "-n", type=click.IntRange(min=1), default=None, help="worker processes [CPU count]")
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True,
              help="threads per worker (a run is single-threaded: one per process uses every core)")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="address the scheduler listens on (0.0.0.0: drivers on other machines may connect)")
@click.option("--port", type=click.IntRange(min=0, max=65535), default=8786, show_default=True,
              help="scheduler port (0: any free port)")
@click.option("--dashboard", "dashboard", default=None, metavar="ADDRESS",
              help="serve Dask's dashboard there (e.g. :8787; needs bokeh) [off]")
@_contract
def cluster_local(workers: Optional[int], threads: int, host: str, port: int, dashboard: Optional[str]) -> None:
    """Start a Dask cluster on this machine: a scheduler and N worker processes; prints the address to pass as
    --scheduler, and runs until Ctrl-C (or SIGTERM), which stops it. Workers share nothing with the driver:
    each run's files come back to the sweep or reproduction that launched it."""
    import time

    try:
        from dask.distributed import LocalCluster
    except ImportError:
        raise ScenarioError([("cluster", "needs Dask: pip install \"dask[distributed]\"")]) from None
    n = workers or os.cpu_count() or 1
    # SIGTERM (systemd, kill, a job scheduler) stops the cluster as Ctrl-C does: workers are not orphaned.
    def _stop(*_: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)
    # The workers are started ignoring Ctrl-C (a terminal sends it to the whole process group; an ignored
    # signal stays ignored in a child): this process stops them in order instead of each one dying with a
    # traceback. Then Ctrl-C is this process's, even when started in the background of a script (a shell makes
    # such a job ignore SIGINT).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        c = LocalCluster(n_workers=n, threads_per_worker=threads, processes=True, host=host, scheduler_port=port,
                         dashboard_address=dashboard)
    except (OSError, RuntimeError) as e:  # the port in use, an address not of this machine
        import errno

        root: BaseException = e  # Dask wraps the socket's error ("Cluster failed to start") in RuntimeErrors
        while (root.__cause__ or root.__context__) is not None and not isinstance(root, OSError):
            root = root.__cause__ or root.__context__  # type: ignore[assignment]
        in_use = isinstance(root, OSError) and root.errno == errno.EADDRINUSE
        raise ScenarioError([("--port" if in_use else "--host",
                              f"cannot start a scheduler at {host}:{port}: {root}")]) from None
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        click.echo(f"Dask scheduler at {c.scheduler_address} with {n} worker{'s' if n > 1 else ''} ({threads} "
                   f"thread{'s' if threads > 1 else ''} each)")
        click.echo(f"  cclab sweep FILE --scheduler {c.scheduler_address}")
        click.echo(f"  cclab reproduce ID --scheduler {c.scheduler_address}")
        click.echo("Ctrl-C stops it.")
        sys.stdout.flush()
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        click.echo("stopping the cluster", err=True)
    finally:
        c.close()


@cli.command("search")
@click.argument("search_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "-o", type=_OutPath(file_okay=False, path_type=Path), help="results folder [results/<search file name>]")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="override the base scenario (the sweep's keys: flows[0].cc=cubic); repeatable")
@click.option("--workers", "-j", type=click.IntRange(min=1), default=None, help="local worker processes [CPU count]")
@click.option("--scheduler", default=None, help="a Dask scheduler address (tcp://host:8786) instead of local workers")
@click.option("--confirm", type=click.Choice(["real", "kernel"]), default=None,
              help="re-run the top candidates on the real datapath (real: our transport; kernel: Linux TCP)")
@click.option("--confirm-top", type=click.IntRange(min=1, max=100), default=3, show_default=True,
              help="candidates to confirm")
@click.option("--confirm-repeats", type=click.IntRange(min=2, max=100), default=3, show_default=True,
              help="runs per candidate in each of sim and real (seeds seed, seed+1, ...)")
@click.option("--no-figures", is_flag=True, help="skip the best candidate's full run and figures (OUT/best/)")
@_contract
def search_cmd(search_file: Path, out: Optional[Path], sets: tuple[str, ...], workers: Optional[int],
               scheduler: Optional[str], confirm: Optional[str], confirm_top: int, confirm_repeats: int,
               no_figures: bool) -> None:
    """Search for the adversary (bursts, loss, delay within a budget) that does the most harm; resumes where it
    stopped. Writes best.toml, top.csv, convergence.png and <method>/evaluations.jsonl. See docs/search.md."""
    from rich.progress import Progress

    from . import search as se

    out = out or _default_out(search_file.stem or "search")
    try:
        parsed = [se.parse_set(x) for x in sets]
        total = se.expected_runs(se.load(search_file, parsed))
        with Progress(transient=True) as bar:
            task = bar.add_task("search", total=total)
            r = se.run(search_file, out, parsed, workers=workers, on_run=lambda: bar.advance(task),
                       scheduler=scheduler, figures=not no_figures)
        se.print_result(r, out)
        if confirm:
            from . import net
            from .search import confirm as sc

            try:
                c = sc.confirm(r["search"], r["top"], out, confirm, confirm_top, confirm_repeats, workers or 1,
                               on_run=lambda what: click.echo(f"confirm ({confirm}): {what}", err=True))
            except net.NetUnavailable as e:
                click.echo(f"error: --confirm {confirm}: real datapath unavailable: {e}", err=True)
                sys.exit(2)
            click.echo(sc.markdown(c))
            click.echo(f"wrote {out}/confirm-{confirm}.json, confirm-{confirm}.md, confirm-{confirm}/")
    except ScenarioError as e:
        _fail(e)
        return
    except (se.RunFailed, RuntimeError) as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo(f"interrupted: finished runs are kept in {out}/runs; run the same command to resume", err=True)
        sys.exit(130)


@cli.group("daemon")
def daemon_grp() -> None:
    """A warm server that runs later cclab commands without Python's start-up (docs/performance.md)."""


@daemon_grp.command("start")
@click.option("--idle", type=click.FloatRange(min=1), default=3600, show_default=True,
              help="seconds without a command after which it stops")
@_contract
def daemon_start(idle: float) -> None:
    """Start the server for this installation in the background (if none runs) and wait until it is warm."""
    from . import daemon_client

    try:
        pid, sock = daemon_client.start(idle)
    except RuntimeError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    click.echo(f"cclab server {pid} ready at {sock}; later cclab commands run in it (CCLAB_DAEMON=0: not) "
               f"until `cclab daemon stop` or {idle:g} s without a command")


@daemon_grp.command("stop")
@click.option("--all", "all_", is_flag=True, help="also servers of other installations or versions")
def daemon_stop(all_: bool) -> None:
    """Stop the server (commands it is running finish)."""
    from . import daemon_client

    pids = daemon_client.stop(all_)
    click.echo(f"stopped {', '.join(map(str, pids))}" if pids else "no server to stop")


@daemon_grp.command("status")
def daemon_status() -> None:
    """List this user's servers; exit 0 if one serves this installation, 1 if not."""
    from . import daemon_client

    found = daemon_client.servers()
    for pid, sock, mine in found:
        click.echo(f"{pid} {sock}{' (this installation)' if mine else ' (another installation or version)'}")
    if not any(mine for *_, mine in found):
        click.echo("no server for this installation (`cclab daemon start`)")
        sys.exit(1)


def main() -> None:
    cli(prog_name="cclab")


if __name__ == "__main__":
    main()
