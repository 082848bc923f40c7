"""The run's table as text: the characters rich's ``Table`` prints into a file or a pipe (its default
heavy-headed box, right-justified cells padded by one space, the title centred above), without importing
rich, which costs a ``cclab run`` ≈ 40–50 ms of its start-up (docs/performance.md). A table this cannot lay
out as rich would (wider than the console, a title wider than the table, wide characters) is handed to rich.
tests/test_texttable.py holds the two outputs equal."""
from __future__ import annotations

import sys
import unicodedata
from typing import Optional

# rich.box.HEAVY_HEAD: top, header row, header rule, body rows, section rule, bottom.
_TOP, _HEAD, _HEAD_RULE = "┏━┳┓", "┃┃┃", "┡━╇┩"
_ROW, _RULE, _BOTTOM = "│││", "├─┼┤", "└─┴┘"


def _narrow(text: str) -> bool:
    """Whether every character of ``text`` is one column wide on a terminal (so ``len`` is its width)."""
    return all(c.isprintable() and unicodedata.east_asian_width(c) not in "WF" and not unicodedata.combining(c)
               for c in text)


class Table:
    """The part of ``rich.table.Table`` cclab's run table uses: a title, columns (right-justified), rows and
    section ends."""

    def __init__(self, title: Optional[str] = None):
        self.title = title
        self.columns: list[str] = []
        self.rows: list[tuple[list[str], bool]] = []

    def add_column(self, header: str, justify: str = "right") -> None:
        if justify != "right":
            raise ValueError("texttable lays out right-justified columns only")
        self.columns.append(header)

    def add_row(self, *cells: str, end_section: bool = False) -> None:
        self.rows.append(([str(c) for c in cells], end_section))

    def render(self, width: int) -> Optional[str]:
        """The table as rich prints it on a console ``width`` columns wide, or None where this layout is not
        rich's (the caller then uses rich)."""
        texts = [*self.columns, *(c for cells, _ in self.rows for c in cells), self.title or ""]
        if not all(_narrow(t) for t in texts) or any(len(cells) != len(self.columns) for cells, _ in self.rows):
            return None
        widths = [max([len(h), *(len(cells[i]) for cells, _ in self.rows)]) + 2 for i, h in enumerate(self.columns)]
        total = sum(widths) + len(widths) + 1
        if total > width or (self.title is not None and len(self.title) > total):
            return None

        def rule(box: str) -> str:
            return box[0] + box[2].join(box[1] * w for w in widths) + box[3]

        def line(box: str, cells: list[str]) -> str:
            return box[0] + box[1].join(" " + c.rjust(w - 2) + " " for c, w in zip(cells, widths)) + box[2]

        out = []
        if self.title is not None:
            left = (total - len(self.title)) // 2
            out.append(" " * left + self.title + " " * (total - len(self.title) - left))
        out += [rule(_TOP), line(_HEAD, self.columns), rule(_HEAD_RULE)]
        for i, (cells, end) in enumerate(self.rows):
            out.append(line(_ROW, cells))
            if end and i < len(self.rows) - 1:
                out.append(rule(_RULE))
        out.append(rule(_BOTTOM))
        return "\n".join(out) + "\n"


def print_table(t: Table, width: int = 150) -> None:
    """Prints ``t`` to stdout as ``rich.console.Console(width=width).print`` would into a file or pipe."""
    # rich draws an ASCII box for a stream in another encoding; one that names none (a StringIO) it takes as UTF-8.
    enc = (getattr(sys.stdout, "encoding", None) or "utf-8").lower().replace("-", "")
    text = t.render(width) if enc.startswith("utf") else None
    if text is not None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from rich.console import Console
    from rich.table import Table as RichTable

    r = RichTable(title=t.title)
    for h in t.columns:
        r.add_column(h, justify="right")
    for cells, end in t.rows:
        r.add_row(*cells, end_section=end)
    Console(width=width).print(r)
