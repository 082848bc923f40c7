"""The ``cclab`` command's client side of the warm server (:mod:`cclab.daemon`, docs/performance.md "A warm
server"): if a server started by ``cclab daemon start`` for this very installation is listening, hand it
this command (arguments, folder, environment, umask and the terminal's three file descriptors) and wait
for its exit status; otherwise return None and the command runs in this process as always.

This module is imported before anything else of the command, so it uses the standard library only and
what it does costs well under a millisecond: a ``stat`` of cclab's source files (the fingerprint that
names the socket) and a failed ``connect`` when no server runs.
"""
from __future__ import annotations

import array
import hashlib
import json
import os
import signal
import socket
import struct
import sys
from typing import Optional

# What the server sends back: the runner's pid (for signals), then its end as ("exit", code) or
# ("signal", number); each one JSON line.
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
# Commands never sent: the server's own, and `--help`/`--version` cost nothing to answer here anyway.
_LOCAL = {"daemon"}
PACKAGE = os.path.dirname(os.path.abspath(__file__))


def fingerprint() -> str:
    """What a server must have been started from to serve this command: this interpreter, cclab's own
    files (path, size and modification time of every module and of the native library) and the
    interpreter's installed packages (the ``site-packages`` folder changes when one is added, removed or
    upgraded). Any change names another socket, so an outdated server is never asked."""
    h = hashlib.blake2b(digest_size=10)
    h.update(sys.executable.encode())
    h.update(sys.version.encode())
    for root, dirs, files in os.walk(PACKAGE):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "scenarios", "traces"))
        for name in sorted(files):
            if name.endswith((".py", ".so")):
                p = os.path.join(root, name)
                st = os.stat(p)
                h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    site = os.path.dirname(os.path.dirname(PACKAGE)) if "site-packages" in PACKAGE else None
    for d in [site] + [p for p in sys.path if p.endswith("site-packages")]:
        if d and os.path.isdir(d):
            h.update(f"{d}\0{os.stat(d).st_mtime_ns}\n".encode())
    return h.hexdigest()


def runtime_dir() -> str:
    """The user's own folder for the server's socket and log (mode 0700): ``$XDG_RUNTIME_DIR/cclab``, else
    (unset, or too long a path for a socket) ``/tmp/cclab-<uid>``."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    d = os.path.join(base, "cclab") if base else ""
    # A socket's path has at most 107 bytes: the socket's own name and a temporary suffix take 41.
    return d if d and len(os.fsencode(d)) <= 60 else f"/tmp/cclab-{os.getuid()}"


def socket_path(fp: Optional[str] = None) -> str:
    return os.path.join(runtime_dir(), f"daemon-{fp or fingerprint()}.sock")


def _safe_dir(d: str) -> bool:
    """Only a folder that is ours and closed to others holds a socket we talk to (another user could
    otherwise put a server there that runs our commands)."""
    try:
        st = os.lstat(d)
    except OSError:
        return False
    return st.st_uid == os.getuid() and (st.st_mode & 0o077) == 0 and os.path.isdir(d)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def run(argv: list[str]) -> Optional[int]:
    """The command's exit status from the server, or None when it is to run here (no server for this
    installation, ``CCLAB_DAEMON=0``, a command the server does not take, or the server went away before
    starting it)."""
    if os.environ.get("CCLAB_DAEMON", "") == "0" or os.environ.get("_CCLAB_IN_DAEMON"):
        return None
    if not argv[1:] or argv[1] in _LOCAL:
        return None
    d = runtime_dir()
    if not _safe_dir(d):
        return None
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(os.path.join(d, f"daemon-{fingerprint()}.sock"))
    except OSError:
        s.close()
        return None
    with s:
        return _talk(s, argv)


def _talk(s: socket.socket, argv: list[str]) -> Optional[int]:
    umask = os.umask(0)
    os.umask(umask)
    request = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask,
                          "encoding": getattr(sys.stdout, "encoding", None)}).encode()
    fds = array.array("i", [fd if _is_open(fd) else os.open(os.devnull, os.O_RDWR) for fd in (0, 1, 2)])
    try:
        s.sendmsg([struct.pack("!I", len(request)), request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
    except OSError:
        return None
    lines = s.makefile("rb")
    first = lines.readline()
    if not first:
        return None  # the server went away before starting the command: nothing ran, run it here
    pid = int(json.loads(first)["pid"])

    # Ctrl-C and the like reach this process (the terminal's foreground group); the runner, a child of
    # the server, is in a process group of its own: forward them to it.
    def forward(signum: int, _frame: object) -> None:
        try:
            os.killpg(pid, signum)
        except OSError:
            pass

    for sig in _SIGNALS:
        signal.signal(sig, forward)
    last = lines.readline()
    if not last:
        print("error: the cclab server stopped while running this command (`cclab daemon status`; "
              "CCLAB_DAEMON=0 runs without it)", file=sys.stderr)
        return 1
    kind, value = json.loads(last)
    if kind == "signal":
        # End the way the runner did, so that a shell sees the same status.
        for sig in _SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), value)
        return 128 + value
    return int(value)
