"""Reading the TOML files cclab takes (scenarios, sweep and search files): UTF-8 text of a regular file
of bounded size, parsed, with every string and key checked to be Unicode text and nesting bounded, each
rejection a :class:`~cclab.errors.ScenarioError` naming the file or field. Split from
:mod:`cclab.scenario`, which validates what the file means; this module only what it is."""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9/3.10 ship no tomllib
    import tomli as tomllib

from .errors import ScenarioError

# A scenario file is at most 16 MiB (the largest shipped is ~2 kB; a trace is its own file), and tables
# and arrays nest at most 32 deep (no scenario key is deeper than 6): bounds on what parsing may cost.
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 32


def read_text(path: Path, what: str) -> str:
    """A text file's contents as UTF-8, at most :data:`MAX_FILE_BYTES`; a ScenarioError naming the file
    (and the line of a byte that is not UTF-8) otherwise. Only regular files are read: a FIFO, a device
    (``/dev/zero``) or a folder is refused before anything is read from it."""
    from .files import read_bytes

    data = read_bytes(path, what, MAX_FILE_BYTES)  # regular files only: a FIFO would wait for a writer forever
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise ScenarioError([(f"{path}:{line}", f"not UTF-8 text (byte 0x{data[e.start]:02x} at line {line}, "
                                                f"column {col}); save the {what} as UTF-8")]) from None


def parse_toml(text: str, where: str) -> dict[str, Any]:
    """TOML ``text`` as a dict; a ScenarioError naming ``where`` (a file, or "scenario") otherwise."""
    if not isinstance(text, str):
        raise ScenarioError([(where, f"TOML must be text (str), got {type(text).__name__}")])
    # A byte-order mark (U+FEFF, which Windows editors put at the start of UTF-8 files) is no TOML
    # statement: tomllib refused such a file as "Invalid statement (at line 1, column 1)".
    text = text.removeprefix("\ufeff")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError([(where, f"malformed TOML: {e}")]) from None
    except RecursionError:
        raise ScenarioError([(where, f"malformed TOML: nested too deeply (at most {MAX_DEPTH} levels)")]) from None
    return data


_SURROGATE = re.compile("[\ud800-\udfff]")


def _not_text(v: str) -> Optional[str]:
    """Why ``v`` is not Unicode text (a lone surrogate: Python strings may hold them, from the API or a
    file name, no UTF-8 file can), or None. Refused here: downstream it used to surface as serde's
    "unexpected end of hex escape" or pydantic's "unable to parse raw data"."""
    m = _SURROGATE.search(v)
    if m is None:
        return None
    return (f"is not valid Unicode text: character {m.start() + 1} is a lone surrogate (U+{ord(m.group()):04X}), "
            "which no UTF-8 file can hold")


def check_nesting(obj: Any, base: str = "") -> None:
    """Refuses tables and arrays nested deeper than :data:`MAX_DEPTH` (no scenario key is deeper than 6),
    and strings or keys that are not Unicode text (:func:`_not_text`), naming where (under ``base``, the
    field ``obj`` is assigned to); walked without recursion, so any depth is safe to check."""
    stack: list[tuple[Any, str, int]] = [(obj, base, 0)]
    while stack:
        node, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            where = where if len(where) <= 80 else where[:80] + "…"
            raise ScenarioError([(where or "scenario", f"nested deeper than {MAX_DEPTH} levels of tables and arrays")])
        if isinstance(node, str):  # the top level only: strings inside are checked below, not pushed
            check_text(node, where)
        elif isinstance(node, dict):
            for k, v in node.items():
                why = _not_text(k) if isinstance(k, str) else None
                if why:
                    raise ScenarioError([(where or "scenario", f"has a key that {why}")])
                here = f"{where}.{k}" if where else str(k)
                if isinstance(v, str):
                    check_text(v, here)
                elif isinstance(v, (dict, list, tuple)):
                    stack.append((v, here, depth + 1))
        elif isinstance(node, (list, tuple)):
            for i, v in enumerate(node):
                if isinstance(v, str):
                    check_text(v, f"{where}[{i}]")
                elif isinstance(v, (dict, list, tuple)):
                    stack.append((v, f"{where}[{i}]", depth + 1))


def check_text(v: str, where: str) -> None:
    why = _not_text(v)
    if why:
        raise ScenarioError([(where or "scenario", why)])
