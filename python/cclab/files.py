"""Reading the files cclab's commands take or wrote, and writing a user's output file, under the error
contract (docs/scenario.md "The error contract"): whatever is at the path — a truncated or hand-edited
file, binary garbage, a folder, a FIFO, a device — the answer is a :class:`ScenarioError` naming the file
and what is wrong, never a traceback and never a wait.

Only regular files are read. A path is opened with ``O_NONBLOCK`` (opening a FIFO for reading then returns
at once instead of waiting for a writer) and checked with ``fstat`` on the open descriptor, so what is
checked is what is read, even if the path is replaced in between."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, Callable, TypeVar, Union

from .errors import ScenarioError, show

# Results files (summary.json of a 1000-flow run is a few MB) are read whole; this only stops a runaway
# file from being read into memory.
MAX_JSON_BYTES = 1 << 30

T = TypeVar("T")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


def not_regular(path: Union[str, Path], what: str, mode: int) -> ScenarioError:
    return ScenarioError([(str(path), f"is not a regular file ({_kind(mode)}): not a {what}")])


def read_bytes(path: Union[str, Path], what: str, limit: int = MAX_JSON_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (a ``what``: "scenario file", "summary.json", …), at most
    ``limit``; a ScenarioError naming the file otherwise (missing, unreadable, not a regular file, too big)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise ScenarioError([(str(path), f"cannot read {what}: {e.strerror or e}")]) from None
    except ValueError as e:  # a NUL in the path
        raise ScenarioError([(show(str(path)), f"cannot read {what}: {e}")]) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise not_regular(path, what, mode)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise ScenarioError([(str(path), f"cannot read {what}: {e.strerror or e}")]) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ScenarioError([(str(path), f"is larger than {limit // (1024 * 1024)} MiB: not a {what}")])
    return data


def read_json(path: Union[str, Path], what: str = "") -> Any:
    """The JSON value in the regular file ``path``; a ScenarioError naming the file if it is not one, or
    not UTF-8 JSON (a truncated file, garbage)."""
    what = what or Path(path).name
    data = read_bytes(path, what)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ScenarioError([(str(path), f"is not a {what}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset "
                                         f"{e.start})")]) from None
    except json.JSONDecodeError as e:
        why = "empty" if not data.strip() else f"not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})"
        raise ScenarioError([(str(path), f"is not a {what}: {why}; it may be truncated or edited")]) from None
    except RecursionError:
        raise ScenarioError([(str(path), f"is not a {what}: nested too deeply")]) from None


def shaped(path: Union[str, Path], what: str, read: Callable[[], T]) -> T:
    """``read()`` (which takes apart a file's parsed content), with any sign of an unexpected shape — a
    missing key, a value of the wrong type — reported as a ScenarioError naming the file: a results file
    is read by code that trusts its form, and this turns a broken form into the contract's answer."""
    try:
        return read()
    except ScenarioError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        detail = f"no {e.args[0]!r}" if isinstance(e, KeyError) and e.args else str(e) or type(e).__name__
        raise ScenarioError([(str(path), f"is not a {what} as cclab writes it ({detail[:200]}); it may be "
                                         "truncated or edited: write it again")]) from None


def check_output_file(path: Union[str, Path], field: str = "--out") -> Path:
    """``path`` as a file a command may write (replacing what is there): not empty, no NUL, not a folder,
    FIFO or device, and its folder (created if missing) writable; a ScenarioError naming ``field``
    otherwise. Checked before any work, so nothing is computed for a file that cannot be written."""
    text = os.fsdecode(path)
    if text == "":
        raise ScenarioError([(field, "is empty: give a file name")])
    if "\0" in text:
        raise ScenarioError([(field, f"{show(text)} has a NUL character: not a file name")])
    p = Path(text)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise ScenarioError([(field, f"cannot write {show(text)}: {e.strerror or e}")]) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise ScenarioError([(field, f"{show(text)} is {_kind(st.st_mode)}, not a file to write")])
    parent = p.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ScenarioError([(field, f"cannot write {show(text)}: cannot create its folder "
                                     f"{show(str(parent))}: {e.strerror or e}")]) from None
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ScenarioError([(field, f"cannot write {show(text)}: its folder {show(str(parent))} is not writable")])
    return p


def write_text(path: Path, text: str, field: str = "--out") -> None:
    """Writes ``text`` to ``path`` through a temporary file beside it renamed over it (a reader never sees
    half a file, and a FIFO put there meanwhile is replaced, not written into); a ScenarioError naming
    ``field`` if it cannot."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError as e:
        raise ScenarioError([(field, f"cannot write {show(str(path))}: {e.strerror or e}")]) from None
    finally:
        tmp.unlink(missing_ok=True)
