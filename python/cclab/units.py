"""Quantities with units, as written in scenario files.

Numbers are SI base units (seconds, bit/s, bytes). Strings carry a unit: ``"100Mbps"``, ``"40ms"``,
``"375KB"``. Size prefixes are decimal (1 KB = 1000 B, as in networking); binary ones are spelled
``KiB``/``MiB``/``GiB``. A string without a unit is rejected: ``"100"`` could mean anything.
"""
from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Any, Callable, Optional

_NUM = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z/%]*)\s*$")

_RATE = {
    "bps": 1.0, "bit/s": 1.0, "kbps": 1e3, "Kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9, "Tbps": 1e12,
    "kbit/s": 1e3, "Mbit/s": 1e6, "Gbit/s": 1e9,
}
# Every other way people write a rate unit: "bps", "bit/s" or "b/s" after a prefix k, M, G or T in either
# case ("mbps" and "Mb/s" are megabits per second, as written in the wild; an uppercase "B" is bytes and
# never a rate here). Read as the spelling of _RATE they mean; crates/cclab-cc/src/params.rs reads the
# same set for algorithm parameters.
_RATE_SPELLING = re.compile(r"^([kKmMgGtT]?)(?:bps|bit/s|b/s)$")
_RATE_PREFIX = {"": "bps", "k": "kbps", "m": "Mbps", "g": "Gbps", "t": "Tbps"}


def _rate_unit(unit: str) -> str:
    """``unit`` as the key of :data:`_RATE` it spells ("mbps", "Mb/s" → "Mbps"), or unchanged."""
    m = _RATE_SPELLING.match(unit)
    return unit if unit in _RATE or m is None else _RATE_PREFIX[m.group(1).lower()]
_TIME = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}
_SIZE = {
    "B": 1, "KB": 1000, "kB": 1000, "MB": 1000**2, "GB": 1000**3,
    "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3,
}


def _q(value: object) -> str:
    """A value as the user wrote it in TOML/JSON ("40 parsecs", [1], true), cut to a readable length."""
    return show_value(value)


# Values longer than this are cut in messages (one message per problem stays one readable line).
_SHOW_MAX = 80


def show_value(value: object) -> str:
    """A value for a message as the user wrote it (JSON: strings quoted), cut when long: an integer of
    400 digits is shown by its size, a string of 5000 characters by its start and length."""
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        value = value.item()  # type: ignore[attr-defined]  # a NumPy scalar: shown as the number it holds
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"an integer of {len(str(abs(value)))} digits"
    if isinstance(value, str) and len(value) > _SHOW_MAX:
        return f"{json.dumps(value[:40])}… ({len(value)} characters)"
    if not isinstance(value, (str, int, float, list, tuple, dict)) and value is not None:
        plain = _plain(value)
        if plain.startswith("a Python "):
            return plain
    try:
        text = json.dumps(value, default=_plain)
    except (ValueError, RecursionError):
        text = type(value).__name__
    if len(text) > _SHOW_MAX:
        return f"{text[:60]}… ({type(value).__name__} of {len(text)} characters)"
    return text


# Invisible characters that Unicode files as letters or marks (Default_Ignorable_Code_Point outside the
# "C" categories): the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0), the combining grapheme joiner, the
# Khmer inherent vowels, the Mongolian and other variation selectors. A name made of them looks empty.
_INVISIBLE = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0"
                        "\U000e0100-\U000e01ef]")


def invisible_char(v: str) -> Optional[str]:
    """The first character of ``v`` a name may not hold, described ("U+2028 LINE SEPARATOR"), or None:
    control, format, private-use, unassigned and surrogate characters (category C), line and paragraph
    separators (Zl, Zp), and the invisible letters and marks of :data:`_INVISIBLE`. Such names print as
    nothing, break lines in messages and tables, or look like another name."""
    for c in v:
        if unicodedata.category(c)[0] == "C" or unicodedata.category(c) in ("Zl", "Zp") or _INVISIBLE.match(c):
            return f"U+{ord(c):04X}" + (f" {unicodedata.name(c)}" if unicodedata.name(c, "") else "")
    return None


def escape_invisible(text: str) -> str:
    """``text`` with every character :func:`invisible_char` refuses written as an escape (``\\n``,
    ``\\u2028``): a field named after a user's key prints on one line and shows what it holds."""
    if text.isprintable() and not _INVISIBLE.search(text):
        return text
    out = []
    for c in text:
        if invisible_char(c):
            esc = json.dumps(c)[1:-1]
            out.append(esc if esc != c else f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}")
        else:
            out.append(c)
    return "".join(out)


def _plain(o: object) -> str:
    """A value that is not JSON as a reader would say it: a TOML date or time as written, an object whose
    text is Python's default ``<object object at 0x…>`` by its type ("a Python object", "a Python set")."""
    iso = getattr(o, "isoformat", None)
    if callable(iso):
        try:
            return str(iso())
        except (TypeError, ValueError):
            pass
    text = str(o)
    if " at 0x" in text or text.startswith("<") or isinstance(o, (set, frozenset, bytes, bytearray)):
        return f"a Python {type(o).__name__}"
    return text


class UnitError(ValueError):
    """A quantity that cannot be parsed; the message says what is allowed."""


def _split(value: str, what: str, units: Mapping[str, float]) -> tuple[float, str]:
    if len(value) > 100:
        raise UnitError(f"must be a {what} like {_example(units)}, got a string of {len(value)} characters")
    m = _NUM.match(value)
    if not m:
        raise UnitError(f"must be a {what} like {_example(units)}, got {_q(value)}")
    num, unit = float(m.group(1)), m.group(2)
    if units is _RATE:
        unit = _rate_unit(unit)
    if not unit:
        raise UnitError(f"needs a unit ({', '.join(units)}), got {_q(value)}")
    if unit not in units:
        bytes_hint = "; a rate is in bits (an uppercase B is bytes): \"100Mbps\"" if units is _RATE and "B" in unit else ""
        raise UnitError(f"unknown unit {_q(unit)} for a {what}; allowed: {', '.join(units)}{bytes_hint}")
    if not math.isfinite(num * units[unit]):
        raise UnitError(f"must be finite, got {_q(value)}")
    return num, unit


def _example(units: Mapping[str, float]) -> str:
    return {id(_RATE): '"100Mbps"', id(_TIME): '"40ms"', id(_SIZE): '"1500B"'}.get(id(units), "")


def _number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UnitError(f"must be a number or a string with a unit, got {_q(value)}")
    try:
        x = float(value)
    except OverflowError:  # an integer past a float's range (10**400)
        x = math.inf
    if not math.isfinite(x):
        raise UnitError(f"must be finite, got {show_value(value)}")
    return x




def parse_rate(value: object) -> float:
    """bit/s"""
    if isinstance(value, str):
        num, unit = _split(value, "rate", _RATE)
        return num * _RATE[unit]
    return _number(value, "rate")


def parse_time(value: object) -> float:
    """seconds"""
    if isinstance(value, str):
        num, unit = _split(value, "time", _TIME)
        return num * _TIME[unit]
    return _number(value, "time")


def parse_size(value: object) -> float:
    """bytes"""
    if isinstance(value, str):
        num, unit = _split(value, "size", _SIZE)
        return num * _SIZE[unit]
    return _number(value, "size")


def parse_buffer(value: object) -> tuple[str, float]:
    """A buffer: ("pkts", n) | ("bytes", n) | ("bdp", multiple)."""
    if isinstance(value, str):
        s = value.strip()
        m = re.match(r"^(?:([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*)?BDP$", s) if len(s) <= 100 else None
        if m:
            mult = float(m.group(1)) if m.group(1) is not None else 1.0
            if not math.isfinite(mult):
                raise UnitError(f"must be finite, got {_q(value)}")
            return ("bdp", mult)
        m = re.match(r"^([-+]?\d{1,30})\s*p$", s)
        if m:
            return ("pkts", float(m.group(1)))
        try:
            return ("bytes", parse_size(s))
        except UnitError:
            raise UnitError(f'must be a packet count (500 or "500p"), a size ("375KB") or "BDP"/"2BDP", got {_q(value)}') from None
    return ("pkts", _number(value, "buffer"))


# ---- field checks for the scenario model (pydantic validators: the ValueError's message is the field's) ----

# What each kind of quantity is called in messages, and how its bounds are shown.
_SHOW_UNIT = {"time": ("s", 1.0), "rate": ("bit/s", 1.0), "size": ("B", 1.0)}


def kind_of(parse: Callable[[object], float]) -> str:
    """"time", "rate" or "size": what ``parse`` reads (for messages)."""
    kinds: dict[Callable[[object], float], str] = {parse_time: "time", parse_rate: "rate", parse_size: "size"}
    return kinds.get(parse, "quantity")


def show_bound(x: float, kind: str) -> str:
    """A limit for a message in the unit a scenario would use: "1e+06 s", "1 kbit/s", "64 B"."""
    if kind == "rate":
        for unit, scale in (("Tbit/s", 1e12), ("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
            if x >= scale:
                return f"{x / scale:g} {unit}"
        return f"{x:g} bit/s"
    unit = _SHOW_UNIT.get(kind, ("", 1.0))[0]
    return f"{x:g} {unit}".strip()


def bounded(parse: Callable[[object], float], strict: bool, lo: float = 0.0,
            hi: float = math.inf) -> Callable[[Any], Any]:
    """A field validator: parse the quantity (unit errors become field errors) and require > ``lo``
    (``strict``) or >= ``lo``, and <= ``hi``. None passes (an optional field left out)."""
    kind = kind_of(parse)

    def check(v: Any) -> Any:
        if v is None:
            return v
        try:
            x = parse(v)
        except UnitError as e:
            raise ValueError(str(e)) from None
        if (x <= 0) if strict else (x < 0):
            raise ValueError(f"must be {'>' if strict else '>='} 0, got {show_value(v)}")
        if x < lo:
            raise ValueError(f"must be >= {show_bound(lo, kind)}, got {show_value(v)}")
        if x > hi:
            raise ValueError(f"must be <= {show_bound(hi, kind)}, got {show_value(v)}")
        return v

    return check


def positive(parse: Callable[[object], float], lo: float = 0.0, hi: float = math.inf) -> Callable[[Any], Any]:
    """A field validator: the quantity ``parse`` reads must be > 0 (and within [lo, hi])."""
    return bounded(parse, True, lo, hi)


def nonneg(parse: Callable[[object], float], hi: float = math.inf) -> Callable[[Any], Any]:
    """A field validator: the quantity ``parse`` reads must be >= 0 (and <= hi)."""
    return bounded(parse, False, 0.0, hi)


def check_buffer(v: Any) -> Any:
    """A field validator: a buffer (:func:`parse_buffer`) that holds more than nothing."""
    try:
        _, x = parse_buffer(v)
    except UnitError as e:
        raise ValueError(str(e)) from None
    if not x > 0:
        raise ValueError(f"must be > 0, got {show_value(v)}")
    return v
