"""The few table operations the figures need (select rows, group by a key, pivot to one column per flow),
on NumPy columns, so that drawing a run's figures never imports pandas.

Why not pandas: its import is the largest part of the figures' start-up (0.2 s of 0.5 s on this machine
on a good day, 0.56 s of 1.07 s on a slow one, docs/performance.md), and the figures' process waits for
it while the run itself is already done. What the figures do with a run's tables is small: this file is all
of it. A pandas DataFrame (``Result.flows``, a user's own) is turned into a :class:`Table` at the door
(:func:`as_table`), so every figure is drawn by the same code from the same numbers either way.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Optional

import numpy as np

from ..columns import missing


class Table:
    """Columns of one length, by name. A numeric column is a NumPy array (float64 with NaN where a value is
    missing; int64 where none is); a text column an object array."""

    __slots__ = ("cols", "n")

    def __init__(self, cols: Optional[dict[str, np.ndarray]] = None):
        self.cols = dict(cols or {})
        self.n = len(next(iter(self.cols.values()))) if self.cols else 0

    def __getitem__(self, name: str) -> np.ndarray:
        return self.cols[name]

    def __contains__(self, name: object) -> bool:
        return name in self.cols

    def __len__(self) -> int:
        return self.n

    @property
    def empty(self) -> bool:
        """As pandas: no rows (a table without columns has none)."""
        return self.n == 0

    @property
    def columns(self) -> list[str]:
        return list(self.cols)

    def where(self, mask: np.ndarray) -> Table:
        """The rows where ``mask`` is true, in order."""
        return Table({k: v[mask] for k, v in self.cols.items()})

    def take(self, idx: np.ndarray) -> Table:
        """The rows at positions ``idx``, in that order."""
        return Table({k: v[idx] for k, v in self.cols.items()})

    def has_values(self, name: str) -> bool:
        """Whether column ``name`` exists and holds a value (not NaN/None) in some row."""
        if name not in self.cols:
            return False
        return bool(np.any(~missing(self.cols[name])))

    def groups(self, key: str) -> Iterator[tuple[Any, Table]]:
        """(value, its rows) for each distinct value of column ``key``, in ascending order of value, the rows
        in their order in the table (pandas' groupby, sort=True); rows whose key is missing are left out."""
        # One stable sort, then each run of equal keys: a mask per group would read the whole table once
        # per flow (200 flows, 40 000 rows).
        rows = np.flatnonzero(~missing(self.cols[key]))
        keys = self.cols[key][rows]
        order = np.argsort(keys, kind="stable")
        rows, keys = rows[order], keys[order]
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if keys.size else np.array([], dtype=int)
        ends = np.r_[starts[1:], keys.size]
        for s, e in zip(starts.tolist(), ends.tolist()):
            yield _scalar(keys[s]), self.take(rows[s:e])

    def reduce(self, key: str, col: str, fn: Any) -> dict[Any, float]:
        """Per value of ``key`` (ascending): ``fn`` over the non-missing values of ``col`` (NaN when none)."""
        out = {}
        for value, g in self.groups(key):
            x = np.asarray(g[col], dtype=float)
            x = x[~np.isnan(x)]
            out[value] = float(fn(x)) if x.size else float("nan")
        return out

    def pivot(self, index: str, columns: str, values: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row labels, column labels, matrix): ``values`` at each (``index``, ``columns``) pair, one row per
        distinct ``index`` value and one column per distinct ``columns`` value (both ascending), NaN where a
        pair has no row; pandas' DataFrame.pivot. Each pair must occur once at most."""
        i_of, c_of = self.cols[index], self.cols[columns]
        rows, r = np.unique(i_of, return_inverse=True)
        cols, c = np.unique(c_of, return_inverse=True)
        m = np.full((rows.size, cols.size), np.nan)
        m[r, c] = np.asarray(self.cols[values], dtype=float)
        return rows, cols, m


def _scalar(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


def as_table(x: Any) -> Table:
    """``x`` as a :class:`Table`: itself, or a pandas DataFrame's columns (nullable integers and floats,
    pandas' Int64 and Float64, as float64 with NaN; int64 stays int64)."""
    if isinstance(x, Table):
        return x
    cols = {}
    for name in x.columns:
        s = x[name]
        if isinstance(s.dtype, np.dtype):
            cols[str(name)] = s.to_numpy()
        elif getattr(s.dtype, "kind", "O") in "iufb":  # a pandas extension dtype: Int64, Float64, boolean
            cols[str(name)] = s.to_numpy(dtype="float64", na_value=np.nan)
        else:
            cols[str(name)] = s.to_numpy(dtype=object)
    return Table(cols)
