"""The run protocol that ``cclab sweep`` and ``cclab reproduce`` share: how one run is done in its folder
whatever interrupts it, and how many runs go through a pool of local worker processes (or a Dask cluster).

* **One run** (:func:`attempt`, :func:`in_folder`): under the run's lock (``flock`` on ``<folder>.lock``, freed
  by the kernel when its holder dies), a run that is already finished is not run again; otherwise it is written
  into ``<folder>.partial/`` (emptied first: a killed attempt leaves one) and renamed to ``<folder>/`` when
  complete (a directory rename is atomic), so the folder holds a finished run or nothing. Two processes never
  run the same run at once, and a leftover writer can never write into a folder another process is using.
* **Workers** (:func:`worker_init`): each local worker dies with the process that started it
  (``PR_SET_PDEATHSIG`` on Linux, a watcher thread elsewhere) and ignores Ctrl-C, which its parent handles: a
  SIGKILLed ``cclab sweep`` or ``cclab reproduce`` leaves no worker running.
* **Pools** (:func:`run_local`, :func:`run_dask`): a failing run is reported (``settle(task, "failed", message,
  stderr)``) and the others go on; a worker that dies breaks the pool, its runs are retried, those that were
  under way one at a time, so a run that kills its worker twice has failed; Ctrl-C cancels the queued runs,
  lets the running ones finish (a second Ctrl-C kills them) and re-raises.
"""
from __future__ import annotations

import errno
import fcntl
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

T = TypeVar("T")

_POOL_WORKER = False  # True in a local pool worker (set by worker_init): it may take over fd 2 during a run
_STOP: Any = None  # in a local pool worker: the pool's Event, set on Ctrl-C (a run not yet started is skipped)
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
KEEP_STDERR = 20_000  # characters of a failed run's captured stderr kept (the sweep's failed.json)


def lock_of(final: Path) -> Path:
    """The lock file of the run whose folder is ``final``."""
    return final.with_name(final.name + ".lock")


def partial_of(final: Path) -> Path:
    """The folder a run of ``final`` is written into before it is renamed into place."""
    return final.with_name(final.name + ".partial")


def is_dir(final: Path) -> bool:
    """The default test of a finished run: its folder exists (it is renamed into place only when complete)."""
    return final.is_dir()


# --- Workers and locks -------------------------------------------------------------------------------------

def worker_init(parent: int, stop: Any = None) -> None:
    """Initializer of every local pool worker: the worker dies with the process that runs the pool, and leaves
    Ctrl-C to it.

    On Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` has the kernel SIGKILL the worker as soon as its parent dies,
    however the parent dies (SIGKILL included). The parent may have died between the fork and the prctl: the
    worker has then been re-parented, ``getppid()`` is no longer ``parent``, and the worker exits at once.
    Without prctl (not Linux), a daemon thread checks ``getppid()`` twice a second instead."""
    global _POOL_WORKER, _STOP
    _POOL_WORKER, _STOP = True, stop
    # Ctrl-C in a terminal signals the whole process group; the parent decides (docs/sweep.md).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    armed = False
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL), ctypes.c_ulong(0),
                               ctypes.c_ulong(0), ctypes.c_ulong(0)) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent:
        os._exit(1)
    if not armed:
        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, name="cclab-pool-parent-watch", daemon=True).start()


class Lock:
    """The exclusive lock of one run: ``flock`` on ``<run folder>.lock``, held by whichever process is running the
    run. The kernel drops a flock lock when its holder dies, so a dead holder never blocks anyone. The holder
    unlinks the file before releasing it; ``acquire`` checks that the file it locked is still the one at the
    path (the holder it waited for may have unlinked it meanwhile) and retries otherwise."""

    def __init__(self, path: Path):
        self.path = path
        self.fd: Optional[int] = None

    def acquire(self, block: bool = True) -> bool:
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
                try:
                    st, mine = os.stat(self.path), os.fstat(fd)
                    same = (st.st_ino, st.st_dev) == (mine.st_ino, mine.st_dev)
                except FileNotFoundError:
                    same = False
            except BlockingIOError:
                os.close(fd)
                return False
            except BaseException:
                os.close(fd)
                raise
            if same:
                self.fd = fd
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())  # who holds it, for people
                return True
            os.close(fd)

    def release(self) -> None:
        if self.fd is not None:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
            # Unlock explicitly: a child forked meanwhile shares the open file, and closing ours would not do.
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> Lock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


@contextmanager
def stderr_into(buf: list) -> Iterator[None]:
    """In a local pool worker, fd 2 goes to a temporary file for the block, whose text is appended to ``buf``:
    Rust's panic hook writes the panic's location (and with RUST_BACKTRACE a backtrace) there. Elsewhere (a Dask
    worker runs tasks in threads sharing fd 2) nothing is redirected."""
    if not _POOL_WORKER:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            try:
                sys.stderr.flush()
            finally:
                os.dup2(saved, 2)
                os.close(saved)
                tmp.seek(0)
                buf.append(tmp.read().decode(errors="replace"))


_PANIC_AT = re.compile(r"panicked at (\S+?):?$", re.M)


def describe(e: BaseException, stderr: str = "") -> str:
    """One message for a failed run: the exception's type and text (and where Rust panicked), no traceback."""
    name = type(e).__name__
    m = _PANIC_AT.search(stderr)
    if m and name == "PanicException":
        name += f" (Rust panic at {m.group(1)})"
    return f"{name}: {e}" if str(e) else name


# --- Runs and pools ------------------------------------------------------------------------------------------

def _remove(path: Path) -> None:
    """Removes whatever is at ``path`` (a folder tree, a file, a link, a FIFO); nothing if there is nothing."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        path.unlink(missing_ok=True)


def in_folder(final: Path, work: Callable[[Path], T], finished: Callable[[Path], bool] = is_dir) -> Optional[T]:
    """Runs ``work(partial folder)`` as the run of folder ``final``, under its lock, and renames the partial
    folder to ``final`` when ``work`` returns; returns what ``work`` returned, or None without running it when
    ``finished(final)`` says the run is already there (finished by another process meanwhile). A folder that
    ``finished`` rejects (a stale run: another spec or cclab version, damaged files) is replaced. Raises what
    ``work`` raises, the partial folder removed."""
    final.parent.mkdir(parents=True, exist_ok=True)
    part = partial_of(final)
    with Lock(lock_of(final)):
        if finished(final):
            _remove(part)
            return None
        try:
            _remove(part)
            part.mkdir()
            out = work(part)
            _remove(final)  # a stale or damaged run that ``finished`` rejected
            try:
                os.rename(part, final)
            except OSError as e:  # finished meanwhile by a process that does not take the lock (an older cclab)
                if e.errno not in (errno.ENOTEMPTY, errno.EEXIST) or not final.is_dir():
                    raise
                _remove(part)
                return None
            return out
        except BaseException:
            _remove(part)
            raise


def attempt(final: Path, work: Callable[[Path], Any], finished: Callable[[Path], bool] = is_dir) -> tuple[str, str, str]:
    """:func:`in_folder` as a pool's task (in a worker): returns ``(status, message, captured stderr)`` with
    status ``"done"`` (ran and kept), ``"exists"`` (already finished), ``"failed"``, or ``"stopped"`` (the pool
    was interrupted before this run started: nothing done). A failing run does not raise: any exception, a Rust
    panic included (pyo3's PanicException derives from BaseException, and does not pickle), becomes a
    ``"failed"`` result made of strings, so nothing a run raises can break the pool."""
    if _STOP is not None and _STOP.is_set():
        return ("stopped", "", "")
    err: list[str] = []
    try:
        with stderr_into(err):
            ran = in_folder(final, lambda part: work(part) or True, finished)
    except BaseException as e:
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        text = "".join(err)
        return ("failed", describe(e, text), text[-KEEP_STDERR:])
    if err and err[0]:
        sys.stderr.write(err[0])  # a run that succeeded keeps its warnings
    return ("done", "", "") if ran else ("exists", "", "")


@dataclass(eq=False)
class Task:
    """One run for a pool: its folder, the work that writes it (a picklable callable taking the partial folder:
    a module-level function, or a functools.partial of one), the test of a finished run, and the caller's
    ``key`` (given back to ``settle``)."""

    final: Path
    work: Callable[[Path], Any]
    finished: Callable[[Path], bool] = is_dir
    key: Any = field(default=None)


def run_local(todo: list[Task], workers: int, settle: Callable[..., None]) -> None:
    """Runs ``todo`` on local worker processes (see worker_init), calling ``settle(task, status, message,
    stderr)`` as each ends. A worker that dies (killed, out of memory) breaks the pool: the runs not settled go
    to a new pool, except those that were under way, which are retried after the others one at a time (a pool
    of one worker), so that a run whose worker dies there is known to be the one killing it: it has failed."""
    import multiprocessing as mp

    # fork: a worker's parent is this process (the getppid() check of worker_init), and it starts at once.
    ctx = mp.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    queue: list[Task] = list(todo)
    suspects: list[Task] = []
    blind = 0
    while queue or suspects:
        alone = not queue
        batch = suspects if alone else queue
        if alone:
            suspects = []
        else:
            queue = []
        lost = _pool_pass(batch, 1 if alone else workers, ctx, settle)
        if not lost:
            continue
        started = _reap(lost)
        rest = [t for t in lost if t not in started]
        if alone:
            for t in started:
                settle(t, "failed", "its worker process died while running it, twice (killed by a signal, out of "
                                    "memory, or an abort)", "")
            suspects = rest
        else:
            suspects += started
            queue = rest
        if not started:
            blind += 1
            if blind >= 3:
                for t in queue + suspects:
                    settle(t, "failed", "worker processes keep dying before they start a run", "")
                return


def _reap(lost: list[Task]) -> list[Task]:
    """After a pool broke (its workers are gone): the lost runs that were under way, their .partial removed."""
    started = []
    for t in lost:
        lock = Lock(lock_of(t.final))
        if lock.acquire(block=False):  # held: another process is running it, not ours
            try:
                part = partial_of(t.final)
                if part.exists():
                    started.append(t)
                    shutil.rmtree(part, ignore_errors=True)
            finally:
                lock.release()
    return started


def _pool_pass(batch: list[Task], workers: int, ctx: Any, settle: Callable[..., None]) -> list[Task]:
    """Runs ``batch`` in one process pool; returns the runs lost because the pool broke."""
    stop = ctx.Event()
    ex = ProcessPoolExecutor(max_workers=min(workers, len(batch)), mp_context=ctx, initializer=worker_init,
                             initargs=(os.getpid(), stop))
    futs: dict = {}
    lost: list[Task] = []
    try:
        for i, t in enumerate(batch):
            try:
                futs[ex.submit(attempt, t.final, t.work, t.finished)] = t
            except BrokenProcessPool:
                lost += batch[i:]
                break
        pending = set(futs)
        while pending:
            ready, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in ready:
                try:
                    r = f.result()
                except BrokenProcessPool:
                    lost.append(futs[f])
                    continue
                except Exception as e:  # attempt reports failures itself; this is anything else
                    r = ("failed", describe(e), "")
                settle(futs[f], *r)
    except BaseException:  # Ctrl-C: queued runs are cancelled, running ones finish and are kept
        stop.set()  # the runs already handed to a worker but not started are skipped
        for f in futs:
            f.cancel()
        try:
            ex.shutdown(wait=True, cancel_futures=True)
        except KeyboardInterrupt:  # a second Ctrl-C: stop now (the runs under way are lost, cleaned next time)
            for proc in list((getattr(ex, "_processes", None) or {}).values()):
                proc.kill()
            raise
        raise
    ex.shutdown(wait=True)
    return lost


def run_dask(todo: list[Task], scheduler: str, settle: Callable[..., None]) -> None:
    """Runs ``todo`` on the Dask cluster at ``scheduler`` through its ``concurrent.futures`` executor (each
    worker needs cclab installed), calling ``settle`` as :func:`run_local` does."""
    from .errors import ScenarioError

    try:
        from dask.distributed import Client
    except ImportError:
        raise ScenarioError([("--scheduler", "needs Dask: pip install \"dask[distributed]\"")]) from None
    client = Client(scheduler)
    try:
        ex = client.get_executor()
        futs = {ex.submit(attempt, t.final, t.work, t.finished): t for t in todo}
        pending = set(futs)
        try:
            while pending:
                ready, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in ready:
                    try:
                        r = f.result()
                    except Exception as e:  # e.g. KilledWorker: the cluster gave up on this run
                        r = ("failed", describe(e), "")
                    settle(futs[f], *r)
        except BaseException:
            for f in pending:
                f.cancel()
            raise
    finally:
        client.close()
