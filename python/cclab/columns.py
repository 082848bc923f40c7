"""The simulator's series as the flows and links tables without pandas: NumPy columns, and
timeseries.parquet written from them with pyarrow alone.

Why: importing pandas is about 0.2 s, more than a short run's whole simulation and output, and most runs
never look at a DataFrame (``cclab run`` writes files and prints a table). The tables are built here as
ordered ``name -> array`` dicts; :class:`cclab.results.Result` turns one into a DataFrame only when its
``flows`` or ``links`` is read (a plot, a notebook). The rules are those of the pandas path in
``python/cclab/results.py`` (``flow_table``, ``link_table``, ``Result.timeseries``), which the real
datapath still uses: the same rows, order, values and dtypes, and a timeseries.parquet with the same
table and the same pandas metadata, so ``pd.read_parquet`` and ``Result.load`` read it as before
(``tests/test_fast_path.py`` holds the two paths to each other).

The tables' column names and orders are defined here (``results.py`` re-exports them). A table this
module cannot hold as plain NumPy columns (a counter with a missing value, which needs pandas' nullable
Int64; an empty table) is left to the pandas path: :func:`flow_columns` and
:func:`link_columns` return None for it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import numpy as np

from .traces import OPPORTUNITY_BYTES, opportunities_before

Columns = dict[str, np.ndarray]

# The columns every flows table has, in this order (docs/scenario.md documents each): the row's key, who
# the flow is (algorithm, group, configured base RTT), then the transport's state and counters. The
# algorithm's own state follows, prefixed by the algorithm (``fast.q``), in name order.
FLOW_COLUMNS = (
    "t", "flow", "cc", "group", "rtt",
    "cwnd", "rate_bps", "srtt", "min_rtt", "in_flight", "ssthresh", "pacing_bps", "delivered_bytes",
    "sent_bytes", "retransmits", "timeouts",
)
# Likewise for links: the key, the queue discipline's name, the queue and counters; then the queue
# discipline's state prefixed by its name (``red.avg``).
LINK_COLUMNS = (
    "t", "link", "queue",
    "queue_pkts", "queue_bytes", "rate_bps", "utilization", "drops", "marks", "random_losses", "arrivals", "tx_bytes",
    "departures", "sojourn_s",
)
# The leading columns of timeseries.parquet, in this order; the algorithms' and queue disciplines' state
# columns follow in name order (so each algorithm's columns sit together).
TIMESERIES_COLUMNS = (
    "kind", "id", "t", "cc", "group", "rtt",
    # flows
    "cwnd", "rate_bps", "srtt", "min_rtt", "in_flight", "ssthresh", "pacing_bps", "delivered_bytes",
    "sent_bytes", "retransmits", "timeouts",
    # links
    "queue", "queue_pkts", "queue_bytes", "utilization", "drops", "marks", "random_losses", "arrivals", "tx_bytes",
    "departures", "sojourn_s",
)
# Counts: int64 in the flows and links tables (nullable Int64 where a value is unknown, e.g. kernel TCP's
# timeouts on the real datapath, and in timeseries.parquet, where a flow row has no link counters).
INT_COLUMNS = frozenset({
    "group", "in_flight", "delivered_bytes", "sent_bytes", "retransmits", "timeouts",
    "queue_pkts", "queue_bytes", "drops", "marks", "random_losses", "arrivals", "tx_bytes", "departures",
})
# Between an algorithm's (or queue discipline's) name and its state key: ``fast.q``, ``red.avg``.
STATE_SEP = "."
# Columns of Python strings (object arrays): the owners.
STR_COLUMNS = frozenset({"kind", "cc", "queue"})


def _ordered(cols: Columns, fixed: tuple[str, ...]) -> Columns:
    """``fixed`` columns (those present) in that order, then the others in name order."""
    return {c: cols[c] for c in [c for c in fixed if c in cols] + sorted(c for c in cols if c not in fixed)}


def _by_id_then_t(ids: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The permutation that sorts rows by (id, t), ties in row order (lexsort is stable)."""
    return np.lexsort((t, ids))


def _group_diff(x: np.ndarray, same: np.ndarray) -> np.ndarray:
    """``x[i] - x[i-1]`` where row i-1 belongs to the same id (``same[i]``), else NaN; rows sorted by id."""
    d = np.full(x.shape, np.nan)
    d[1:] = np.where(same[1:], x[1:] - x[:-1], np.nan)
    return d


def _rates(cols: Columns, id_col: str, bytes_col: str) -> tuple[Columns, np.ndarray]:
    """Rows sorted by (id, t) with ``rate_bps`` over each sample interval from a cumulative byte counter (0 at
    an id's first sample, and where the interval or the bytes give NaN, as pandas' ``fillna(0)``); also the
    mask of rows whose previous row has the same id."""
    order = _by_id_then_t(cols[id_col], cols["t"])
    out = {k: v[order] for k, v in cols.items()}
    ids = out[id_col]
    same = np.zeros(ids.shape, dtype=bool)
    same[1:] = ids[1:] == ids[:-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        r = _group_diff(out[bytes_col], same) * 8.0 / _group_diff(out["t"], same)
    out["rate_bps"] = np.where(np.isnan(r), 0.0, r)
    return out, same


def _by_t(cols: Columns, id_col: str) -> Columns:
    """Rows sorted by (t, id), ties in row order."""
    order = np.lexsort((cols[id_col], cols["t"]))
    return {k: v[order] for k, v in cols.items()}


def _start(cols: dict[str, Any], id_col: str) -> Optional[Columns]:
    """The columns as float64 arrays with ``id_col`` as int64 (results.frame), or None for an empty table."""
    if not cols:
        return None
    out = {k: np.asarray(v) for k, v in cols.items()}
    if len(out[id_col]) == 0:
        return None
    out[id_col] = out[id_col].astype("int64")
    return out


def _finish(cols: Columns, owner_col: str, fixed: tuple[str, ...]) -> Optional[Columns]:
    """Counters to int64 (None if one has a missing value: nullable integers are pandas'), state columns
    named ``<owner>.<key>``, columns in order."""
    for c in INT_COLUMNS & set(cols):
        x = np.asarray(cols[c], dtype="float64")
        if np.isnan(x).any():
            return None
        if ((np.abs(x) >= 2.0**53) | (np.floor(x) != x)).any():
            bad = x[(np.abs(x) >= 2.0**53) | (np.floor(x) != x)][0]
            raise ValueError(f"column {c!r}: {float(bad)!r} is not a whole number below 2^53")
        cols[c] = x.astype("int64")
    return _ordered(_prefix_state(cols, owner_col, fixed), fixed)


def _prefix_state(cols: Columns, owner_col: str, fixed: tuple[str, ...]) -> Columns:
    """Each state column split by the row's owner into ``<owner>.<key>`` columns (results._prefix_state)."""
    state = [c for c in cols if c not in fixed]
    if not state:
        return cols
    owners = cols[owner_col]
    names = sorted(set(owners.tolist()))
    rows_of = [owners == n for n in names]
    out: Columns = {}
    for c in state:
        x = np.asarray(cols[c], dtype="float64")
        known = ~np.isnan(x)
        for k, name in enumerate(names):
            if not (rows_of[k] & known).any():
                continue
            key = c[len(name) + 1:] if c.startswith(name + "_") else c
            vals = np.where(rows_of[k], x, np.nan)
            nk = f"{name}{STATE_SEP}{key}"
            out[nk] = vals if nk not in out else np.where(np.isnan(out[nk]), vals, out[nk])
    rest = {k: v for k, v in cols.items() if k not in state}
    return {**rest, **out}


def _owner(ids: np.ndarray, items: list[dict], key: str) -> np.ndarray:
    return np.array([str(x[key]) for x in items], dtype=object)[ids]


def flow_columns(cols: dict[str, Any], spec: dict) -> Optional[Columns]:
    """The flows table (results.flow_table) from the simulator's flow series, or None where only the pandas
    path can build it."""
    c = _start(cols, "flow")
    if c is None or "delivered_bytes" not in c:
        return None
    c, _ = _rates(c, "flow", "delivered_bytes")
    c = _by_t(c, "flow")
    for col in ("srtt", "min_rtt"):
        if col in c:
            c[col] = np.where(c[col] > 0, c[col], np.nan)
    ids = c["flow"]
    fl = spec["flows"]
    c["cc"] = _owner(ids, fl, "cc")
    c["group"] = np.array([f["group"] for f in fl], dtype="int64")[ids]
    c["rtt"] = np.array([f["rtt"] for f in fl], dtype="float64")[ids]
    return _finish(c, "cc", FLOW_COLUMNS)


def _capacity_bps(ids: np.ndarray, t: np.ndarray, spec_links: list[dict]) -> np.ndarray:
    """Each row's link capacity over the interval ending at it (results._capacity_bps); rows sorted by t."""
    cap = np.array([float(l["rate_bps"]) for l in spec_links], dtype="float64")[ids]
    for i, l in enumerate(spec_links):
        if not l.get("trace_ms"):
            continue
        rows = ids == i
        tt = t[rows].astype(float)
        opps = np.asarray(l["trace_ms"], dtype=float) / 1e3
        prev = np.concatenate([[np.nan], tt[:-1]])
        with np.errstate(invalid="ignore", divide="ignore"):
            n = opportunities_before(tt, opps) - opportunities_before(np.nan_to_num(prev), opps)
            cc = n * OPPORTUNITY_BYTES * 8.0 / (tt - prev)
        cap[rows] = np.where(np.isfinite(cc) & (cc > 0), cc, cap[rows])
    return cap


def link_columns(cols: dict[str, Any], spec: dict) -> Optional[Columns]:
    """The links table (results.link_table) from the simulator's link series, or None where only the pandas
    path can build it."""
    c = _start(cols, "link")
    if c is None or "tx_bytes" not in c:
        return None
    c, same = _rates(c, "link", "tx_bytes")
    if "sojourn_sum_s" in c:
        # The mean sojourn of the packets that left the queue in each interval (NaN if none did).
        n = _group_diff(c["departures"].astype("float64"), same)
        with np.errstate(divide="ignore", invalid="ignore"):
            c["sojourn_s"] = np.where(n > 0, _group_diff(c["sojourn_sum_s"], same) / n, np.nan)
        del c["sojourn_sum_s"]
    c = _by_t(c, "link")
    sl = spec["links"]
    c["utilization"] = c["rate_bps"] / _capacity_bps(c["link"], c["t"], sl)
    c["queue"] = _owner(c["link"], sl, "queue")
    return _finish(c, "queue", LINK_COLUMNS)


def to_frame(cols: Columns) -> Any:
    """A table as a DataFrame, with the dtypes of the pandas path (strings as pandas' ``str``)."""
    import pandas as pd

    df = pd.DataFrame(cols, copy=False)
    for c in STR_COLUMNS & set(cols):
        df[c] = df[c].astype(str)
    return df


# ---- timeseries.parquet ----

def _pandas_major() -> int:
    """The installed pandas' major version, read from its package metadata (not by importing it): pandas 3
    stores strings as ``large_string`` with numpy type ``str``, pandas 2 as ``string``/``object``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return int(version("pandas").split(".")[0])
    except (PackageNotFoundError, ValueError):
        return 3


def _arrow(pa: Any, typ: Any, values: np.ndarray, valid: np.ndarray) -> Any:
    """A fixed-width pyarrow array over ``values``' memory with nulls where not ``valid``. Made from buffers:
    ``pa.array`` on a NumPy array (or a list) asks pyarrow's pandas shim about it, which imports pandas."""
    bits = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(typ, len(values), [bits, pa.py_buffer(np.ascontiguousarray(values))])


def _arrow_strings(pa: Any, typ: Any, values: np.ndarray) -> Any:
    """A string array (``typ``: string or large_string) from an object array of str and None, from buffers."""
    valid = np.array([v is not None for v in values.tolist()], dtype=bool)
    names = sorted(set(values[valid].tolist()))
    code = {n: i for i, n in enumerate(names)}
    codes = np.array([code.get(v, 0) for v in values.tolist()], dtype="int64")
    enc = [n.encode() for n in names] or [b""]
    width = max(1, max(len(e) for e in enc))
    padded = np.zeros((len(enc), width), dtype=np.uint8)
    for i, e in enumerate(enc):
        padded[i, :len(e)] = np.frombuffer(e, dtype=np.uint8)
    lens = np.where(valid, np.array([len(e) for e in enc], dtype="int64")[codes], 0)
    data = padded[codes][np.arange(width)[None, :] < lens[:, None]]
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype("int64" if typ == pa.large_string() else "int32")
    bits = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(typ, len(values), [bits, pa.py_buffer(offsets), pa.py_buffer(data)])


def timeseries_table(flows: Columns, links: Columns, meta: Optional[dict]) -> Any:
    """timeseries.parquet's pyarrow Table (what ``pa.Table.from_pandas(Result.timeseries())`` makes): the
    flow rows then the link rows, ``kind`` saying which; counters int64 with nulls where a row has none
    (pandas' Int64); NaN as null; the pandas metadata block pyarrow would write; ``meta`` under
    ``cclab``."""
    import pyarrow as pa  # type: ignore[import-untyped]

    nf, nl = len(flows["t"]), len(links["t"])
    parts = [({**flows, "kind": np.full(nf, "flow", dtype=object)}, "flow"),
             ({**links, "kind": np.full(nl, "link", dtype=object)}, "link")]
    names = list(dict.fromkeys(k if k not in ("flow", "link") else "id" for p, own in parts for k in p))
    names = [c for c in TIMESERIES_COLUMNS if c in names] + sorted(c for c in names if c not in TIMESERIES_COLUMNS)
    major = _pandas_major()
    str_type = pa.large_string() if major >= 3 else pa.string()
    str_meta = ("object", "str") if major >= 3 else ("unicode", "object")
    sizes = (nf, nl)
    arrays, md_cols = [], []
    for name in names:
        got = [p.get(own if name == "id" else name) for p, own in parts]
        if name in STR_COLUMNS:
            x = np.concatenate([g if g is not None else np.full(k, None, dtype=object) for g, k in zip(got, sizes)])
            arrays.append(_arrow_strings(pa, str_type, x))
            pt, nt = str_meta
        elif name == "id" or name in INT_COLUMNS:
            x = np.concatenate([g.astype("int64") if g is not None else np.zeros(k, "int64") for g, k in zip(got, sizes)])
            valid = np.concatenate([np.full(k, g is not None) for g, k in zip(got, sizes)])
            arrays.append(_arrow(pa, pa.int64(), x, valid))
            # Counters are pandas' nullable Int64 in the long table (a flow row has no link counters).
            pt, nt = ("int64", "int64") if name == "id" else ("int64", "Int64")
        else:
            x = np.concatenate([np.asarray(g, dtype="float64") if g is not None else np.full(k, np.nan)
                                for g, k in zip(got, sizes)])
            # NaN as null, as pyarrow's from_pandas writes it.
            arrays.append(_arrow(pa, pa.float64(), x, ~np.isnan(x)))
            pt, nt = "float64", "float64"
        md_cols.append({"name": name, "field_name": name, "pandas_type": pt, "numpy_type": nt, "metadata": None})
    md = {b"pandas": json.dumps({"index_columns": [], "column_indexes": [], "columns": md_cols, "attributes": {},
                                 "creator": {"library": "pyarrow", "version": pa.__version__},
                                 "pandas_version": _pandas_version()}).encode()}
    if meta is not None:
        md[b"cclab"] = json.dumps(meta, sort_keys=True).encode()
    return pa.Table.from_arrays(arrays, names=names).replace_schema_metadata(md)


def _pandas_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pandas")
    except PackageNotFoundError:
        return ""


def write_timeseries(flows: Columns, links: Columns, path: Path, meta: Optional[dict]) -> None:
    """timeseries.parquet from the two tables' columns (``meta`` already JSON-clean)."""
    write_table(timeseries_table(flows, links, meta), path)


# pyarrow.parquet.write_table's settings (pyarrow/parquet/core.py, ParquetWriter), given to the compiled writer.
_WRITE_TABLE_DEFAULTS: dict[str, Any] = {
    "version": "2.6", "compression": "snappy", "use_dictionary": True, "write_statistics": True,
    "use_deprecated_int96_timestamps": False, "writer_engine_version": "V2", "data_page_version": "1.0",
    "use_compliant_nested_type": True, "store_schema": True}


def write_table(table: Any, path: Path) -> None:
    """``pyarrow.parquet.write_table(table, path)``, the same bytes, through pyarrow's compiled writer
    (``pyarrow._parquet``, 2–3 ms to import) instead of ``pyarrow.parquet``, whose import (≈ 40 ms on this
    machine) loads pyarrow's filesystems, S3's among them, that a local file does not need. A pyarrow whose
    compiled writer takes other arguments gets ``pyarrow.parquet`` (tests/test_fast_path.py holds the bytes equal)."""
    try:
        from pyarrow import _parquet

        writer = _parquet.ParquetWriter(str(path), table.schema, **_WRITE_TABLE_DEFAULTS)
    except (ImportError, TypeError, AttributeError):
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        pq.write_table(table, path)
        return
    try:
        writer.write_table(table)
    finally:
        writer.close()


# ---- timeseries.parquet read back without pandas (the figures' process, python/cclab/plotproc.py) ----

def read_timeseries(path: Path) -> Optional[Columns]:
    """timeseries.parquet's columns as NumPy arrays: numbers as float64 with NaN for a null (an integer
    column without one stays int64), text as object arrays with None for a null. None when a column has a type read
    otherwise (the caller reads the file with pandas then). From the Arrow buffers, because pyarrow's own
    ``to_numpy`` imports pandas (pyarrow 26), which is what this path exists to avoid."""
    import pyarrow as pa

    with open(path, "rb") as f:  # an open file: pyarrow encodes a path as UTF-8 (results._parquet)
        try:
            from pyarrow import _parquet

            reader = _parquet.ParquetReader()
            reader.open(f)
            table = reader.read_all(None, use_threads=False)
        except (ImportError, TypeError, AttributeError):
            import pyarrow.parquet as pq

            table = pq.read_table(f)
    out = {}
    for name in table.column_names:
        parts = []
        for chunk in table.column(name).chunks:
            part = _from_arrow(pa, chunk)
            if part is None:
                return None
            parts.append(part)
        out[name] = np.concatenate(parts) if parts else np.array([])
    return out


def _from_arrow(pa: Any, a: Any) -> Optional[np.ndarray]:
    """One Arrow array as NumPy (see :func:`read_timeseries`); None for a type not read here."""
    n, off = len(a), a.offset
    bufs = a.buffers()
    valid = np.ones(n, dtype=bool)
    if a.null_count and bufs[0] is not None:
        bits = np.unpackbits(np.frombuffer(bufs[0], dtype=np.uint8), bitorder="little")
        valid = bits[off:off + n].astype(bool)
    if a.type in (pa.float64(), pa.int64()):
        x = np.frombuffer(bufs[1], dtype="float64" if a.type == pa.float64() else "int64", count=n, offset=off * 8)
        if valid.all():
            return x.copy()
        x = x.astype("float64")
        x[~valid] = np.nan
        return x
    if a.type in (pa.string(), pa.large_string()):
        offsets = np.frombuffer(bufs[1], dtype="int64" if a.type == pa.large_string() else "int32", count=n + 1,
                                offset=off * (8 if a.type == pa.large_string() else 4))
        data = bytes(bufs[2]) if bufs[2] is not None else b""
        starts, ends = offsets[:-1].tolist(), offsets[1:].tolist()
        ok = valid.tolist()
        return np.array([data[s:e].decode() if k else None for s, e, k in zip(starts, ends, ok)], dtype=object)
    return None


def missing(x: np.ndarray) -> np.ndarray:
    """Where column ``x`` has no value: NaN in a float column, None (or NaN) in an object column; an integer
    column has a value everywhere."""
    if x.dtype.kind == "f":
        return np.isnan(x)
    if x.dtype.kind == "O":
        return np.array([v is None or (isinstance(v, float) and v != v) for v in x.tolist()], dtype=bool)
    return np.zeros(x.shape, dtype=bool)


def split_timeseries(ts: Columns, kind: str, fixed: tuple[str, ...]) -> Optional[Columns]:
    """The flows (``kind`` "flow") or links table from :func:`read_timeseries`'s columns, as
    ``results._split`` makes it: the rows of ``kind``, ``id`` named ``kind``, the fixed columns and the
    state columns with a value, counters int64 where none is missing (float64 with NaN where one is: the
    figures take both). An empty dict when there are no such rows; None for a file from before the owner
    columns (``results._split`` renames its state columns from the run spec)."""
    rows = ts["kind"] == kind
    if not rows.any():
        return {}
    if ("cc" if kind == "flow" else "queue") not in ts:
        return None
    out = {}
    for name, x in ts.items():
        if name == "kind":
            continue
        x = x[rows]
        if name not in fixed and name != "id" and (name in TIMESERIES_COLUMNS or missing(x).all()):
            continue
        if x.dtype.kind == "f" and name in INT_COLUMNS and not np.isnan(x).any():
            x = x.astype("int64")
        out[kind if name == "id" else name] = x
    return out
