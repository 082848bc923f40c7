"""A run's figures drawn in a second process, started when the run starts (docs/performance.md, "Start-up").

Why a process: importing matplotlib and pandas (~0.55 s) and drawing five figures (~0.35 s) are both bound
to the GIL, so a thread gains nothing, while the machine has a second core. The worker (``python -c
"from cclab.plotproc import main; main()"``) imports them while this process validates the scenario and
simulates; once timeseries.parquet is written it is handed the summary and the spec, reads the tables back
from the file (as :meth:`cclab.results.Result.load` does, so they are the run's tables) and writes the
figures while this process writes the rest. :meth:`Worker.finish` waits for it before summary.json, the
run's last file, is written: the figures are there when the run returns. A worker that could not start or
failed leaves the figures to this process (a bug in the plots then raises here, with its traceback), and
so does a machine without a core to spare (:func:`use_process`).
"""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from .results import Result

_CODE = "import sys; sys.path.insert(0, sys.argv[1]); from cclab.plotproc import main; main()"
# One worker started ahead of the run by the command line (it knows before validating that it will plot),
# taken by the run (runner._simulate); None when nobody started one.
_READY: Optional[Worker] = None


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
        job = {"out": str(out), "summary": res.summary, "spec": res.spec, "format": self.format, "style": self.style}
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


def use_process() -> bool:
    """Whether to draw in a second process: ``CCLAB_PLOT_PROCESS=1`` / ``0`` say so; unset, only when the
    machine has a core to spare (its load over the last minute at most its cores minus one). On a busy
    machine the process only adds its own imports to the CPU the run needs: measured 2026-11-29 at a load
    of 5-7 on 2 cores, the 30-flow example took 1.11x (0.97-1.32) the wall time of drawing in-process."""
    forced = os.environ.get("CCLAB_PLOT_PROCESS")
    if forced in ("0", "1"):
        return forced == "1"
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return cores >= 2 and os.getloadavg()[0] <= cores - 1


def prestart(format: str = "png", style: str = "screen") -> None:
    """Starts the worker the next run will use (the command line calls it before validating)."""
    global _READY
    if _READY is None:
        _READY = Worker(format, style)


def take() -> Optional[Worker]:
    """The worker started ahead of the run, if any (then no longer held here)."""
    global _READY
    w, _READY = _READY, None
    return w


def main() -> None:
    """The worker: imports first, then reads the job from stdin (EOF without a job: nothing to draw)."""
    from . import plots
    from .results import FLOW_COLUMNS, LINK_COLUMNS, _parquet, _split

    data = sys.stdin.buffer.read()
    if not data:
        return
    job = json.loads(data)
    out = Path(job["out"])
    ts = _parquet(out / "timeseries.parquet")
    spec = job["spec"]
    flows, links = _split(ts, "flow", FLOW_COLUMNS, spec), _split(ts, "link", LINK_COLUMNS, spec)
    plots.write_plots(flows, links, job["summary"], out, spec, format=job["format"], style=job["style"])
    sys.stdout.flush()
    os._exit(0)  # nothing left to clean up; skips tearing down matplotlib and pandas
