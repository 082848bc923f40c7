"""The documentation resolves inside the repository.

* Every relative Markdown link in README.md and docs/**/*.md points to a file or folder that exists.
* Every repository path written in backticks there (`docs/…`, `python/…`, `scenarios/…`, …) exists. Paths
  under crates/ are left out: the crates are refactored independently of the documents.
* No file cites the team's design notes or paper copies kept outside the repository: a reader has
  neither. The papers are cited through docs/algorithms/papers.md, the experiments through
  docs/experiments.md, the scenario format through docs/scenario.md, the design through
  docs/architecture.md.
* No source under crates/ cites a tracker number ("issue 3", "the issue's bound"): a reader cannot
  resolve it. An acceptance bound is cited by the document that states it.

No build is needed: these tests read files only.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
THIS = Path(__file__).resolve()

# Citations of documents outside the repository: a path into the sibling folder the notes live in, one of
# the notes by name, or a paper copy by its numbered file name. (Written so that this file does not match.)
_NOTES = "|".join(("ALGORITHMS", "EXPERIMENTS", "SCENARIO", "DESIGN", "STYLE"))
OUTSIDE = re.compile(r"\.\.[/]shared\b|\bshared[/]|\b(?:" + _NOTES + r")\.md\b|\bseeds[/](?:\d{3}|README)")
# Tracker numbers of the team's issues, which a reader of the repository cannot look up.
TRACKER = re.compile(r"\b[Ii]ssues? \d|\b[Ii]ssue's\b|\bthe issue\b")

FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]+`")
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.M)
REPO_PATH = re.compile(r"`((?:docs|python|scenarios|sweeps|validation|bench|tests)/[^`\s]*)`")
SKIP_DIRS = {".git", "target", ".venv", "results", "node_modules", "__pycache__"}


def _docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _repo_files() -> list[Path]:
    """Tracked files (untracked scratch files are not part of the repository), or a walk without git."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        files = [ROOT / p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(ROOT):
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
            files += [Path(d) / n for n in names]
    return [f for f in files if f.is_file() and f.resolve() != THIS
            and not set(f.relative_to(ROOT).parts) & SKIP_DIRS]


def _links(text: str) -> list[str]:
    text = FENCE.sub("", text)
    text = CODE_SPAN.sub("", text)
    return INLINE_LINK.findall(text) + REF_LINK.findall(text)


def _is_relative(target: str) -> bool:
    return not (target.startswith("#") or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target))


def _citations(files: list[Path], pattern: re.Pattern = OUTSIDE) -> list[str]:
    bad = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if pattern.search(line):
                bad.append(f"{f.relative_to(ROOT)}:{n}: {line.strip()}")
    return bad


def test_the_documents_exist():
    names = {p.relative_to(ROOT).as_posix() for p in _docs()}
    assert {"README.md", "docs/experiments.md", "docs/algorithms/README.md",
            "docs/algorithms/papers.md"} <= names


@pytest.mark.parametrize("doc", _docs(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(doc):
    missing = []
    for target in _links(doc.read_text(encoding="utf-8")):
        if not _is_relative(target):
            continue
        path = target.split("#", 1)[0]
        if path and not (doc.parent / path).exists():
            missing.append(target)
    assert not missing, f"{doc.relative_to(ROOT)}: links to nothing: {missing}"


def _generated(path: str) -> bool:
    """A path git ignores (`bench/out/…`, `results/…`): an output the tools write, not a source file."""
    try:
        return subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=ROOT).returncode == 0
    except OSError:
        return False


@pytest.mark.parametrize("doc", _docs(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_repository_paths_in_backticks_exist(doc):
    text = FENCE.sub("", doc.read_text(encoding="utf-8"))
    missing = []
    for written in REPO_PATH.findall(text):
        path, symbol = [*written.rstrip(".,;:)").split("::", 1), ""][:2]
        if re.search(r"[<>*{}…]", path):  # a pattern (`docs/algorithms/<name>.md`), not a path
            continue
        if (ROOT / path).exists() or _generated(path):
            continue
        if symbol and not path.endswith(".py"):  # a Rust module path inside a crate (`tests/common::f`)
            continue
        missing.append(written)
    assert not missing, f"{doc.relative_to(ROOT)}: no such file in the repository: {missing}"


def test_nothing_outside_crates_cites_documents_outside_the_repository():
    files = [f for f in _repo_files() if f.relative_to(ROOT).parts[0] != "crates"]
    bad = _citations(files)
    assert not bad, "cite the repository's documents instead:\n" + "\n".join(bad)


def test_rust_sources_cite_only_the_repository():
    files = [f for f in _repo_files() if f.relative_to(ROOT).parts[0] == "crates"]
    bad = _citations(files) + _citations(files, TRACKER)
    assert not bad, "cite the repository's documents instead:\n" + "\n".join(bad)
