"""The run protocol that ``cclab sweep`` and ``cclab reproduce`` share: how one run is done in its folder
whatever interrupts it, and how many runs go through a pool of local worker processes (or a Dask cluster).

* **Where runs are made and kept** (:func:`produce`, :func:`commit`): a worker makes a run in a scratch folder of
  its own (a locked scratch folder it removes, python/cclab/scratch.py) and returns the run's files as bytes; the driver (the
  process that launched the pool) writes them into its output folder. Workers need no shared filesystem and
  write nothing outside their scratch space: the same code path for local processes and Dask workers. The
  driver keeps at most a window of runs in flight (a few per worker) and writes each run's files as it arrives,
  so its memory does not grow with the number of runs.
* **One run** (:func:`commit`, :func:`in_folder`): under the run's lock (``flock`` on ``<folder>.lock``, freed
  by the kernel when its holder dies; a pool's driver takes it before submitting the run and keeps it until
  the files are written), a run that is already finished is not run again; otherwise it is written into
  ``<folder>.partial/`` (emptied first: a killed attempt leaves one) and renamed to ``<folder>/`` when complete
  (a directory rename is atomic), so the folder holds a finished run or nothing. Two processes never run the
  same run at once.
* **Workers** (:func:`worker_init`): each local worker dies with the process that started it
  (``PR_SET_PDEATHSIG`` on Linux, a watcher thread elsewhere) and ignores Ctrl-C, which its parent handles: a
  SIGKILLed ``cclab sweep`` or ``cclab reproduce`` leaves no worker running.
* **Pools** (:func:`run_local`, :func:`run_dask`): a failing run is reported (``settle(task, "failed", message,
  stderr)``) and the others go on; a local worker that dies breaks the pool, its runs are retried, those that
  were under way one at a time, so a run that kills its worker twice has failed (on Dask the scheduler
  reschedules a dead worker's runs); Ctrl-C cancels the queued runs, lets the running local ones finish (a
  second Ctrl-C kills them) and re-raises.
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
from collections import deque
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, CancelledError, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

from . import scratch

T = TypeVar("T")

_POOL_WORKER = False  # True in a local pool worker (set by worker_init): it may take over fd 2 during a run
_STOP: Any = None  # in a local pool worker: the pool's Event, set on Ctrl-C (a run not yet started is skipped)
_STARTED: Any = None  # in a local pool worker: the pool's shared array of started runs (see run_local)
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
SCRATCH_PREFIX = "cclab-run-"
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

def worker_init(parent: int, stop: Any = None, started: Any = None) -> None:
    """Initializer of every local pool worker: the worker dies with the process that runs the pool, and leaves
    Ctrl-C to it.

    On Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` has the kernel SIGKILL the worker as soon as its parent dies,
    however the parent dies (SIGKILL included). The parent may have died between the fork and the prctl: the
    worker has then been re-parented, ``getppid()`` is no longer ``parent``, and the worker exits at once.
    Without prctl (not Linux), a daemon thread checks ``getppid()`` twice a second instead."""
    global _POOL_WORKER, _STOP, _STARTED
    _POOL_WORKER, _STOP, _STARTED = True, stop, started
    # Ctrl-C in a terminal signals the whole process group; the parent decides (docs/sweep.md).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not die_with(parent):
        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, name="cclab-pool-parent-watch", daemon=True).start()


def die_with(parent: int) -> bool:
    """Has the kernel SIGKILL this process when its parent dies (``prctl(PR_SET_PDEATHSIG)``, Linux): True if
    armed. A parent that died between the fork and the prctl is seen by ``getppid()`` no longer being
    ``parent``: this process then exits at once."""
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
    return armed


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
        placed, out = _fill_and_place(final, work)
        return out if placed else None


def _fill_and_place(final: Path, fill: Callable[[Path], T]) -> tuple[bool, T]:
    """``fill(<final>.partial)`` into a fresh partial folder, then the partial folder renamed to ``final``
    (replacing a stale or damaged run there): (True, what ``fill`` returned), or (False, …) when another
    process finished ``final`` meanwhile without taking the lock (an older cclab). Raises what ``fill``
    raises, the partial folder removed."""
    part = partial_of(final)
    try:
        _remove(part)  # a killed process's leftover
        part.mkdir()
        out = fill(part)
        _remove(final)  # a stale or damaged run that ``finished`` rejected
        try:
            os.rename(part, final)
        except OSError as e:
            if e.errno not in (errno.ENOTEMPTY, errno.EEXIST) or not final.is_dir():
                raise
            _remove(part)
            return False, out
        return True, out
    except BaseException:
        _remove(part)
        raise


# --- Where a run is made and where it is kept -----------------------------------------------------------------
# A worker makes a run in its own scratch folder and hands its files back as bytes; the driver (the process
# that launched the pool) writes them into its output folder. Workers therefore need no shared filesystem (a
# Dask cluster's normally do not share the driver's) and write nothing outside their scratch space; the
# lock, the partial folder and the rename are the driver's, on its own disk, for local and Dask workers alike.

Payload = dict[str, bytes]  # a run's files: path relative to its folder -> contents


def pack(folder: Path) -> Payload:
    """Every regular file under ``folder`` as (relative POSIX path -> bytes). A run writes only regular files
    and folders; anything else (a link, a FIFO) is refused rather than followed."""
    out: Payload = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            p = Path(root) / name
            if p.is_symlink() or not (p.is_dir() or p.is_file()):
                raise OSError(f"{p.relative_to(folder)} in a run's folder is not a regular file or folder")
        for name in sorted(files):
            p = Path(root) / name
            out[p.relative_to(folder).as_posix()] = p.read_bytes()
    return out


def unpack(payload: Payload, folder: Path) -> None:
    """Writes ``payload`` (see :func:`pack`) into the empty folder ``folder``. A path that would leave the folder
    (absolute, ``..``) is refused: the bytes come from another machine."""
    for rel, data in payload.items():
        parts = Path(rel).parts
        if not isinstance(data, bytes) or not parts or Path(rel).is_absolute() or ".." in parts:
            raise ValueError(f"a worker returned a file named {rel[:200]!r}: not a path inside the run's folder")
        dest = folder.joinpath(*parts)
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(dest, "xb") as f:
            f.write(data)


def produce(work: Callable[[Path], Any], index: int = -1) -> tuple[str, str, str, Optional[Payload]]:
    """A pool's task (in a worker): runs ``work(folder)`` in a scratch folder of the worker's own
    (:func:`cclab.scratch.folder`, removed before returning) and returns ``(status, message, captured
    stderr, files)``: status ``"done"`` with the run's files (:func:`pack`), ``"failed"`` (files None), or
    ``"stopped"`` (the local pool was interrupted before this run started: nothing done). A failing run does not
    raise: any exception, a Rust panic included (pyo3's PanicException derives from BaseException, and does not
    pickle), becomes a ``"failed"`` result made of strings, so nothing a run raises can break the pool.
    ``index``: the run's slot in the local pool's record of started runs (see :func:`run_local`)."""
    if _STOP is not None and _STOP.is_set():
        return ("stopped", "", "", None)
    if _STARTED is not None and index >= 0:
        _STARTED[index] = 1
    err: list[str] = []
    try:
        # A scratch folder of the worker's own, locked while the run is under way: the scratch of a worker
        # that was SIGKILLed is removed by the next run on that machine (python/cclab/scratch.py).
        with stderr_into(err), scratch.folder(SCRATCH_PREFIX) as tmp:
            folder = tmp / "run"
            folder.mkdir()
            work(folder)
            files = pack(folder)
    except BaseException as e:
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        text = "".join(err)
        return ("failed", describe(e, text), text[-KEEP_STDERR:], None)
    if err and err[0]:
        sys.stderr.write(err[0])  # a run that succeeded keeps its warnings
    return ("done", "", "", files)


def commit(final: Path, files: Payload, finished: Callable[[Path], bool] = is_dir) -> str:
    """Writes a run's ``files`` into ``<final>.partial/`` and renames it to ``final`` (the caller holds the
    run's lock): ``"done"``, or ``"exists"`` without writing when ``finished(final)`` says the run is already
    there. A folder that ``finished`` rejects (a stale or damaged run) is replaced. Raises what writing raises,
    the partial folder removed."""
    if finished(final):
        _remove(partial_of(final))
        return "exists"
    placed, _ = _fill_and_place(final, lambda part: unpack(files, part))
    return "done" if placed else "exists"


@dataclass(eq=False)
class Task:
    """One run for a pool: its folder (in the driver's filesystem), the work that writes the run into a folder
    it is given (a picklable callable: a module-level function, or a functools.partial of one; on a worker it
    is given a scratch folder), the test of a finished run (run in the driver), and the caller's ``key`` (given
    back to ``settle``)."""

    final: Path
    work: Callable[[Path], Any]
    finished: Callable[[Path], bool] = is_dir
    key: Any = field(default=None)


class _Driver:
    """The driver's side of a pool: which runs may be sent (their lock taken, not finished), and the results
    landing. A run's lock is held by the driver from before its task is submitted until its files are written
    (or it failed): two drivers using one folder never run the same run at once, and a driver that dies drops
    its locks with it. A run whose lock another live process holds is put aside and waited for once nothing
    else is left (it is then usually finished: "exists")."""

    def __init__(self, settle: Callable[..., None]):
        self.settle = settle
        self.busy: list[Task] = []
        self.locks: dict[Task, Lock] = {}

    def take(self, source: deque) -> Optional[Task]:
        """The next run of ``source`` to submit, its lock held; None when ``source`` is empty."""
        while source:
            t = source.popleft()
            lock = Lock(lock_of(t.final))
            try:
                t.final.parent.mkdir(parents=True, exist_ok=True)
                if not lock.acquire(block=False):
                    self.busy.append(t)
                    continue
            except OSError as e:
                self.settle(t, "failed", f"its folder {t.final} cannot be written: {describe(e)}", "")
                continue
            if t.finished(t.final):
                _remove(partial_of(t.final))
                lock.release()
                self.settle(t, "exists", "", "")
                continue
            self.locks[t] = lock
            return t
        return None

    def wait_busy(self, source: deque) -> bool:
        """With nothing in flight and ``source`` empty: waits until the first run put aside is free (its holder
        finished it or died) and puts it back in ``source``. False if none is put aside. Holding no lock while
        waiting, two drivers cannot wait for each other."""
        if not self.busy:
            return False
        t = self.busy.pop(0)
        lock = Lock(lock_of(t.final))
        lock.acquire()
        lock.release()
        source.append(t)
        return True

    def land(self, t: Task, result: tuple) -> None:
        """A run's result from a worker: its files written (:func:`commit`), its lock released, then settled."""
        status, message, stderr, files = result
        try:
            if status == "done":
                try:
                    status = commit(t.final, files, t.finished)
                except Exception as e:
                    status, message = "failed", f"its results could not be written into {t.final}: {describe(e)}"
        finally:
            self.drop(t)
        self.settle(t, status, message, stderr)

    def drop(self, t: Task) -> None:
        """Releases the lock of a run that is not landing (lost with its worker, cancelled)."""
        lock = self.locks.pop(t, None)
        if lock is not None:
            lock.release()

    def drop_all(self) -> None:
        for t in list(self.locks):
            self.drop(t)


def _fill(driver: _Driver, source: deque, futs: dict, window: int, submit: Callable[[Task], Any]) -> None:
    """Submits runs of ``source`` until ``window`` are in flight (``futs``: future -> task)."""
    while len(futs) < window:
        t = driver.take(source)
        if t is None:
            return
        try:
            futs[submit(t)] = t
        except BaseException:
            driver.drop(t)
            source.appendleft(t)
            raise


def _land_ready(driver: _Driver, futs: dict, lost: list[Task], timeout: Optional[float] = None) -> None:
    """Waits until some run in flight ends and lands it (its files written, then the result dropped: the driver
    holds at most the window's results at once). A run lost because the local pool broke goes to ``lost``."""
    ready, _ = wait(list(futs), timeout=timeout, return_when=FIRST_COMPLETED)
    for f in ready:
        t = futs.pop(f)
        try:
            r = f.result()
        except (BrokenProcessPool, CancelledError):
            driver.drop(t)
            lost.append(t)
            continue
        except Exception as e:  # produce reports failures itself; this is e.g. Dask's KilledWorker
            r = ("failed", describe(e), "", None)
        driver.land(t, r)
        del r


def _drive(driver: _Driver, source: deque, futs: dict, window: Callable[[], int],
           submit: Callable[[Task], Any]) -> list[Task]:
    """Runs every task of ``source`` (and those put aside, see _Driver) through ``submit``, at most ``window()``
    in flight; returns the runs lost because the local pool broke (their locks released)."""
    lost: list[Task] = []
    while True:
        if not lost:
            try:
                _fill(driver, source, futs, window(), submit)
            except BrokenProcessPool:
                pass  # the futures in flight say which runs were lost
        if not futs:
            if lost or not driver.wait_busy(source):
                return lost
            continue
        _land_ready(driver, futs, lost)
        if lost:  # a broken pool: the other futures fail at once; collect them and leave
            while futs:
                _land_ready(driver, futs, lost)


# --- Pools -----------------------------------------------------------------------------------------------------

def run_local(todo: list[Task], workers: int, settle: Callable[..., None]) -> None:
    """Runs ``todo`` on local worker processes (see worker_init), calling ``settle(task, status, message,
    stderr)`` as each ends; the workers make each run in their scratch folder and the files are written here.
    A worker that dies (killed, out of memory) breaks the pool: the runs not settled go to a new pool, except
    those that were under way (each worker marks the runs it starts in a shared array), which are retried after
    the others one at a time (a pool of one worker), so that a run whose worker dies there is known to be the one
    killing it: it has failed."""
    import multiprocessing as mp

    # fork: a worker's parent is this process (the getppid() check of worker_init), and it starts at once.
    ctx = mp.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    driver = _Driver(settle)
    queue: deque = deque(todo)
    suspects: deque = deque()
    blind = 0
    while queue or suspects or driver.busy:
        alone = not queue and bool(suspects)
        batch = suspects if alone else queue
        if alone:
            suspects = deque()
        else:
            queue = deque()
        lost, started = _pool_pass(driver, batch, 1 if alone else workers, ctx)
        if not lost:
            continue
        rest = deque(t for t in lost if t not in started)
        if alone:
            for t in started:
                settle(t, "failed", "its worker process died while running it, twice (killed by a signal, out of "
                                    "memory, or an abort)", "")
            suspects = rest
        else:
            suspects.extend(started)
            queue = rest
        if not started:
            blind += 1
            if blind >= 3:
                for t in list(queue) + list(suspects):
                    settle(t, "failed", "worker processes keep dying before they start a run", "")
                return


def _pool_pass(driver: _Driver, batch: deque, workers: int, ctx: Any) -> tuple[list[Task], list[Task]]:
    """Runs ``batch`` in one process pool; returns the runs lost because the pool broke and, among them, those
    a worker had started."""
    stop = ctx.Event()
    size = len(batch) + len(driver.busy)
    started = ctx.Array("b", max(size, 1), lock=False)  # started[i]: a worker began the i-th run submitted
    ex = ProcessPoolExecutor(max_workers=max(1, min(workers, size)), mp_context=ctx, initializer=worker_init,
                             initargs=(os.getpid(), stop, started))
    futs: dict = {}
    slot: dict[Task, int] = {}

    def submit(t: Task) -> Any:
        # A run put aside and retried in this pass gets a new slot; the array has one per run of the pass.
        slot[t] = i = len(slot)
        if i >= len(started):
            raise BrokenProcessPool("more submissions than slots")  # cannot happen: size counts every run
        return ex.submit(produce, t.work, i)

    try:
        # Twice the workers in flight: each worker has its next run at hand, and the driver holds few results.
        lost = _drive(driver, batch, futs, lambda: 2 * workers, submit)
    except BaseException:  # Ctrl-C: queued runs are cancelled, running ones finish and are kept
        stop.set()  # the runs already handed to a worker but not started are skipped
        try:
            for f in list(futs):
                if f.cancel():
                    driver.drop(futs.pop(f))
            while futs:  # the runs under way finish and are written
                _land_ready(driver, futs, [])
            ex.shutdown(wait=True, cancel_futures=True)
        except KeyboardInterrupt:  # a second Ctrl-C: stop now (the runs under way are lost)
            for proc in list((getattr(ex, "_processes", None) or {}).values()):
                proc.kill()
            raise
        finally:
            driver.drop_all()
        raise
    ex.shutdown(wait=True)
    return lost, [t for t in lost if t in slot and started[slot[t]]]


def check_scheduler(scheduler: Optional[str]) -> None:
    """A ``--scheduler`` that is given must be an address: an empty one would silently mean the local pool."""
    from .errors import ScenarioError

    if scheduler is not None and (not isinstance(scheduler, str) or not scheduler.strip()):
        raise ScenarioError([("--scheduler", "is empty: give a Dask scheduler's address (tcp://host:8786), or leave "
                                             "the option out for local workers")])


def run_dask(todo: list[Task], scheduler: str, settle: Callable[..., None]) -> None:
    """Runs ``todo`` on the Dask cluster at ``scheduler`` through its ``concurrent.futures`` executor (each
    worker needs cclab installed, and nothing else shared: it makes each run in its scratch folder and returns
    the files, written here as each run ends), calling ``settle`` as :func:`run_local` does. A worker that dies
    is Dask's to handle: the scheduler gives its runs to other workers (up to its ``allowed-failures``, then
    KilledWorker: that run fails). At most four runs per worker thread are in flight, so the driver's memory
    does not grow with the number of runs."""
    from .errors import ScenarioError

    try:
        from dask.distributed import Client
    except ImportError:
        raise ScenarioError([("--scheduler", "needs Dask: pip install \"dask[distributed]\"")]) from None
    check_scheduler(scheduler)
    try:
        client = Client(scheduler, timeout=30)
    except Exception as e:  # TypeError too: tls:// without certificates, ucx:// without its package
        from .units import show_value

        why = " ".join(describe(e).split())  # one line, whatever the address held
        raise ScenarioError([("--scheduler", f"no Dask scheduler answers at {show_value(scheduler)}: "
                                             f"{why[:300]}")]) from None
    driver = _Driver(settle)
    futs: dict = {}
    asked, threads = [-2.0], [1]

    def window() -> int:
        # The cluster's size may change (adaptive deployments, workers lost or added): asked once a second.
        if time.monotonic() - asked[0] > 1.0:
            asked[0] = time.monotonic()
            threads[0] = max(1, sum(client.nthreads().values()))
        return 4 * threads[0]

    try:
        ex = client.get_executor(pure=False)
        _drive(driver, deque(todo), futs, window, lambda t: ex.submit(produce, t.work))
    except BaseException:
        for f in futs:
            f.cancel()
        raise
    finally:
        driver.drop_all()
        client.close()
