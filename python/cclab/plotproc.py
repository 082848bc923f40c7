"""A run's figures drawn in a second process, started when the command starts (docs/performance.md, "Start-up").

Why a process: importing matplotlib (~0.6 s on this 2-core machine on a slow day) and drawing five figures
(~0.35 s, ~1.1 s with 30 flows) are both bound to the GIL, so a thread gains nothing, while the machine has
a second core. The worker (``python -c "from cclab.plotproc import main; main()"``) is started by the
``cclab`` command before it imports its own modules (python/cclab/launch.py; by :func:`prestart` when the
command line is not the entry point) and imports them while this process validates the scenario and
simulates; once timeseries.parquet is written it is handed the summary and the spec, reads the tables back
from the file as NumPy columns (the rows and values :meth:`cclab.results.Result.load` reads, without
importing pandas: python/cclab/plots/_table.py) and writes the
figures while this process writes the rest. On a machine with two cores or more it then forks, and the two
draw half of the figures each (:data:`HALVES`): by then this process has written its files and waits, so
the drawing is all that is left of the run, and a fork shares the imports instead of paying them twice.
:meth:`Worker.finish` waits for it before summary.json, the run's last file, is written: the figures are
there when the run returns. A worker that could not start or failed leaves the figures to this process (a
bug in the plots then raises here, with its traceback), a forked half that failed leaves its figures to
the worker, and a machine without a core to spare draws them here (:func:`use_process`).
"""
from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import IO, TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from .results import Result

_CODE = "import sys; sys.path.insert(0, sys.argv[1]); from cclab.plotproc import main; main()"
# One worker started ahead of the run by the command line (it knows before validating that it will plot),
# taken by the run (runner._simulate); None when nobody started one.
_READY: Optional[Worker] = None
# The two halves of the figures when the worker forks: the 30-flow example's five figures took (CPU s,
# 2026-11-29) rate 0.17, cwnd 0.15, queue 0.19-0.28, throughput_delay 0.13, cdf 0.20, so the halves are
# within ~10 % of each other.
HALVES = (("rate.png", "cwnd.png", "throughput_delay.png"), ("queue.png", "cdf.png"))


class Worker:
    """A started plot worker: :meth:`submit` the run, then :meth:`finish`; :meth:`cancel` if the run failed."""

    def __init__(self, format: str = "png", style: str = "screen"):
        self.format, self.style = format, style
        self._err = tempfile.TemporaryFile()
        self._proc: Optional[subprocess.Popen] = None
        self._job: Optional[tuple] = None
        if not use_process():
            # No core to spare: the figures are drawn here (finish), matplotlib imported meanwhile by a
            # thread while the GIL-free simulation runs, as before the process existed.
            threading.Thread(target=importlib.import_module, args=("cclab.plots",), daemon=True).start()
            return
        if "cclab.plots" in sys.modules and hasattr(os, "fork"):
            # The figures' modules are imported already (a runner of the warm server, python/cclab/daemon.py):
            # a fork of this process is a worker with nothing left to import.
            try:
                self._proc = _Forked(self._err)  # type: ignore[assignment]
            except OSError:
                self._proc = None
            return
        root = str(Path(__file__).resolve().parents[1])  # the folder holding this cclab package
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", _CODE, root], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                stderr=self._err)
        except OSError:
            self._proc = None

    def submit(self, res: Result, out: Path) -> None:
        """Hands the worker the run ``res`` (its tables are in ``out``/timeseries.parquet already)."""
        self._job = (res, out)
        if self._proc is None or self._proc.stdin is None:
            return
        job = {"out": str(out), "summary": res.summary, "spec": res.spec, "format": self.format, "style": self.style,
               "split": split()}
        try:
            # NaN and infinities as JSON's extensions, so the worker's summary is this one.
            self._proc.stdin.write(json.dumps(job).encode())
            self._proc.stdin.close()
        except (OSError, ValueError):
            self._kill()

    def finish(self) -> None:
        """Waits for the figures; draws them here if the worker could not."""
        ok = False
        if self._proc is not None:
            ok = self._proc.wait() == 0
            self._proc = None
        self._err.close()
        if not ok and self._job is not None:
            from .plots import write_plots

            res, out = self._job
            write_plots(res.flows, res.links, res.summary, out, res.spec, format=self.format, style=self.style)

    def cancel(self) -> None:
        """The run failed or did not plot: the worker is stopped and reaped."""
        self._kill()
        self._err.close()

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None


class _Forked:
    """The worker as a fork of this process, for a process that has the figures' modules imported: what
    :class:`Worker` uses of a ``subprocess.Popen`` (``stdin``, ``wait``, ``kill``). Forked before the
    run starts, while this process has no thread but its own."""

    def __init__(self, err: IO[bytes]):
        parent = os.getpid()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(w)
            code = 1
            try:
                from .executor import die_with

                die_with(parent)
                os.dup2(err.fileno(), 2)
                with os.fdopen(r, "rb") as f:
                    data = f.read()
                main(data)  # ends the process itself once something was drawn
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        os.close(r)
        self.pid = pid
        self.stdin: Optional[IO[bytes]] = os.fdopen(w, "wb")

    def wait(self) -> int:
        if self.stdin is not None and not self.stdin.closed:
            self.stdin.close()  # a worker never handed a job reads an empty one and ends
        return os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def use_process() -> bool:
    """Whether to draw in a second process: ``CCLAB_PLOT_PROCESS=1`` / ``0`` say so; unset, only when the
    machine has a core to spare now: no more other tasks running at this instant than cores beyond the one
    this process needs (``/proc/loadavg``'s running count; the load over the last minute where that cannot be
    read). On a busy machine the process only adds its own imports to the CPU the run needs: measured
    2026-11-29 at a load of 5-7 on 2 cores, the 30-flow example took 1.11x (0.97-1.32) the wall time of
    drawing in-process. Not the minute's load average alone: it lags by a minute, so a few runs in a row on
    an idle machine (a benchmark, a script) raised it above 1 and drew every figure in-process."""
    forced = os.environ.get("CCLAB_PLOT_PROCESS")
    if forced in ("0", "1"):
        return forced == "1"
    cores = _cores()
    if cores < 2:
        return False
    try:
        with open("/proc/loadavg") as f:
            running = int(f.read().split()[3].split("/")[0])  # "1/77": runnable tasks, this one included
        return running - 1 <= cores - 2
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0] <= cores - 1


def split() -> bool:
    """Whether the worker forks to draw its figures in two halves: ``CCLAB_PLOT_SPLIT=0`` / ``1`` say so;
    unset, when this process may run on two cores or more (it waits while the worker draws)."""
    forced = os.environ.get("CCLAB_PLOT_SPLIT")
    if forced in ("0", "1"):
        return forced == "1"
    return hasattr(os, "fork") and _cores() >= 2


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def prestart(format: str = "png", style: str = "screen") -> None:
    """Starts the worker the next run will use (the command line calls it before validating), or gives the
    one started already (:func:`early`) the run's format and style."""
    global _READY
    if _READY is None:
        _READY = Worker(format, style)
    else:
        _READY.format, _READY.style = format, style


def early(argv: list[str]) -> None:
    """Starts the worker from the ``cclab`` command's arguments, before the command line's modules are
    imported (≈ 0.2 s: click, pydantic, numpy), when they ask for a run that draws figures. A guess that the
    command line then refuses costs only the worker, which :func:`cancel_untaken` stops."""
    if argv[:1] == ["run"] and not {"--no-plots", "--help", "-h"} & set(argv[1:]):
        prestart()


def cancel_untaken() -> None:
    """Stops a worker that no run took (the command failed or was not a run after all)."""
    w = take()
    if w is not None:
        w.cancel()


def take() -> Optional[Worker]:
    """The worker started ahead of the run, if any (then no longer held here)."""
    global _READY
    w, _READY = _READY, None
    return w


def main(data: Optional[bytes] = None) -> None:
    """The worker: imports first, then reads the job from stdin, or takes ``data`` (empty: nothing to draw)."""
    from . import plots

    if data is None:
        data = sys.stdin.buffer.read()
    if not data:
        return
    job = json.loads(data)
    names = list(job.get("names") or plots.FIGURES)
    theirs = [n for n in names if n in HALVES[1]] if job.get("split") and len(names) > 1 else []
    mine = [n for n in names if n not in theirs]
    child = -1
    if theirs:
        # Forked before anything reads timeseries.parquet: pyarrow's reader starts threads, and a fork
        # copies only the thread that calls it. Both halves read the file (a few ms) on their own core.
        parent = os.getpid()
        try:
            child = os.fork()
        except OSError:
            mine, theirs = names, []
        if child == 0:
            code = 1
            try:
                from .executor import die_with

                die_with(parent)  # a worker killed by the run (Worker.cancel) takes its half with it
                _draw(job, theirs)
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stderr.flush()
                os._exit(code)
    try:
        _draw(job, mine)
    finally:
        # Waited for even when this half failed: the run draws every figure again then, and must not
        # write a file the other half is still writing.
        failed = child > 0 and os.waitpid(child, 0)[1] != 0
    if failed:
        _draw(job, theirs)  # the other half failed: drawn here, or failing here with its traceback
    sys.stdout.flush()
    os._exit(0)  # nothing left to clean up; skips tearing down matplotlib


def _draw(job: dict, names: list[str]) -> None:
    from . import plots
    from .columns import FLOW_COLUMNS, LINK_COLUMNS, read_timeseries, split_timeseries
    from .plots._table import Table

    out = Path(job["out"])
    spec = job["spec"]
    # The tables as NumPy columns, without pandas (its import was half of this process's start-up); a file
    # this cannot read so (none a run of this version writes) goes through pandas, as Result.load reads it.
    ts = read_timeseries(out / "timeseries.parquet")
    tables = None
    if ts is not None:
        flows, links = split_timeseries(ts, "flow", FLOW_COLUMNS), split_timeseries(ts, "link", LINK_COLUMNS)
        if flows is not None and links is not None:
            tables = (Table(flows), Table(links))
    if tables is None:
        from .results import _parquet, _split

        frame = _parquet(out / "timeseries.parquet")
        tables = (_split(frame, "flow", FLOW_COLUMNS, spec), _split(frame, "link", LINK_COLUMNS, spec))
    plots.write_plots(*tables, job["summary"], out, spec, format=job["format"], style=job["style"], names=names)
