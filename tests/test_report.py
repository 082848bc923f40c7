"""`cclab report`: the HTML page and docs/reproduce.md's results section from reproduce.json files, without
rerunning anything. The page is checked in a real headless Chromium (the OS package, which `make test`
installs): it loads with no script error and no network request, every figure has a non-zero size, every
experiment has its table with one row per claim, and the filter hides the claims that hold."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from cclab import reproduce as rp
from cclab.reproduce import report as rr

# Experiments whose figures the page must carry (one of each paper's that draws some), quick, two seeds.
IDS = ("M1", "B1", "L5", "D1")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("reproduce")
    for x in IDS:
        rp.reproduce(x, root / x, quick=True, seeds=(1, 2))
    return root


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "cclab.cli", *args], capture_output=True, text=True)


def test_report_writes_html_and_markdown_from_the_files(folder, tmp_path):
    doc = tmp_path / "reproduce.md"
    doc.write_text(f"# prose before\n\n{rr.BEGIN}\nstale table\n{rr.END}\n\nprose after\n")
    r = _cli("report", str(folder), "--markdown", str(doc))
    assert r.returncode == 0, r.stderr
    page = (folder / "report.html").read_text()
    text = doc.read_text()
    assert "stale table" not in text and text.startswith("# prose before") and text.rstrip().endswith("prose after")
    for x in IDS:
        rep = json.loads((folder / x / "reproduce.json").read_text())
        assert f"### {x}: {rep['title']}" in text
        for c in rep["claims"]:  # every row, in both outputs, from the file
            assert c["measured"].replace("|", "\\|") in text
            assert c["measured"].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in page
    # Self-contained: nothing fetched from elsewhere.
    assert "src='http" not in page and 'src="http' not in page and "<link" not in page
    # Rebuilding touches no run: no run folder changes.
    before = sorted((p, p.stat().st_mtime_ns) for p in folder.rglob("summary.json"))
    assert _cli("report", str(folder), "-o", str(tmp_path / "again.html")).returncode == 0
    assert sorted((p, p.stat().st_mtime_ns) for p in folder.rglob("summary.json")) == before


def test_report_refuses_a_folder_without_results(tmp_path):
    r = _cli("report", str(tmp_path))
    assert r.returncode == 2 and "folder:" in r.stderr and "reproduce.json" in r.stderr
    # A Markdown file without the markers is refused, not overwritten.
    (tmp_path / "B1").mkdir()
    rp.reproduce("B1", tmp_path / "B1", quick=True, seeds=(1,))
    doc = tmp_path / "x.md"
    doc.write_text("no markers")
    r = _cli("report", str(tmp_path), "--markdown", str(doc))
    assert r.returncode == 2 and "markdown:" in r.stderr and doc.read_text() == "no markers"

def _chromium():
    for name in (os.environ.get("CCLAB_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def test_report_in_headless_chromium(folder):
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium on this machine (`make test` installs Debian's chromium when run as root)")
    pw = pytest.importorskip("playwright.sync_api", reason="playwright is installed by `make setup`")
    assert _cli("report", str(folder)).returncode == 0
    url = (folder / "report.html").resolve().as_uri()
    with pw.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        page = browser.new_page()
        errors, requests = [], []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("request", lambda r: requests.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
        page.goto(url, wait_until="load")
        imgs = page.eval_on_selector_all(
            "img", "els => els.map(e => [e.alt, e.naturalWidth, e.naturalHeight, e.getBoundingClientRect().width])")
        tables = dict(page.eval_on_selector_all(
            "section.experiment", "els => els.map(e => [e.id, e.querySelectorAll('table.claims tbody tr').length])"))
        visible_yes = "els => els.filter(e => e.offsetParent !== null).length"
        shown = page.eval_on_selector_all("tr.yes", visible_yes)
        page.check("#only-no")
        hidden = page.eval_on_selector_all("tr.yes", visible_yes)
        browser.close()
    assert errors == [] and requests == []
    expected_figs = {name for x in IDS for name in (rp.experiments()[x.lower()].figures(
        rr._runs(folder / x, json.loads((folder / x / "reproduce.json").read_text()))) or {})}
    assert {a for a, *_ in imgs} == expected_figs and len(imgs) == len(expected_figs)
    assert all(w > 0 and h > 0 and shown_w > 0 for _, w, h, shown_w in imgs), imgs
    for x in IDS:
        assert tables[x] == len(json.loads((folder / x / "reproduce.json").read_text())["claims"])
    assert shown > 0 and hidden == 0
