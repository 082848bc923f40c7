"""A run's result, whichever datapath ran it: :class:`Result` (summary dict + time-series DataFrames),
and the framing both runners share — series columns into DataFrames, per-interval rates, RTT masking,
the summary.json dict (docs/scenario.md). ``runner.py`` frames the simulator's output with it,
``net.py`` the real datapath's."""
from __future__ import annotations

import html
import json
import math
import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Protocol, Union

import numpy as np

# The tables' column names are defined in columns.py, beside the pandas-free path that builds the tables.
from .columns import FLOW_COLUMNS, INT_COLUMNS, LINK_COLUMNS, STATE_SEP, TIMESERIES_COLUMNS, Columns, to_frame, write_timeseries
from .metrics import jain
from .traces import OPPORTUNITY_BYTES, opportunities_before

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

# pandas is imported where a DataFrame is made, not here: it costs ~0.2 s, and a run that only writes its
# files never makes one (python/cclab/columns.py).


class FigureWorker(Protocol):
    """What :meth:`Result.to_dir` needs of a process that draws the figures while the rest is written
    (:class:`cclab.plotproc.Worker` is one; a protocol, so that this module does not import that one)."""

    def submit(self, res: Result, out: Path) -> None:
        """Hands over the run; its tables are in ``out``/timeseries.parquet already."""

    def finish(self) -> None:
        """Returns when the figures are in ``out``."""


# The leading columns of Result.flow_summary; the other per-flow keys of summary.json follow in name order.
FLOW_SUMMARY_FIRST = ("id", "cc", "group", "rtt", "goodput_bps", "share")
# The figures Result.plot draws, by kind (python/cclab/plots: ``<kind>.png``).
PLOT_KINDS = ("rate", "cwnd", "queue", "throughput_delay", "cdf")
# Every file a run writes into its folder (Result.to_dir); a run into a reused folder removes them first.
RUN_FILES = ("summary.json", "timeseries.parquet", "spec.json", "trace.parquet",
             *(f"{k}.{x}" for x in ("png", "pdf", "svg") for k in PLOT_KINDS))


# The packet trace's categories (trace.parquet, res.trace): the simulator's event codes 0, 1, 2, 4 (3 is
# unused) and packet codes 0, 1, 2 (crates/cclab-sim/src/result.rs, TraceKind and PacketKind).
TRACE_KINDS = ("enqueue", "drop", "random_loss", "delivered")
TRACE_PACKETS = ("data", "ack", "cross")
_KIND_CODE = np.array([0, 1, 2, -1, 3], dtype=np.int8)  # simulator code -> index into TRACE_KINDS


# Window statistics per flow and per algorithm (crates/cclab-transport/src/stats.rs, docs/scenario.md):
# RTT and one-way-delay percentiles, jitter, loss and retransmission rates. Null where not measured.
WINDOW_STATS = (
    "rtt_samples", "p50_rtt_s", "p95_rtt_s", "p99_rtt_s",
    "owd_samples", "mean_owd_s", "std_owd_s", "p50_owd_s", "p95_owd_s", "p99_owd_s", "jitter_s",
    "window_sent_pkts", "window_retransmits", "window_dropped_pkts", "loss_rate", "retransmit_rate",
    "spurious_recoveries_undone", "spurious_timeouts_undone", "dsacks_received",
)


def write_parquet(df: pd.DataFrame, path: Path, meta: Optional[dict]) -> None:
    """``df`` as Parquet, with the run's ``meta`` block (docs/scenario.md) as JSON under the file metadata
    key ``cclab`` (``pyarrow.parquet.read_schema(path).metadata[b"cclab"]``)."""
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    table = pa.Table.from_pandas(df, preserve_index=False)
    if meta is not None:
        md = dict(table.schema.metadata or {})
        md[b"cclab"] = json.dumps(_clean(meta), sort_keys=True).encode()
        table = table.replace_schema_metadata(md)
    pq.write_table(table, path)


def _clean(x: Any) -> Any:
    """NaN/inf are not JSON: write null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    return x


def out_problem(out: Union[str, bytes, os.PathLike]) -> Optional[str]:
    """Why ``out`` cannot name results (None if it can): an empty path would be the current folder, and
    a path that is not UTF-8 text cannot be written by Parquet (pyarrow encodes paths as UTF-8), which
    used to fail only after the run. Checked before a run by :func:`prepare_out` and by the command line's
    ``--out`` options."""
    from .errors import show

    text = os.fsdecode(out)
    if text == "":
        return 'is empty: give a path ("." for the current folder)'
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return (f"{show(text)} is not UTF-8 text: the results' files are written through paths that must be "
                "(Parquet); give a path of UTF-8 characters")
    return None


def prepare_out(out: Union[str, bytes, os.PathLike], field: str = "out") -> Path:
    """Creates the results folder ``out`` (and its parents) and checks that files can be written into
    it, before a run starts: a run's results are never lost to a bad folder after it finished. Raises a
    ScenarioError naming ``field`` (``--out`` on the command line) and why."""
    from .errors import ScenarioError, show

    if not isinstance(out, (str, bytes, os.PathLike)):
        raise ScenarioError([(field, f"must be a folder path (a str or pathlib.Path), got {show(out)}")])
    why = out_problem(out)
    if why:
        raise ScenarioError([(field, why)])
    out = os.fsdecode(out)
    where = show(str(out))
    try:
        p = Path(out)
        if p.exists() and not p.is_dir():
            raise ScenarioError([(field, f"{where} exists and is not a folder: results go into a folder")])
        p.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=p, prefix=".cclab-write-test-")
        os.close(fd)
        os.unlink(probe)
        # A folder where a run writes one of its files (summary.json/) would fail the write after the run.
        blocked = [n for n in RUN_FILES if (p / n).is_dir() and not (p / n).is_symlink()]
        if blocked:
            raise ScenarioError([(field, f"{where} holds a folder named {blocked[0]}, where a run writes its file; "
                                         "move it or give another folder")])
    except ScenarioError:
        raise
    except OSError as e:
        raise ScenarioError([(field, f"cannot write results into {where}: {e.strerror or e}")]) from None
    except ValueError as e:  # a NUL in the path
        raise ScenarioError([(field, f"cannot write results into {where}: {e}")]) from None
    return p


class Result:
    """One run.

    * ``summary`` — the summary.json dict (docs/scenario.md);
    * ``flows`` — one row per (t, flow): the columns of :data:`FLOW_COLUMNS` (t, flow, cc, group, rtt,
      cwnd, rate_bps, srtt, …) then the algorithm's state as ``<cc>.<key>`` (``fast.q``);
    * ``links`` — one row per (t, link): the columns of :data:`LINK_COLUMNS` (t, link, queue,
      queue_pkts, …) then the queue discipline's state as ``<queue>.<key>`` (``red.avg``);
    * ``flow_summary`` — one row per flow from ``summary["flows"]``;
    * ``spec`` — the resolved run spec the simulator ran (spec.json);
    * ``trace`` — the per-packet event log when run with ``trace_packets``, else None.

    :meth:`load` reads a results folder (:meth:`to_dir`) back; :meth:`plot` draws one figure.
    """

    def __init__(self, summary: dict, flows: Union[pd.DataFrame, Columns], links: Union[pd.DataFrame, Columns],
                 spec: dict, trace: Optional[pd.DataFrame] = None):
        # ``flows`` and ``links`` may come as NumPy columns (python/cclab/columns.py): they become
        # DataFrames when first read, so a run that only writes its files never imports pandas.
        self._flows = flows
        self._links = links
        self.summary = summary
        self.spec = spec
        self.trace = trace

    @property
    def flows(self) -> pd.DataFrame:
        if isinstance(self._flows, dict):
            self._flows = to_frame(self._flows)
        return self._flows

    @flows.setter
    def flows(self, value: pd.DataFrame) -> None:
        self._flows = value

    @property
    def links(self) -> pd.DataFrame:
        if isinstance(self._links, dict):
            self._links = to_frame(self._links)
        return self._links

    @links.setter
    def links(self, value: pd.DataFrame) -> None:
        self._links = value

    @property
    def flow_summary(self) -> pd.DataFrame:
        """One row per flow: every key of ``summary["flows"][i]`` as a column, plus ``share``, the flow's
        fraction of all flows' goodput in the window; columns :data:`FLOW_SUMMARY_FIRST` first, then the
        others in name order (nested dicts flattened as ``key.subkey``). Whole-number columns are int64 (nullable
        Int64 where a value is null, e.g. kernel TCP's timeouts)."""
        return flow_summary_frame(self.summary.get("flows", []))

    def timeseries(self) -> pd.DataFrame:
        """Both tables in one long frame (timeseries.parquet): one row per (t, flow or link), ``kind``
        says which. Columns: :data:`TIMESERIES_COLUMNS` (those present), then the algorithms' and queue
        disciplines' state columns in name order; NaN (nullable integers: <NA>) where a row has no
        value. Counters are nullable Int64, so a flow row's missing link counters do not make them
        floats."""
        import pandas as pd

        f = _nullable(self.flows.assign(kind="flow").rename(columns={"flow": "id"}))
        l = _nullable(self.links.assign(kind="link").rename(columns={"link": "id"}))
        parts = [p for p in (f, l) if not p.empty]
        df = pd.concat(parts, ignore_index=True, sort=False) if parts else pd.DataFrame(columns=["kind", "id", "t"])
        df = _ordered(df, TIMESERIES_COLUMNS)
        df["id"] = df["id"].astype("int64")
        return df

    def to_dir(self, out: Union[str, Path], plots: bool = True, worker: Optional[FigureWorker] = None) -> Path:
        """Writes the run's files (:data:`RUN_FILES`) into ``out``. A reused folder first loses every run
        file of the run before it, so none this run does not write (a trace, plots) is left beside its
        own; files that are not a run's stay. ``meta.run_id`` (random, kept if the summary has one) goes
        into summary.json and the Parquet files' metadata: :meth:`load` checks that they agree. An ``out``
        that is empty or not UTF-8 is a ScenarioError on ``out`` before anything is removed or written.
        ``worker``: a started plot process (python/cclab/plotproc.py) that draws the figures while the rest
        is written."""
        from .errors import ScenarioError

        why = out_problem(out) if isinstance(out, (str, bytes, os.PathLike)) else "must be a folder path"
        if why:
            raise ScenarioError([("out", why)])
        out = Path(os.fsdecode(out))
        out.mkdir(parents=True, exist_ok=True)
        for name in RUN_FILES:
            (out / name).unlink(missing_ok=True)
        meta = self.summary.get("meta")
        if isinstance(meta, dict):
            meta.setdefault("run_id", uuid.uuid4().hex)
        if isinstance(self._flows, dict) and isinstance(self._links, dict):
            write_timeseries(self._flows, self._links, out / "timeseries.parquet", _clean(meta))
        else:
            write_parquet(self.timeseries(), out / "timeseries.parquet", meta)
        if plots and worker is not None:
            worker.submit(self, out)  # it reads the tables back from timeseries.parquet
        (out / "spec.json").write_text(json.dumps(self.spec, indent=1, sort_keys=True) + "\n")
        if self.trace is not None:
            write_parquet(self.trace, out / "trace.parquet", meta)
        if plots and worker is not None:
            worker.finish()
        elif plots:
            from .plots import write_plots

            write_plots(self.flows, self.links, self.summary, out, self.spec)
        # Last: a folder with summary.json has every file of its run.
        (out / "summary.json").write_text(json.dumps(_clean(self.summary), indent=1, sort_keys=True) + "\n")
        return out

    @classmethod
    def load(cls, path: Union[str, Path]) -> Result:
        """A results folder written by :meth:`to_dir` (``cclab run --out``, ``cclab net run``) read
        back: summary.json, spec.json, timeseries.parquet split into ``flows`` and ``links`` (the same
        columns, order and dtypes as the run's), trace.parquet if present. The summary is as written
        (NaN and infinities are null in the file). A folder from before the ``<owner>.<key>`` state
        columns is brought to today's columns. A file that is missing, not a regular file, or not as cclab
        writes it (truncated, edited) raises a ScenarioError naming it."""
        from .files import read_json, shaped

        d = Path(path)
        summary = load_summary(d / "summary.json")
        spec = read_json(d / "spec.json", "spec.json")
        if not isinstance(spec, dict) or not isinstance(spec.get("flows"), list) or not isinstance(spec.get("links"), list):
            raise _bad(d / "spec.json", "spec.json", "the file must be a JSON object with lists `flows` and `links`")
        ts = _parquet(d / "timeseries.parquet")
        flows, links = shaped(d / "timeseries.parquet", "timeseries.parquet",
                              lambda: (_split(ts, "flow", FLOW_COLUMNS, spec), _split(ts, "link", LINK_COLUMNS, spec)))
        trace = _parquet(d / "trace.parquet") if os.path.lexists(d / "trace.parquet") else None
        _same_run(d, summary)
        return cls(summary, flows, links, spec, trace)

    def plot(self, kind: str = "rate", style: str = "screen", save: Union[str, Path, None] = None) -> Figure:
        """One of the run's figures as a matplotlib Figure (the same as the PNG ``cclab run`` writes):
        ``kind`` is one of :data:`PLOT_KINDS` — rate, cwnd, queue, throughput_delay, cdf; ``style`` one
        of screen, paper (one column), paper2 (two columns); ``save``: also write it to this path, in the
        format of its suffix (.png, .pdf, .svg) (docs/plots.md)."""
        if kind not in PLOT_KINDS:
            raise ValueError(f"kind must be one of {', '.join(PLOT_KINDS)}, got {kind!r}")
        from .plots import build_figures, check_format, save as save_figure

        if save is not None:
            check_format(Path(save).suffix.lstrip(".").lower())  # before drawing
        name = f"{kind}.png"
        fig = build_figures(self.flows, self.links, self.summary, self.spec, names=[name], style=style)[name]
        if save is not None:
            save_figure(fig, save)
        return fig

    def __repr__(self) -> str:
        s = self.summary
        return f"<cclab.Result {s['scenario']!r}: {len(s['flows'])} flows, jain {s['jain']:.3f}>"

    def _repr_html_(self) -> str:
        """Jupyter's view: scenario, seed, window, then per algorithm its flows, goodput and Jain's
        index, the total, and the warnings."""
        s = self.summary
        e = html.escape
        m0, m1 = s["measure"]
        flows = s.get("flows", [])
        count: dict[str, int] = {}
        for f in flows:
            count[f["cc"]] = count.get(f["cc"], 0) + 1
        good = s.get("goodput_by_cc_bps", {})
        jbc = s.get("jain_by_cc", {})
        rows = "".join(
            f"<tr><td>{e(cc)}</td><td>{n}</td><td>{_num(good.get(cc), 1e-6, '.2f')}</td>"
            f"<td>{_num(jbc.get(cc), 1, '.3f')}</td></tr>" for cc, n in count.items())
        total = sum(f["goodput_bps"] or 0.0 for f in flows)
        rows += (f"<tr><th>all</th><th>{len(flows)}</th><th>{total * 1e-6:.2f}</th>"
                 f"<th>{_num(s.get('jain'), 1, '.3f')}</th></tr>")
        warn = "".join(f"<li>{e(str(w))}</li>" for w in s.get("warnings", []))
        return (f"<div><b>cclab.Result</b> {e(str(s['scenario']))} · seed {e(str(s['seed']))} · "
                f"window {m0:g}–{m1:g} s"
                "<table><tr><th>cc</th><th>flows</th><th>goodput (Mbit/s)</th><th>Jain</th></tr>"
                f"{rows}</table>"
                + (f"<ul>warnings: {warn}</ul>" if warn else "") + "</div>")


def _bad(path: Path, what: str, why: str) -> Exception:
    from .errors import ScenarioError

    return ScenarioError([(str(path), f"is not a {what} as cclab writes it: {why}; it may be truncated or edited")])


def _parquet(path: Path) -> pd.DataFrame:
    """A Parquet file of a run folder; a ScenarioError naming it if it is not a regular Parquet file."""
    import stat

    import pandas as pd

    from .files import not_regular

    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise _bad(path, path.name, f"cannot read it: {e.strerror or e}") from None
    if not stat.S_ISREG(mode):
        raise not_regular(path, path.name, mode)
    try:
        # Through an open file: pyarrow encodes a path as UTF-8, so a folder whose name is not (written by
        # another tool) read as "damaged" (UnicodeEncodeError).
        with open(path, "rb") as f:
            return pd.read_parquet(f)
    except Exception as e:  # pyarrow's errors for a damaged file have no common base but Exception
        raise _bad(path, path.name, f"{type(e).__name__}: {str(e)[:200]}") from None


# summary.json's keys whose values are numbers or null (docs/scenario.md): per flow, per link, the run.
_FLOW_NUMBERS = ("rtt", "goodput_bps", "throughput_bps", "mean_cwnd_pkts", "mean_rtt", "min_rtt", "retransmits",
                 "timeouts", "fast_recoveries", "start", "finish", "delivered_bytes", "sent_pkts", "received_pkts",
                 "dropped_pkts", *WINDOW_STATS)
_LINK_NUMBERS = ("rate_bps", "utilization", "drops", "marks", "random_losses", "loss_rate", "mean_queue_pkts",
                 "max_queue_pkts", "mean_queue_delay_s", "p95_queue_delay_s")


def check_summary(s: Any, path: Path) -> dict:
    """``s`` (a parsed summary.json) if it has the form cclab writes — the keys every reader relies on, each
    of its type — else a ScenarioError naming ``path`` and the first key that is wrong. Keys a reader does
    not rely on, and keys added by later versions, are not checked."""
    what = "summary.json"

    def number(v: Any) -> bool:
        return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))

    def whole(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    if not isinstance(s, dict):
        raise _bad(path, what, f"the file must be a JSON object, not {type(s).__name__}")
    for k in ("flows", "links"):
        if not isinstance(s.get(k), list) or not all(isinstance(x, dict) for x in s[k]):
            raise _bad(path, what, f"`{k}` must be a list of objects")
    if not s["links"]:
        raise _bad(path, what, "`links` is empty (every run has a link)")
    if not isinstance(s.get("scenario"), str) or not whole(s.get("seed")):
        raise _bad(path, what, "`scenario` must be a name and `seed` an integer")
    m = s.get("measure")
    if not (isinstance(m, list) and len(m) == 2 and all(number(x) and x is not None for x in m)):
        raise _bad(path, what, "`measure` must be [start, end] in seconds")
    if not number(s.get("jain")):
        raise _bad(path, what, "`jain` must be a number or null")
    for i, f in enumerate(s["flows"]):
        if not whole(f.get("id")) or not isinstance(f.get("cc"), str):
            raise _bad(path, what, f"flows[{i}] must have an integer `id` and an algorithm name `cc`")
        for k in _FLOW_NUMBERS:
            if not number(f.get(k)):
                raise _bad(path, what, f"flows[{i}].{k} must be a number or null")
    for i, link in enumerate(s["links"]):
        for k in _LINK_NUMBERS:
            if not number(link.get(k)):
                raise _bad(path, what, f"links[{i}].{k} must be a number or null")
    for k in ("sim", "meta", "by_cc", "total", "conservation"):
        if k in s and s[k] is not None and not isinstance(s[k], dict):
            raise _bad(path, what, f"`{k}` must be an object")
    if "sim" in s and isinstance(s["sim"], dict) and not all(number(v) for v in s["sim"].values()):
        raise _bad(path, what, "`sim` must hold numbers")
    if "warnings" in s and not isinstance(s["warnings"], list):
        raise _bad(path, what, "`warnings` must be a list")
    return s


def load_summary(path: Path) -> dict:
    """A run's summary.json, read (regular files only) and checked (:func:`check_summary`)."""
    from .files import read_json

    return check_summary(read_json(path, "summary.json"), path)


def _num(x: Any, scale: float, fmt: str) -> str:
    return "–" if x is None or not math.isfinite(x) else format(x * scale, fmt)


def _same_run(d: Path, summary: Any) -> None:
    """Refuses a folder whose Parquet files were written by another cclab run than its summary.json
    (their ``meta.run_id`` differ: files copied in, or left by a cclab from before to_dir cleaned a
    reused folder). A summary without a run id (written before run ids) and a Parquet file without
    cclab's metadata block (rewritten by another tool) are not checked."""
    import pyarrow.parquet as pq

    from .errors import ScenarioError

    rid = summary.get("meta", {}).get("run_id") if isinstance(summary, dict) and isinstance(summary.get("meta"), dict) \
        else None
    if not rid:
        return
    for name in ("timeseries.parquet", "trace.parquet"):
        f = d / name
        if not f.exists():
            continue
        try:
            with open(f, "rb") as fh:  # an open file: the path may not be UTF-8 (see _parquet)
                block = (pq.read_schema(fh).metadata or {}).get(b"cclab")
            theirs = json.loads(block).get("run_id") if block is not None else rid
        except (ValueError, AttributeError):  # unreadable metadata: the file's own loading reports it
            theirs = rid
        if theirs != rid:  # a file without our metadata block was written by another tool: not ours to judge
            raise ScenarioError([(str(f), f"belongs to another run than {d / 'summary.json'} (run id {theirs or 'none'}, "
                                          f"not {rid}): the folder mixes two runs' files; run again into it, or "
                                          "into an empty folder")])


def flow_summary_frame(flows: list[dict]) -> pd.DataFrame:
    """:attr:`Result.flow_summary` from summary.json's per-flow dicts: built from whatever keys they
    have, so a key added to summary.json becomes a column. Each column's dtype is decided from the
    dicts' own values (an integer key with a null stays integer: Int64)."""
    import pandas as pd

    if not flows:
        return pd.DataFrame(columns=list(FLOW_SUMMARY_FIRST))
    recs = [dict(_flat(f)) for f in flows]
    keys = list(dict.fromkeys(k for r in recs for k in r))
    df = pd.DataFrame({k: _typed([r.get(k) for r in recs]) for k in keys})
    if "share" not in df and "goodput_bps" in df:
        good = df["goodput_bps"].astype(float)
        total = float(good.sum())
        df["share"] = good / total if total > 0 else np.nan
    first = [c for c in FLOW_SUMMARY_FIRST if c in df]
    return df[first + sorted(c for c in df.columns if c not in first)]


def _flat(d: dict, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(key, value) pairs of a dict, nested dicts' keys as ``key.subkey``."""
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _flat(v, f"{prefix}{k}{STATE_SEP}")
        else:
            yield f"{prefix}{k}", v


def _typed(vals: list[Any]) -> pd.Series:
    """A summary column from its values: int64 (Int64 with nulls) when every value is a whole number
    (not a bool), float64 when numeric or all null (NaN), else as pandas infers."""
    import pandas as pd

    known = [v for v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]

    def number(v: Any) -> bool:
        return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))

    if all(number(v) for v in known):
        if known and all(isinstance(v, (int, np.integer)) for v in known):
            return pd.Series(pd.array([None if v is None else int(v) for v in vals], dtype="Int64")).astype(
                "Int64" if len(known) < len(vals) else "int64")
        return pd.Series([np.nan if v is None else float(v) for v in vals], dtype="float64")
    return pd.Series(vals)


# ---- series columns -> the flows and links tables ----

def frame(cols: dict[str, Any], id_col: str) -> pd.DataFrame:
    """One table from series columns (equal-length arrays): ``t``, ``id_col`` (int64) first, then the
    other columns in name order."""
    import pandas as pd

    df = pd.DataFrame({k: np.asarray(v) for k, v in cols.items()})
    if df.empty:
        return df
    df[id_col] = df[id_col].astype("int64")
    first = ["t", id_col]
    return df[first + sorted(c for c in df.columns if c not in first)]


def add_rates(df: pd.DataFrame, id_col: str, bytes_col: str) -> pd.DataFrame:
    """``rate_bps`` over each sample interval from a cumulative byte counter (0 at the first sample)."""
    if df.empty:
        return df
    df = df.sort_values([id_col, "t"], kind="stable").reset_index(drop=True)
    dt = df.groupby(id_col)["t"].diff()
    db = df.groupby(id_col)[bytes_col].diff()
    df["rate_bps"] = (db * 8.0 / dt).fillna(0.0)
    return df.sort_values(["t", id_col], kind="stable").reset_index(drop=True)


def flow_table(flows: pd.DataFrame, spec: dict) -> pd.DataFrame:
    """The flows table from framed flow series: per-interval ``rate_bps`` from ``delivered_bytes``;
    RTTs of 0 (no sample yet, see :func:`rtt_or_none`) as NaN, so plots and means skip them; each flow's
    ``cc``, ``group`` and ``rtt`` from the run spec; counters as int64; the algorithms' state keys
    prefixed by the algorithm; columns in :data:`FLOW_COLUMNS` order."""
    if flows.empty:
        return flows
    flows = add_rates(flows, "flow", "delivered_bytes")
    for col in ("srtt", "min_rtt"):
        if col in flows:
            flows[col] = flows[col].where(flows[col] > 0)
    _add_owner(flows, "flow", spec["flows"])
    return _finish(flows, "flow", "cc", FLOW_COLUMNS)


def link_table(links: pd.DataFrame, spec: dict) -> pd.DataFrame:
    """The links table from framed link series: per-interval ``rate_bps`` from ``tx_bytes``,
    ``utilization`` against each link's rate in the run spec, the link's ``queue`` discipline, counters
    as int64 and the discipline's state keys prefixed by its name; columns in :data:`LINK_COLUMNS`
    order."""
    if links.empty:
        return links
    links = add_rates(links, "link", "tx_bytes")
    sl = spec["links"]
    links["utilization"] = links["rate_bps"] / _capacity_bps(links, sl)
    if "sojourn_sum_s" in links:
        # The mean sojourn of the packets that left the queue in each interval (NaN if none did).
        g = links.groupby("link")
        n = g["departures"].diff()
        links["sojourn_s"] = (g["sojourn_sum_s"].diff() / n).where(n > 0)
        links = links.drop(columns="sojourn_sum_s")
    _add_owner(links, "link", sl)
    return _finish(links, "link", "queue", LINK_COLUMNS)


def _capacity_bps(links: pd.DataFrame, spec_links: list[dict]) -> np.ndarray:
    """Each row's link capacity over the interval ending at it: the rate, or for a trace-driven link the
    trace's opportunities in (t_prev, t] × 1500 B × 8 / (t − t_prev) (NaN at a link's first sample)."""
    cap = links["link"].map({i: l["rate_bps"] for i, l in enumerate(spec_links)}).to_numpy(dtype=float, copy=True)
    for i, l in enumerate(spec_links):
        if not l.get("trace_ms"):
            continue
        rows = (links["link"] == i).to_numpy()
        t = links.loc[rows, "t"].to_numpy(dtype=float)
        opps = np.asarray(l["trace_ms"], dtype=float) / 1e3
        prev = np.concatenate([[np.nan], t[:-1]])
        with np.errstate(invalid="ignore", divide="ignore"):
            n = opportunities_before(t, opps) - opportunities_before(np.nan_to_num(prev), opps)
            c = n * OPPORTUNITY_BYTES * 8.0 / (t - prev)
        cap[rows] = np.where(np.isfinite(c) & (c > 0), c, cap[rows])
    return cap


def _add_owner(df: pd.DataFrame, kind: str, items: list[dict]) -> None:
    """A flow's ``cc``, ``group`` and ``rtt``, or a link's ``queue``, from the run spec's entry."""
    import pandas as pd

    ids = df[kind].to_numpy()
    if kind == "flow":
        df["cc"] = pd.Series(np.array([f["cc"] for f in items], dtype=object)[ids], index=df.index).astype(str)
        df["group"] = np.array([f["group"] for f in items], dtype="int64")[ids]
        df["rtt"] = np.array([f["rtt"] for f in items], dtype="float64")[ids]
    else:
        df["queue"] = pd.Series(np.array([l["queue"] for l in items], dtype=object)[ids], index=df.index).astype(str)


def _finish(df: pd.DataFrame, id_col: str, owner_col: str, fixed: tuple[str, ...]) -> pd.DataFrame:
    """Counters to integers, state columns named ``<owner>.<key>``, columns in order."""
    for c in INT_COLUMNS & set(df.columns):
        df[c] = _as_int(df[c])
    return _ordered(_prefix_state(df, owner_col, fixed), fixed)


def _as_int(col: pd.Series) -> pd.Series:
    """A counter the simulator sends as float64 (its series are one f64 array per column) as int64 —
    exactly: every value must be a whole number below 2^53, where float64 holds integers exactly. NaN
    (a value the datapath cannot know) makes the column nullable Int64."""
    import pandas as pd

    x = col.to_numpy(dtype="float64", na_value=np.nan)
    known = ~np.isnan(x)
    bad = known & ((np.abs(x) >= 2.0**53) | (np.floor(x) != x))
    if bad.any():
        raise ValueError(f"column {col.name!r}: {float(x[bad][0])!r} is not a whole number below 2^53")
    if known.all():
        return pd.Series(x.astype("int64"), index=col.index, name=col.name)
    return pd.Series(pd.array(np.where(known, x, 0).astype("int64"), dtype="Int64"), index=col.index,
                     name=col.name).mask(~known)


def _prefix_state(df: pd.DataFrame, owner_col: str, fixed: tuple[str, ...]) -> pd.DataFrame:
    """Each state column (one not in ``fixed``) split by the row's owner (a flow's algorithm, a link's
    queue discipline) into ``<owner>.<key>`` columns, so that two algorithms' ``w_max`` or ``alpha``
    never share a column. A key that already starts with ``<owner>_`` (RED's ``red_avg``) loses that
    prefix (``red.avg``). A (owner, key) pair with no value in any row makes no column."""
    import pandas as pd

    state = [c for c in df.columns if c not in fixed]
    if not state:
        return df
    codes, names = pd.factorize(df[owner_col], sort=True)
    rows_of = [codes == k for k in range(len(names))]
    out: dict[str, np.ndarray] = {}
    for c in state:
        x = df[c].to_numpy(dtype="float64", na_value=np.nan)
        for k in np.unique(codes[~np.isnan(x)]):
            name = str(names[k])
            key = c[len(name) + 1:] if c.startswith(name + "_") else c
            vals = np.where(rows_of[k], x, np.nan)
            name_key = f"{name}{STATE_SEP}{key}"
            out[name_key] = vals if name_key not in out else np.where(np.isnan(out[name_key]), vals, out[name_key])
    return pd.concat([df.drop(columns=state), pd.DataFrame(out, index=df.index)], axis=1)


def _ordered(df: pd.DataFrame, fixed: tuple[str, ...]) -> pd.DataFrame:
    """``fixed`` columns (those present) in that order, then the others in name order."""
    return df[[c for c in fixed if c in df.columns] + sorted(c for c in df.columns if c not in fixed)]


def _nullable(df: pd.DataFrame) -> pd.DataFrame:
    """Integer columns as nullable Int64, so concatenating flows and links keeps them integers."""
    return df.astype(dict.fromkeys(INT_COLUMNS & set(df.columns), "Int64"))


def _split(ts: pd.DataFrame, kind: str, fixed: tuple[str, ...], spec: dict) -> pd.DataFrame:
    """One table back from timeseries.parquet: its rows of ``kind``, its fixed columns and the state
    columns with a value in them, integers back to int64 where none is missing. A file written before
    the owner columns existed (bare state keys, float counters) gets them from the run spec and its
    state columns renamed ``<owner>.<key>``, as a new run's."""
    import pandas as pd

    rows = ts[ts["kind"] == kind].drop(columns="kind").rename(columns={"id": kind}).reset_index(drop=True)
    if rows.empty:
        return pd.DataFrame()
    keep = [c for c in rows.columns if c in fixed or (c not in TIMESERIES_COLUMNS and rows[c].notna().any())]
    rows = rows[keep]
    owner = "cc" if kind == "flow" else "queue"
    if owner not in rows:
        _add_owner(rows, kind, spec["flows" if kind == "flow" else "links"])
        return _finish(rows, kind, owner, fixed)
    for c in INT_COLUMNS & set(rows.columns):
        rows[c] = rows[c].astype("Int64" if rows[c].isna().any() else "int64")
    return _ordered(rows, fixed)


def trace_table(cols: dict[str, np.ndarray]) -> pd.DataFrame:
    """The packet trace from the simulator's columns (NumPy arrays, no object per record): t (s, float64),
    kind and pkt as pandas Categoricals (:data:`TRACE_KINDS`, :data:`TRACE_PACKETS`), link (int32, −1 at a
    host), flow (int32, −1 − source for cross traffic), seq (uint64)."""
    import pandas as pd

    kind = pd.Categorical.from_codes(_KIND_CODE[np.asarray(cols["kind"])], categories=list(TRACE_KINDS))
    pkt = pd.Categorical.from_codes(np.asarray(cols["pkt"]).astype(np.int8), categories=list(TRACE_PACKETS))
    return pd.DataFrame({"t": cols["t"], "kind": kind, "link": cols["link"], "flow": cols["flow"],
                         "seq": cols["seq"], "pkt": pkt}, copy=False)


# ---- the summary ----

def rtt_or_none(x: Optional[float]) -> Optional[float]:
    """The transport reports an RTT of 0 until its first sample; no real path has a zero RTT (a packet
    always takes its serialisation time), so 0 means "no sample" and is written as null."""
    return None if x is None or x <= 0 else x


def build_summary(raw: dict) -> dict:
    """summary.json from a run's per-flow and per-link window counters (the simulator's result JSON, or
    the real datapath's brought to the same keys)."""
    flows = []
    for f in raw["flows"]:
        flows.append({
            "id": f["id"], "group": f["group"], "cc": f["cc"], "rtt": f["rtt"],
            "goodput_bps": f["goodput_bps"], "throughput_bps": f["throughput_bps"],
            "mean_cwnd_pkts": f["mean_cwnd_pkts"], "mean_rtt": f["mean_rtt"], "min_rtt": rtt_or_none(f["min_rtt"]),
            "retransmits": f["retransmits"], "timeouts": f["timeouts"], "fast_recoveries": f["fast_recoveries"],
            "start": f["start"], "finish": f["finish"], "delivered_bytes": f["delivered_bytes"],
            "sent_pkts": f["sent_pkts"], "received_pkts": f["received_pkts"], "dropped_pkts": f["dropped_pkts"],
            **{k: f.get(k) for k in WINDOW_STATS},
        })
    links = []
    for l in raw["links"]:
        links.append({
            "id": l["id"], "rate_bps": l["rate_bps"], "utilization": l["utilization"], "drops": l["drops"],
            "marks": l["marks"], "random_losses": l["random_losses"], "loss_rate": l["loss_rate"],
            "mean_queue_pkts": l["mean_queue_pkts"], "max_queue_pkts": l["max_queue_pkts"],
            "mean_queue_delay_s": l["mean_queue_delay_s"], "p95_queue_delay_s": l["p95_queue_delay_s"],
        })
    good = [f["goodput_bps"] for f in flows]
    by_cc: dict[str, list[float]] = {}
    for f in flows:
        by_cc.setdefault(f["cc"], []).append(f["goodput_bps"])
    total_goodput = float(np.sum(good))
    stats_by_cc = raw.get("stats_by_cc") or {}

    def group(fl: list[dict], stats: Optional[dict]) -> dict:
        g = [f["goodput_bps"] for f in fl]
        return {
            "flows": len(fl), "goodput_bps": float(np.sum(g)),
            "share": float(np.sum(g)) / total_goodput if total_goodput > 0 else None,
            "jain": jain(g) if fl else None,
            **{k: (stats or {}).get(k) for k in WINDOW_STATS},
        }

    return {
        "scenario": raw["name"],
        "seed": raw["seed"],
        "measure": list(raw["measure"]),
        "flows": flows,
        "links": links,
        "jain": jain(good),
        "jain_by_cc": {k: jain(v) for k, v in sorted(by_cc.items())},
        "goodput_by_cc_bps": {k: float(np.sum(v)) for k, v in sorted(by_cc.items())},
        # Per algorithm and over all flows: goodput, share of the total, Jain among those flows, and the
        # window statistics pooled over their samples (percentiles of all their RTT samples together).
        "by_cc": {k: group([f for f in flows if f["cc"] == k], stats_by_cc.get(k)) for k in sorted(by_cc)},
        "total": group(flows, raw.get("stats_total")),
        # Short transfers (`kind = "transfers"` traffic): one aggregate per source, never one row per
        # transfer (docs/scenario.md, "Short transfers").
        **({"transfers": raw["transfers"]} if raw.get("transfers") else {}),
        "sim": {"wall_s": raw["wall_s"], "events": raw["events"], "packets": raw["packets"]},
        "conservation": raw["conservation"],
        "warnings": raw["warnings"],
    }
