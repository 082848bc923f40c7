"""How a scenario is rejected: :class:`ScenarioError`, one (field, message) pair per problem, and
:func:`flatten`, which turns pydantic's validation errors into such pairs (docs/scenario.md
"Rejections")."""
from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from .topology import KINDS
from .units import escape_invisible, show_value


class ScenarioError(ValueError):
    """A scenario that cannot run. ``errors`` holds (field, message) pairs."""

    def __init__(self, errors: list[tuple[str, str]]):
        # One message per (field, problem), in the order found (a problem may be seen twice, e.g. a
        # dumbbell's bottleneck settings are checked for both directions).
        uniq: list[tuple[str, str]] = []
        for f, m in errors:
            # A field holds the user's own keys (an unknown key "a\nb", a parameter "p\u200bq"): escaped,
            # so that one problem stays one line and shows what the key holds.
            e = (escape_invisible(f), m)
            if e not in uniq:
                uniq.append(e)
        errors = uniq
        self.errors = errors
        super().__init__("\n".join(f"{f}: {m}" if f else m for f, m in errors))

    def __reduce__(self) -> tuple[Any, ...]:
        # Unpickling calls the class with ``args`` (the joined message), not the pairs: rebuild from the
        # pairs, so an error raised in a worker process reaches its parent intact (a ScenarioError that
        # failed to unpickle broke the whole process pool).
        return (type(self), (self.errors,), self.__dict__)


def show(v: Any) -> str:
    """A value in a message as the user wrote it (JSON: strings quoted), cut when long."""
    return show_value(v)


def flatten(e: ValidationError) -> list[tuple[str, str]]:
    """(field, message) pairs of a scenario model's validation error, one per field (the first, most
    specific, message), fields written as in the scenario file (``flows[1].rtt``)."""
    out = []
    for err in e.errors():
        loc = ""
        parts = list(err["loc"])
        for i, part in enumerate(parts):
            if isinstance(part, int):
                loc += f"[{part}]"
            elif part == "[key]":
                continue  # pydantic's mark of a dict key's own error: the key is the field named
            elif i > 0 and parts[i - 1] == "topology" and part in KINDS:
                continue  # the discriminated union's tag, not a key the user wrote
            else:
                loc += ("." if loc else "") + str(part)
        msg = err["msg"]
        for prefix in ("Value error, ", "Assertion failed, "):
            if msg.startswith(prefix):
                msg = msg[len(prefix):]
        kind = err["type"]
        if kind == "extra_forbidden":
            msg = "unknown key"
        elif kind == "missing":
            msg = "required"
        elif kind == "union_tag_invalid":
            loc += ".kind"
            msg = f"must be one of {', '.join(map(show, KINDS))}, got {show(err['ctx']['tag'])}"
        elif kind in ("union_tag_not_found", "model_attributes_type", "dict_type"):
            msg = f"must be a table, got {show(err.get('input'))}"
        elif kind.startswith("literal_error"):
            msg = f"{msg}, got {show(err.get('input'))}"
        elif "input" in err and kind != "value_error" and not isinstance(err["input"], (dict, list)):
            msg = f"{msg}, got {show(err['input'])}"
        out.append((loc, msg))
    # Keep one message per field (the first is the most specific).
    seen: set[str] = set()
    uniq: list[tuple[str, str]] = []
    for f, m in out:
        if f not in seen:
            seen.add(f)
            uniq.append((f, m))
    return uniq
