"""The progress bar both runners show over a run's time (simulated or real), once it has lasted 2 s."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from rich.progress import Progress as Bar, TaskID


class Progress:
    """A rich progress bar from 0 to ``duration`` seconds of run time, shown only once a run has lasted
    ~2 s of wall time (rich is imported then). ``label`` names the run, ``decimals`` is the shown run
    time's precision, ``eta`` adds the estimated time left."""

    def __init__(self, duration: float, label: str, decimals: int = 0, eta: bool = False):
        self.duration = duration
        self.label = label
        self.decimals = decimals
        self.eta = eta
        self.t0 = time.monotonic()
        self.shown: Optional[tuple[Bar, TaskID]] = None

    def update(self, t: float) -> None:
        if self.shown is None:
            if time.monotonic() - self.t0 < 2.0:
                return
            from rich.progress import BarColumn, Progress as Bar, ProgressColumn, TextColumn, TimeRemainingColumn

            columns: list[ProgressColumn] = [
                TextColumn(self.label), BarColumn(),
                TextColumn(f"{{task.completed:.{self.decimals}f}}/{{task.total:.0f}} s"),
            ]
            if self.eta:
                columns.append(TimeRemainingColumn())
            bar = Bar(*columns, transient=True)
            bar.start()
            self.shown = (bar, bar.add_task(self.label, total=self.duration))
        bar, task = self.shown
        bar.update(task, completed=t)

    def close(self) -> None:
        if self.shown is not None:
            self.shown[0].stop()
