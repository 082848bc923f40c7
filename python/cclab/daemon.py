"""A warm server for the ``cclab`` command (``cclab daemon start``; docs/performance.md "A warm server").

Most of a short ``cclab run`` is Python getting ready: importing click, pydantic, NumPy and pyarrow and
building the scenario's validator take ≈ 0.4 s, the 1 s simulation and its files ≈ 0.05 s. The server
does that once, then for each command forks a copy of itself that runs it exactly as a fresh process
would: the command's own arguments, working folder, environment, umask and terminal (its three file
descriptors, passed over the socket), so a scenario is validated by the same code, progress bars and
colours see the same terminal, the same error lines and exit codes come out, and a Ctrl-C reaches the
command; its resource limits (``ulimit``), niceness and time zone are the client's too. Nothing is
cached between commands: each copy starts from the state the server had before any command ran, and a
copy's changes die with it.

Design, and why:
- One server per installation (:func:`cclab.daemon_client.fingerprint`): a changed source file, native
  library or installed package names another socket, so a command never runs on outdated code; the old
  server stops by itself when idle.
- Fork, not threads: each command gets a process of its own (its own signals, exit, crash), as before.
  The server starts no thread of its own, so forking it is safe; ``OPENBLAS_NUM_THREADS=1`` keeps NumPy's
  BLAS from starting a pool at import.
- Two forks per command: a waiter (reports the runner's pid, then how it ended, even if it was killed by a
  signal: one text line each) and the runner. The listening loop never waits for a command.
- The socket lives in a folder only the user can enter, and the server checks the connecting process's
  uid (``SO_PEERCRED``): it runs commands with the user's rights, so only the user may ask.
- Off by default: nothing runs in the background unless ``cclab daemon start`` was said; it stops after
  ``--idle`` seconds without a command (default one hour) or on ``cclab daemon stop``.
"""
from __future__ import annotations

import atexit
import io
import marshal
import os
import resource
import select
import signal
import socket
import struct
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Optional

from . import daemon_client


def _warm() -> None:
    """Import what commands use and build the scenario validator, by validating and running two seconds
    of the embedded default scenario into a scratch folder (then removed)."""
    import shutil
    import tempfile
    import tomllib

    from . import cli, columns, launch, plotproc, results, runner  # noqa: F401
    from .plots import write_plots
    from .scenario import Scenario

    d = tomllib.loads((Path(__file__).parent / "scenarios" / "default.toml").read_text())
    d.update(duration="2s", measure=["1s", "2s"])
    sc = Scenario.from_dict(d)
    tmp = tempfile.mkdtemp(prefix="cclab-daemon-warm-")
    try:
        res = runner.run(sc, Path(tmp) / "out", progress=False, plots=False)
        # The figures too (matplotlib, its fonts), here and not in a process of their own: a runner's
        # figures' worker is then a fork of the runner with nothing to import (plotproc._Forked).
        write_plots(res.flows, res.links, res.summary, Path(tmp) / "out", res.spec)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def serve(idle_s: float = daemon_client.DEFAULT_IDLE_S) -> None:
    """Listen until ``idle_s`` pass without a command, or SIGTERM. Prints ``ready <socket>`` once warm."""
    fp = daemon_client.fingerprint()  # before anything is imported: what this server is running
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ.get("OPENBLAS_NUM_THREADS", "1")
    _warm()
    import threading

    # No thread of ours may run when the server forks. (pyarrow's import starts jemalloc's background
    # purging thread; jemalloc's own fork handlers take its locks around a fork, so that one is safe.)
    if threading.active_count() != 1:
        raise RuntimeError(f"{threading.active_count()} threads after warming up: forking would not be safe")
    native = sorted((Path(t) / "comm").read_text().strip() for t in Path("/proc/self/task").iterdir())
    print(f"warm: threads {native}", file=sys.stderr, flush=True)
    d = daemon_client.runtime_dir()
    os.makedirs(d, mode=0o700, exist_ok=True)
    if not daemon_client.safe_dir(d):
        raise RuntimeError(f"{d} is not a folder of this user closed to others")
    path = daemon_client.socket_path(fp)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tmp = f"{path}.{os.getpid()}"
    listener.bind(tmp)
    os.chmod(tmp, 0o600)
    listener.listen(64)
    os.replace(tmp, path)  # a server already there for the same code is replaced, not doubled
    inode = os.stat(path).st_ino
    Path(daemon_client.pid_path(path)).write_text(f"{os.getpid()}\n")
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(True))
    print(f"ready {path}", flush=True)
    # `start` reads that one line and closes the pipe: nothing may be written there afterwards.
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    children: set[int] = set()
    last = time.monotonic()
    try:
        while not stopping:
            _reap(children)
            if children:
                last = time.monotonic()
            wait = idle_s - (time.monotonic() - last)
            if wait <= 0:
                break
            try:
                ready, _, _ = select.select([listener], [], [], min(wait, 1.0))
            except InterruptedError:
                continue
            if not ready:
                continue
            conn, _ = listener.accept()
            last = time.monotonic()
            if not _same_user(conn):
                conn.close()
                continue
            pid = os.fork()
            if pid == 0:
                listener.close()
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.default_int_handler)
                try:
                    _wait_one(conn)
                finally:
                    os._exit(0)
            conn.close()
            children.add(pid)
    finally:
        # Only remove what is still ours: a newer server for the same code may have replaced them.
        for p in (path, daemon_client.pid_path(path)):
            try:
                if p == path and os.stat(p).st_ino != inode:
                    continue
                if p != path and Path(p).read_text().strip() != str(os.getpid()):
                    continue
                os.unlink(p)
            except OSError:
                pass
        listener.close()


def _reap(children: set[int]) -> None:
    for pid in list(children):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            children.discard(pid)


def _same_user(conn: socket.socket) -> bool:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid == os.getuid()


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    fds: list[int] = []
    head = b""
    while len(head) < 4:
        data, anc, _flags, _addr = conn.recvmsg(4 - len(head), socket.CMSG_SPACE(3 * 4))
        if not data:
            raise EOFError("the client went away")
        head += data
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds += list(struct.unpack(f"{len(payload) // 4}i", payload[: len(payload) // 4 * 4]))
    n = int.from_bytes(head, "big")
    body = b""
    while len(body) < n:
        chunk = conn.recv(n - len(body))
        if not chunk:
            raise EOFError("the client went away")
        body += chunk
    if len(fds) != 3:
        raise ValueError(f"expected the client's 3 standard file descriptors, got {len(fds)}")
    req = marshal.loads(body)  # from this user's own process (SO_PEERCRED), as daemon_client.request wrote it
    if not isinstance(req, dict):
        raise ValueError("not a command")
    return req, fds


def _wait_one(conn: socket.socket) -> None:
    """The waiter: start the runner, tell the client its pid, then how it ended."""
    try:
        req, fds = _receive(conn)
    except (OSError, EOFError, ValueError):
        return
    pid = os.fork()
    if pid == 0:
        conn.close()
        _run(req, fds)  # never returns
    try:
        os.setpgid(pid, pid)  # also done by the runner; whichever comes first (a shell's habit)
    except OSError:
        pass
    for fd in fds:
        os.close(fd)
    try:
        conn.sendall(f"pid {pid}\n".encode())
    except OSError:
        pass
    what = f"runner {pid} in {req.get('cwd')}: {' '.join(map(str, req.get('argv', [])[1:]))}"
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {what} (started)", file=sys.stderr, flush=True)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    end: list[Any] = ["signal", os.WTERMSIG(status)] if os.WIFSIGNALED(status) else ["exit", os.WEXITSTATUS(status)]
    # One line per command in the server's log (its standard error): what ran, for whom, how it ended.
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {what} -> {end[0]} {end[1]}", file=sys.stderr, flush=True)
    try:
        conn.sendall(f"{end[0]} {end[1]}\n".encode())
    except OSError:
        pass


def _stream(fd: int, mode: str, encoding: str, errors: str) -> io.TextIOWrapper:
    """A standard stream as Python makes it at start-up: line-buffered on a terminal (stderr always)."""
    raw = io.FileIO(fd, mode, closefd=False)
    buffered: Any = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
    line = mode == "w" and (fd == 2 or os.isatty(fd))
    return io.TextIOWrapper(buffered, encoding=encoding, errors=errors, line_buffering=line)


def _run(req: dict[str, Any], fds: list[int]) -> None:
    """The runner: become the client's process (its terminal, folder, environment, arguments) and run the
    command as ``cclab`` would; exit with its status."""
    code = 1
    try:
        os.setpgid(0, 0)
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.chdir(req["cwd"])
        os.umask(int(req["umask"]))
        os.environ.clear()
        os.environ.update(req["env"])
        time.tzset()  # the client's TZ for local times
        for which, (soft, hard) in req.get("limits", {}).items():
            try:
                resource.setrlimit(which, (soft, hard))
            except (OSError, ValueError):
                # A hard limit above the server's cannot be raised (not as a normal user): the soft one
                # still can be lowered to the client's.
                try:
                    resource.setrlimit(which, (soft, resource.getrlimit(which)[1]))
                except (OSError, ValueError):
                    pass
        try:
            os.setpriority(os.PRIO_PROCESS, 0, int(req.get("nice", 0)))
        except OSError:
            pass  # a higher priority than the server's needs root
        sys.argv = list(req["argv"])
        # As for a script: its own folder first on the module path (the server's is "/", its start folder).
        if sys.argv and os.path.isfile(sys.argv[0]):
            sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
        enc = req.get("encoding") or "utf-8"
        for fd, name, errors in ((0, "stdin", "strict"), (1, "stdout", "strict"), (2, "stderr", "backslashreplace")):
            stream = _stream(fd, "r" if fd == 0 else "w", enc, errors)
            setattr(sys, name, stream)
            setattr(sys, f"__{name}__", stream)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from . import launch

        code = _exit_code(lambda: launch.here(sys.argv[1:]))
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        os._exit(code)


def _exit_code(command: Any) -> int:
    """Run ``command`` and return the status a Python process ending the same way exits with."""
    try:
        command()
        return 0
    except SystemExit as e:
        if e.code is None:
            return 0
        if isinstance(e.code, int):
            return e.code & 0xFF
        print(e.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        # Python ends an uncaught Ctrl-C by re-raising SIGINT on itself: the same for the client's shell.
        traceback.print_exc()
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        return 130


def _main(argv: Optional[list[str]] = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m cclab.daemon", description="the cclab server (cclab daemon start)")
    ap.add_argument("--idle", type=float, default=daemon_client.DEFAULT_IDLE_S, help="seconds without a command before it stops")
    a = ap.parse_args(argv)
    # Its standard output is read by `start` for the ready line only; afterwards nothing is printed there.
    serve(a.idle)


if __name__ == "__main__":
    _main()
