"""How a scenario is rejected: :class:`ScenarioError`, one (field, message) pair per problem, and
:func:`flatten`, which turns pydantic's validation errors into such pairs (docs/scenario.md
"Rejections")."""
from __future__ import annotations

import difflib
import re
import typing
from collections.abc import Callable
from typing import Any, Optional

from pydantic import BaseModel, ValidationError

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
            e = (short_field(escape_invisible(f)), m)
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


# A field longer than this is cut: a key of 5,000 characters (an unknown key in a file, a `--set` key) is no name,
# and quoted whole it made one line of kilobytes. The same length as a trace path's (cclab.traces).
MAX_FIELD_PART = 200
_PART = re.compile(r"[^.\[\]\s:/\\]{" + str(MAX_FIELD_PART + 1) + ",}")


def short_field(field: str) -> str:
    """``field`` with each over-long part (a key, a folder name) shown as long values are, by its start and length
    (``flows[0]."kkkk…" (5000 characters)``); a field that is still long (many parts, or a key holding blanks) is
    cut whole the same way."""
    out = _PART.sub(lambda m: show_value(m.group()), field)
    return out if len(out) <= 2 * MAX_FIELD_PART else show_value(out)


def show(v: Any) -> str:
    """A value in a message as the user wrote it (JSON: strings quoted), cut when long."""
    return show_value(v)


def did_you_mean(word: Any, allowed: typing.Iterable[str]) -> str:
    """``"; did you mean `buffer`?"`` when ``word`` is a near miss of one of ``allowed`` (difflib's
    ratio >= 0.6, its default: "bufer" → "buffer", "cubci" → "cubic"), else ""."""
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, list(allowed), n=1)
    if not close and word.lower() != word:
        close = difflib.get_close_matches(word.lower(), list(allowed), n=1)
    return f"; did you mean `{close[0]}`?" if close else ""


def _unwrap(t: Any) -> Any:
    """``Annotated[X, ...]`` as X (repeatedly)."""
    while typing.get_origin(t) is typing.Annotated:
        t = typing.get_args(t)[0]
    return t


def _step(t: Any, part: Any) -> Optional[tuple[Any, bool]]:
    """The type reached from ``t`` by one part of an error's location, and whether the part was consumed
    (a union's tag is a part that only chooses the member); None when it leads nowhere known."""
    t = _unwrap(t)
    origin = typing.get_origin(t)
    if origin is typing.Union or type(t).__name__ == "UnionType":
        members = typing.get_args(t)
        for m in members:  # a discriminated union's tag (topology.dumbbell.…) or a member's name
            tag = [a.tag for a in getattr(m, "__metadata__", ()) if hasattr(a, "tag")]
            if isinstance(part, str) and (part in tag or getattr(_unwrap(m), "__name__", None) == part):
                return m, True
        for m in members:
            if m is not type(None) and _step(m, part) is not None:
                return m, False
        return None
    if origin in (list, tuple) and isinstance(part, int):
        args = typing.get_args(t)
        return (args[min(part, len(args) - 1)] if origin is tuple and args and args[-1] is not Ellipsis
                else args[0] if args else Any), True
    if origin is dict and isinstance(part, str):
        return typing.get_args(t)[1], True
    if isinstance(t, type) and issubclass(t, BaseModel) and part in t.model_fields:
        return t.model_fields[part].annotation, True
    return None


def keys_at(model: Any, loc: typing.Sequence[Any]) -> list[str]:
    """The keys a table at ``loc`` (a pydantic error location, e.g. ``("topology", "dumbbell",
    "bottleneck")``) of ``model`` may hold; [] where that is no model's table."""
    t = model
    parts = list(loc)
    while parts:
        step = _step(t, parts[0])
        if step is None:
            return []
        t, consumed = step
        if consumed:
            parts.pop(0)
    t = _unwrap(t)
    if typing.get_origin(t) is typing.Union or type(t).__name__ == "UnionType":
        t = next((_unwrap(m) for m in typing.get_args(t) if m is not type(None)), t)
    return list(t.model_fields) if isinstance(t, type) and issubclass(t, BaseModel) else []


def flatten(e: ValidationError, model: Any = None) -> list[tuple[str, str]]:
    """(field, message) pairs of a scenario model's validation error, one per field (the first, most
    specific, message), fields written as in the scenario file (``flows[1].rtt``). With ``model`` (the
    class validated), an unknown key names the nearest key that table allows ("did you mean `buffer`?")."""
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
            if model is not None:
                allowed = keys_at(model, parts[:-1])
                msg += did_you_mean(parts[-1], allowed)
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


def suggest(message: str, word: Any) -> str:
    """A message naming a bad name and ending "; allowed: a, b, c" (as the core words an unknown
    algorithm, queue or parameter), with the nearest allowed name put before the list."""
    head, sep, listed = message.partition("; allowed: ")
    hint = did_you_mean(word, [a.strip() for a in listed.split(",")]) if sep else ""
    return f"{head}{hint} Allowed: {listed}" if hint else message


def each_param_error(check: Callable[[dict[str, Any]], None], params: dict[str, Any],
                     error: type[Exception]) -> list[tuple[str, str]]:
    """Every (field, message) ``check`` (which raises ``error``, with ``field`` and ``message``, at its
    first problem) finds in ``params``: the core stops at the first bad parameter, so each is reported
    and dropped in turn until the rest pass or a problem is not one parameter's (the name of the
    algorithm or queue itself)."""
    left = dict(params)
    found: list[tuple[str, str]] = []
    while True:
        try:
            check(left)
            return found
        except error as e:
            field, message = getattr(e, "field", ""), getattr(e, "message", str(e))
            word = field if field in left else None
            found.append((field, suggest(message, word) if word is not None else message))
            if word is None:
                return found
            del left[field]


def _field_at(model: Any, loc: typing.Sequence[Any]) -> Optional[tuple[int, bool]]:
    """Where in ``loc`` the deepest key of a model's table is (its index), and whether that key may be
    left out (it has a default); None when ``loc`` ends at no model key (a model's own check)."""
    t, i, found = model, 0, None
    while i < len(loc):
        inner = _unwrap(t)
        if isinstance(inner, type) and issubclass(inner, BaseModel) and loc[i] in inner.model_fields:
            found = (i, not inner.model_fields[loc[i]].is_required())
        step = _step(t, loc[i])
        if step is None:
            break
        t, consumed = step
        i += consumed
    return found


def without_bad_keys(obj: Any, e: ValidationError, model: Any) -> Optional[Any]:
    """A copy of ``obj`` (the dict ``model`` failed to validate) without the keys ``e`` finds wrong: the
    unknown ones, and those whose value is wrong where the key may be left out (its default stands in).
    None when a problem is at a key that is required or at no key: what the file means is then not known
    well enough to check the rest of it."""
    import copy

    errs = e.errors()
    out = copy.deepcopy(obj)
    for err in errs:
        loc = list(err["loc"])
        if err["type"] == "extra_forbidden":
            at = len(loc) - 1
        else:
            where = _field_at(model, loc)
            if where is None or not where[1]:
                return None
            at = where[0]
        node = out
        for part in loc[:at]:
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and isinstance(part, int) and part < len(node):
                node = node[part]
            # (else a discriminated union's tag, "dumbbell": in the location, not in the data)
        if not isinstance(node, dict):
            return None
        node.pop(loc[at], None)
    return out


def unknown_key(word: Any, allowed: typing.Iterable[str], what: str = "key") -> str:
    """"unknown key; did you mean `buffer`?" for a near miss, else "unknown key; allowed: a, b, c"."""
    names = sorted(allowed)
    return f"unknown {what}" + (did_you_mean(word, names) or f"; allowed: {', '.join(names)}")
