"""Quantities with units, as written in scenario files.

Numbers are SI base units (seconds, bit/s, bytes). Strings carry a unit: ``"100Mbps"``, ``"40ms"``,
``"375KB"``. Size prefixes are decimal (1 KB = 1000 B, as in networking); binary ones are spelled
``KiB``/``MiB``/``GiB``. A string without a unit is rejected: ``"100"`` could mean anything.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Callable

_NUM = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z/%]*)\s*$")

_RATE = {
    "bps": 1.0, "bit/s": 1.0, "kbps": 1e3, "Kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9, "Tbps": 1e12,
    "kbit/s": 1e3, "Mbit/s": 1e6, "Gbit/s": 1e9,
}
_TIME = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}
_SIZE = {
    "B": 1, "KB": 1000, "kB": 1000, "MB": 1000**2, "GB": 1000**3,
    "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3,
}


def _q(value: object) -> str:
    """A value as the user wrote it in TOML/JSON ("40 parsecs", [1], true)."""
    return json.dumps(value, default=str)


class UnitError(ValueError):
    """A quantity that cannot be parsed; the message says what is allowed."""


def _split(value: str, what: str, units: Mapping[str, float]) -> tuple[float, str]:
    m = _NUM.match(value)
    if not m:
        raise UnitError(f"must be a {what} like {_example(units)}, got {_q(value)}")
    num, unit = float(m.group(1)), m.group(2)
    if not unit:
        raise UnitError(f"needs a unit ({', '.join(units)}), got {_q(value)}")
    if unit not in units:
        raise UnitError(f"unknown unit {_q(unit)} for a {what}; allowed: {', '.join(units)}")
    return num, unit


def _example(units: Mapping[str, float]) -> str:
    return {id(_RATE): '"100Mbps"', id(_TIME): '"40ms"', id(_SIZE): '"1500B"'}.get(id(units), "")


def _number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UnitError(f"must be a number or a string with a unit, got {_q(value)}")
    x = float(value)
    if not math.isfinite(x):
        raise UnitError(f"must be finite, got {_q(value)}")
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
        m = re.match(r"^([-+]?\d*\.?\d*)\s*BDP$", s)
        if m:
            mult = float(m.group(1)) if m.group(1) not in ("", "+") else 1.0
            return ("bdp", mult)
        m = re.match(r"^([-+]?\d+)\s*p$", s)
        if m:
            return ("pkts", float(m.group(1)))
        try:
            return ("bytes", parse_size(s))
        except UnitError:
            raise UnitError(f'must be a packet count (500 or "500p"), a size ("375KB") or "BDP"/"2BDP", got {_q(value)}') from None
    return ("pkts", _number(value, "buffer"))


# ---- field checks for the scenario model (pydantic validators: the ValueError's message is the field's) ----

def bounded(parse: Callable[[object], float], strict: bool) -> Callable[[Any], Any]:
    """A field validator: parse the quantity (unit errors become field errors) and require > 0
    (``strict``) or >= 0. None passes (an optional field left out)."""

    def check(v: Any) -> Any:
        if v is None:
            return v
        try:
            x = parse(v)
        except UnitError as e:
            raise ValueError(str(e)) from None
        if (x <= 0) if strict else (x < 0):
            raise ValueError(f"must be {'>' if strict else '>='} 0, got {json.dumps(v)}")
        return v

    return check


def positive(parse: Callable[[object], float]) -> Callable[[Any], Any]:
    """A field validator: the quantity ``parse`` reads must be > 0."""
    return bounded(parse, strict=True)


def nonneg(parse: Callable[[object], float]) -> Callable[[Any], Any]:
    """A field validator: the quantity ``parse`` reads must be >= 0."""
    return bounded(parse, strict=False)


def check_buffer(v: Any) -> Any:
    """A field validator: a buffer (:func:`parse_buffer`) that holds more than nothing."""
    try:
        _, x = parse_buffer(v)
    except UnitError as e:
        raise ValueError(str(e)) from None
    if not x > 0:
        raise ValueError(f"must be > 0, got {json.dumps(v)}")
    return v
