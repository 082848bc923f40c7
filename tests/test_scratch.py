"""Scratch folders (python/cclab/scratch.py): a killed owner's folder is removed by the next owner, a live
owner's never; pool workers' runs (executor.produce) use them, so a SIGKILLed sweep leaves nothing in the
temporary folder for good (before: one empty ``cclab-run-*`` folder per run in flight, 202 of them in
/tmp after a day of tests)."""
import os
import signal
import subprocess
import sys
import tempfile

import pytest

from cclab import executor, scratch

_HOLD = ("import sys, time; from cclab import scratch; d, fd = scratch.make(sys.argv[1]); "
         "print(d, flush=True); time.sleep(60)")


@pytest.fixture
def tmpdir_here(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    return tmp_path


def test_a_live_owners_folder_stays_and_a_killed_ones_goes(tmpdir_here):
    p = subprocess.Popen([sys.executable, "-c", _HOLD, "cclab-test-"], stdout=subprocess.PIPE, text=True)
    try:
        held = p.stdout.readline().strip()
        assert held.startswith(str(tmpdir_here / "cclab-test-"))
        assert scratch.clean_stale("cclab-test-") == []  # its owner is alive
        mine, fd = scratch.make("cclab-test-")
        assert {str(x) for x in tmpdir_here.iterdir()} == {held, str(mine)}
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    # The owner is gone, its lock with it: the next owner with the prefix removes its folder, not its own.
    assert [str(x) for x in scratch.clean_stale("cclab-test-")] == [held]
    assert list(tmpdir_here.iterdir()) == [mine]
    os.close(fd)


def _age(folder, seconds=scratch.STALE_AFTER_S + 1):
    t = os.stat(folder).st_mtime - seconds
    os.utime(folder, (t, t))


def test_a_folder_being_made_is_never_taken_for_a_stale_one(tmpdir_here, monkeypatch):
    """Between mkdtemp and the owner's lock a folder has no LOCK: left alone for a minute. LOCK itself only
    ever appears locked: another owner's clean_stale run at the moment it is published finds it held (under
    two concurrent sweeps a LOCK created and then locked in place was once found free, and a live run's
    folder removed: FileNotFoundError in the run, 2026-11-29)."""
    (tmpdir_here / "cclab-test-nolock").mkdir()
    assert scratch.clean_stale("cclab-test-") == []
    _age(tmpdir_here / "cclab-test-nolock")
    assert [p.name for p in scratch.clean_stale("cclab-test-")] == ["cclab-test-nolock"]
    seen = []
    real_rename = os.rename

    def rename_and_clean(a, b):  # another owner cleans at the very moment LOCK appears
        real_rename(a, b)
        seen.append(scratch.clean_stale("cclab-test-"))

    monkeypatch.setattr(scratch.os, "rename", rename_and_clean)
    d, fd = scratch.make("cclab-test-")
    assert seen == [[]] and (d / scratch.LOCK).exists()
    os.close(fd)


def test_a_pool_run_leaves_no_scratch_and_removes_a_killed_workers(tmpdir_here):
    p = subprocess.Popen([sys.executable, "-c", _HOLD, executor.SCRATCH_PREFIX], stdout=subprocess.PIPE, text=True)
    stale = p.stdout.readline().strip()
    p.send_signal(signal.SIGKILL)
    p.wait()
    status, msg, _, files = executor.produce(lambda folder: (folder / "summary.json").write_text("{}"))
    assert status == "done", msg
    assert files == {"summary.json": b"{}"}
    assert list(tmpdir_here.iterdir()) == []  # its own scratch removed, and the killed worker's (stale)
    assert stale
