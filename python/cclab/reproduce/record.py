"""``reproduce.json``, the file ``cclab reproduce`` writes per experiment: the checked reader every reader of
it goes through (the HTML page, docs/reproduce.md's sections), and a claim row's verdict."""
from __future__ import annotations

from pathlib import Path
from typing import Any

# A claim row's verdicts (reproduce.json's ``verdict``; older files have only ``holds``).
VERDICTS = ("holds", "does not hold", "inconclusive", "reported")


def load(path: Path) -> dict:
    """A reproduce.json, read (a regular file only) and checked to have the form ``cclab reproduce``
    writes; a ScenarioError naming the file and the first thing wrong otherwise. Every reader of the file
    (the HTML page, the Markdown sections) takes it from here, so none meets a form it does not expect."""
    from ..errors import ScenarioError
    from ..files import read_json

    rep = read_json(path, "reproduce.json")

    def text(v: Any) -> bool:
        return isinstance(v, str)

    def ints(v: Any) -> bool:
        return isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)

    def claim_ok(c: Any) -> bool:
        return (isinstance(c, dict) and all(text(c.get(k)) for k in ("claim", "paper", "measured", "criterion"))
                and c.get("holds") in (True, False, None) and "holds" in c
                and (c.get("seeds_held") is None or (ints(c["seeds_held"]) and len(c["seeds_held"]) == 2))
                and c.get("verdict") in (None, *VERDICTS) and (c.get("seeds") is None or ints(c["seeds"])))

    checks = (
        (isinstance(rep, dict), f"the file must be a JSON object, not {type(rep).__name__}"),
        (isinstance(rep, dict) and text(rep.get("id")) and rep["id"] != "", "`id` must be an experiment id"),
        (isinstance(rep, dict) and all(text(rep.get(k, "")) for k in ("paper", "title", "scenario", "notes",
                                                                       "explanation")),
         "`paper`, `title`, `scenario`, `notes` and `explanation` must be text"),
        (isinstance(rep, dict) and all(text(rep.get(k)) for k in ("paper", "title", "scenario")),
         "`paper`, `title` and `scenario` are required"),
        (isinstance(rep, dict) and isinstance(rep.get("quick", False), bool), "`quick` must be true or false"),
        (isinstance(rep, dict) and all(ints(rep.get(k, [])) for k in ("seeds", "seeds_requested")),
         "`seeds` must be a list of integers"),
        (isinstance(rep, dict) and isinstance(rep.get("claims"), list) and all(claim_ok(c) for c in rep["claims"]),
         "`claims` must be a list of rows with text `claim`, `paper`, `measured`, `criterion` and `holds` true, "
         "false or null"),
        (isinstance(rep, dict) and isinstance(rep.get("runs"), dict)
         and all(isinstance(v, list) and all(isinstance(x, dict) for x in v) for v in rep["runs"].values()),
         "`runs` must map each variant to a list of summaries"),
    )
    for ok, why in checks:
        if not ok:
            raise ScenarioError([(str(path), f"is not a reproduce.json as cclab writes it: {why}; it may be "
                                             "truncated or edited")])
    return rep


def verdict(c: dict) -> str:
    """A row's verdict word: holds / does not hold / inconclusive / reported (reproduce.json written before
    ``verdict`` existed has only ``holds``)."""
    return c.get("verdict") or {True: "holds", False: "does not hold", None: "reported"}[c["holds"]]
