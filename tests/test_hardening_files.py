"""Results files that are corrupted, missing or not files at all (issue 28, section 2, items 5 and 10).

`cclab plot` and `cclab report` read what earlier commands wrote (sweep.json, runs/<id>/point.json and
summary.json, reproduce.json): any of them may be truncated by a full disk, edited by hand, or replaced by
something else in a shared folder. Each answer is the error contract's: exit code 2 and one ``error:`` line
naming the file, never a traceback or "internal error". A FIFO (named pipe) where a file belongs is refused
without being opened for reading, so nothing waits for a writer that never comes; every such case runs in
a child process with a timeout."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from sweepfile import base_toml

from cclab import reproduce as rp, sweep as sw
from cclab.cli import cli

BASE = base_toml("hard", "1.5s", "0.5s")
SWEEP = "seeds = 2\n" + BASE + '[grid]\n"topology.bottleneck.rate" = ["5Mbps", "10Mbps"]\n'


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A finished sweep (2 grid points x 2 seeds) and a finished quick reproduction of M1 (which draws
    figures, so the report reads its runs' summary.json too)."""
    root = tmp_path_factory.mktemp("made")
    f = root / "s.toml"
    f.write_text(SWEEP)
    sw.run(f, root / "sweep", workers=1)
    rp.reproduce("M1", root / "rep" / "M1", quick=True, seeds=(1,))
    return root


def _swap_types(v):
    """A JSON value of another type: what a hand edit or another program's file may hold."""
    if isinstance(v, dict):
        return {k: _swap_types(x) for k, x in v.items()} if v else []
    if isinstance(v, list):
        return {"x": 1} if v else 0
    if isinstance(v, str):
        return 7
    return "seven"


# How a file can be wrong; each maps the good bytes to the bad ones (None: a directory takes its place).
CORRUPTIONS = {
    "truncated": lambda good: good[: len(good) // 2],
    "empty": lambda good: b"",
    "not-json": lambda good: b"this is not JSON {\n",
    "wrong-top-type": lambda good: b"[1, 2, 3]\n",
    "missing-keys": lambda good: b"{}\n",
    "wrong-field-types": lambda good: json.dumps(_swap_types(json.loads(good))).encode(),
    "nulls": lambda good: json.dumps(dict.fromkeys(json.loads(good))).encode(),
    "binary": lambda good: bytes(range(256)) * 3,
    "directory": lambda good: None,
}


def _corrupt(path: Path, how: str) -> None:
    bad = CORRUPTIONS[how](path.read_bytes())
    path.unlink()
    if bad is None:
        path.mkdir()
        (path / "x").write_text("{}")
    else:
        path.write_bytes(bad)


def _first_run(folder: Path) -> Path:
    return sorted(p for p in (folder / "runs").iterdir() if p.is_dir())[0]


def _check_refused(r, name: str) -> None:
    out = r.output
    assert r.exit_code == 2, (r.exit_code, out, r.exception)
    assert "Traceback" not in out and "internal error" not in out, out
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and name in errors[0], out


# (command, file): the files each command reads.
PLOT_FILES = ("sweep.json", "point.json", "summary.json")
REPORT_FILES = ("reproduce.json", "summary.json")


@pytest.mark.parametrize("how", list(CORRUPTIONS))
@pytest.mark.parametrize("name", PLOT_FILES)
def test_plot_refuses_a_corrupted_file_naming_it(made, tmp_path, name, how):
    # Before: 19 of 33 such cases printed a traceback or "internal error" (KeyError, TypeError,
    # JSONDecodeError, IsADirectoryError, UnicodeDecodeError).
    folder = tmp_path / "sweep"
    shutil.copytree(made / "sweep", folder)
    target = folder / name if name == "sweep.json" else _first_run(folder) / name
    _corrupt(target, how)
    r = CliRunner().invoke(cli, ["plot", str(folder)])
    _check_refused(r, str(target))


@pytest.mark.parametrize("how", list(CORRUPTIONS))
@pytest.mark.parametrize("name", REPORT_FILES)
def test_report_refuses_a_corrupted_file_naming_it(made, tmp_path, name, how):
    folder = tmp_path / "rep"
    shutil.copytree(made / "rep", folder)
    exp = folder / "M1"
    target = exp / name if name == "reproduce.json" else sorted(exp.glob("*/summary.json"))[0]
    _corrupt(target, how)
    r = CliRunner().invoke(cli, ["report", str(folder)])
    _check_refused(r, str(target))
    assert not (folder / "report.html").exists()


@pytest.mark.parametrize("cmd", ["plot", "report"])
@pytest.mark.parametrize("bad", ["dir", "parent-is-a-file", "fifo", "empty", "read-only", "format"])
def test_bad_out_values_exit_2_naming_out(made, tmp_path, cmd, bad):
    folder = tmp_path / "f"
    shutil.copytree(made / ("sweep" if cmd == "plot" else "rep"), folder)
    suffix = ".png" if cmd == "plot" else ".html"
    target = {"dir": str(tmp_path), "parent-is-a-file": str(tmp_path / "afile" / f"x{suffix}"),
              "fifo": str(tmp_path / f"pipe{suffix}"), "empty": "",
              "read-only": str(tmp_path / "ro" / f"x{suffix}"), "format": str(tmp_path / "x.nosuchformat")}[bad]
    if bad == "parent-is-a-file":
        (tmp_path / "afile").write_text("")
    if bad == "format" and cmd == "report":
        pytest.skip("the report is HTML whatever the file's suffix")
    if bad == "fifo":
        os.mkfifo(target)
    if bad == "read-only":
        (tmp_path / "ro").mkdir()
        os.chmod(tmp_path / "ro", 0o500)
        if os.access(tmp_path / "ro", os.W_OK):
            pytest.skip("running as root: a read-only folder is writable")
    args = [cmd, str(folder), "--out", target]
    # A child process with a timeout: writing into a FIFO with no reader would block forever.
    r = subprocess.run([sys.executable, "-m", "cclab.cli", *args], capture_output=True, text=True, timeout=60)
    err = r.stderr
    assert r.returncode == 2, (r.returncode, err)
    assert "Traceback" not in err and "internal error" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "--out" in lines[0], err


@pytest.mark.parametrize("cmd", ["plot", "report"])
def test_out_in_a_missing_folder_creates_it(made, tmp_path, cmd):
    folder = tmp_path / "f"
    shutil.copytree(made / ("sweep" if cmd == "plot" else "rep"), folder)
    target = tmp_path / "no" / "such" / ("x.png" if cmd == "plot" else "x.html")
    r = CliRunner().invoke(cli, [cmd, str(folder), "--out", str(target)])
    assert r.exit_code == 0, r.output
    assert target.stat().st_size > 0


def test_a_resumed_sweep_redoes_a_corrupted_finished_run(made, tmp_path):
    # Before: the corrupted run counted as finished, and every rerun failed writing the table (KeyError /
    # JSONDecodeError), forever.
    folder = tmp_path / "sweep"
    shutil.copytree(made / "sweep", folder)
    f = tmp_path / "s.toml"
    f.write_text(SWEEP)
    victim = _first_run(folder)
    _corrupt(victim / "summary.json", "truncated")
    _corrupt(_first_run(folder).parent / sorted(os.listdir(folder / "runs"))[-1] / "point.json", "not-json")
    before = sw.table(made / "sweep")
    notes = []
    t = sw.run(f, folder, workers=1, on_note=notes.append)
    assert len(t) == len(before) == 4
    # The redone runs are the same simulation (deterministic), so the table is the same.
    pd_cols = ["run", "seed", "goodput_mbps", "jain"]
    assert t[pd_cols].equals(before[pd_cols])
    assert len([n for n in notes if "redone" in n]) == 2, notes
    assert json.loads((victim / "summary.json").read_text())["flows"]


# --- FIFOs and odd paths (item 10) ---------------------------------------------------------------------------

def _scenario(trace: str) -> str:
    """The sweep's base scenario as a scenario file, its bottleneck driven by capacity trace ``trace``."""
    return (BASE.replace("[base]\n", "").replace("[[base.", "[[").replace("[base.", "[")
            .replace('rate = "10Mbps"', f"trace = {json.dumps(trace)}"))


def _cclab(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "cclab.cli", *args], capture_output=True, text=True, timeout=30,
                          cwd=cwd)


def _refused_not_regular(r, path):
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    assert str(path) in r.stderr and "is not a regular file" in r.stderr, r.stderr


@pytest.mark.parametrize("cmd", ["validate", "run"])
def test_a_fifo_as_scenario_is_refused_not_waited_on(tmp_path, cmd):
    # Before: `open` waited for a writer forever.
    p = tmp_path / "s.toml"
    os.mkfifo(p)
    _refused_not_regular(_cclab(cmd, str(p), *(["--out", str(tmp_path / "o")] if cmd == "run" else [])), p)


@pytest.mark.parametrize("cmd", ["validate", "run"])
def test_a_fifo_as_trace_is_refused_not_waited_on(tmp_path, cmd):
    fifo = tmp_path / "cap.trace"
    os.mkfifo(fifo)
    p = tmp_path / "s.toml"
    p.write_text(_scenario(str(fifo)))
    _refused_not_regular(_cclab(cmd, str(p), *(["--out", str(tmp_path / "o")] if cmd == "run" else [])), fifo)


@pytest.mark.parametrize("name", ["reproduce.json", "summary.json"])
def test_a_fifo_in_a_reproduce_folder_is_refused(made, tmp_path, name):
    folder = tmp_path / "rep"
    shutil.copytree(made / "rep", folder)
    target = folder / "M1" / name if name == "reproduce.json" else sorted(folder.glob("M1/*/summary.json"))[0]
    target.unlink()
    os.mkfifo(target)
    _refused_not_regular(_cclab("report", str(folder)), target)


def test_a_fifo_as_the_markdown_document_is_refused(made, tmp_path):
    doc = tmp_path / "doc.md"
    os.mkfifo(doc)
    _refused_not_regular(_cclab("report", str(made / "rep"), "-o", str(tmp_path / "r.html"), "--markdown", str(doc)),
                         doc)


@pytest.mark.parametrize("name", PLOT_FILES)
def test_a_fifo_in_a_sweep_folder_is_refused(made, tmp_path, name):
    folder = tmp_path / "sweep"
    shutil.copytree(made / "sweep", folder)
    target = folder / name if name == "sweep.json" else _first_run(folder) / name
    target.unlink()
    os.mkfifo(target)
    _refused_not_regular(_cclab("plot", str(folder)), target)


def test_a_trace_under_an_unknown_users_home_names_the_field(tmp_path):
    # Before: "internal error: RuntimeError: Could not determine home directory".
    p = tmp_path / "s.toml"
    p.write_text(_scenario("~nosuchuser-cclab/x.trace"))
    r = _cclab("validate", str(p))
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    line = next(x for x in r.stderr.splitlines() if x.startswith("error:"))
    assert "topology.bottleneck.trace" in line and "nosuchuser-cclab" in line, r.stderr
