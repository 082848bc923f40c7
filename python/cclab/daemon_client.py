"""The ``cclab`` command's client side of the warm server (:mod:`cclab.daemon`, docs/performance.md "A warm
server"): if a server started by ``cclab daemon start`` for this very installation is listening, hand it
this command (arguments, folder, environment, umask and the terminal's three file descriptors) and wait
for its exit status; otherwise return None and the command runs in this process as always.

This module is imported before anything else of the command, so it imports only modules built into the
interpreter (``_socket``, ``_signal``, ``_blake2``, ``marshal``: ≈ 3 ms, where ``socket``, ``signal``,
``hashlib``, ``array`` and ``json`` took ≈ 20 ms) and what it does costs under a millisecond when no server runs: a
``stat`` of cclab's source files (the fingerprint that names the socket) and a failed ``connect``.
"""
from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # signal without its enum wrappers (≈ 3 ms)
import _socket
import marshal
import os
import sys

try:
    from _blake2 import blake2b
except ImportError:  # an interpreter built without it
    from hashlib import blake2b

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

# Forwarded to the runner: what a terminal or a supervisor sends to the command.
_SIGNALS = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT)
# Commands never sent: the server's own.
_LOCAL = {"daemon"}
PACKAGE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_IDLE_S = 3600.0


def fingerprint() -> str:
    """What a server must have been started from to serve this command: this interpreter, cclab's own
    files (path, size and modification time of every module and of the native library) and the
    interpreter's installed packages (the ``site-packages`` folder changes when one is added, removed or
    upgraded), and how the interpreter runs: its flags (``-O``, ``-X``, ``-W``, ...) and ``PYTHONHASHSEED``,
    which a forked runner cannot take from its client (a set's order of strings follows the hash seed).
    Any change names another socket, so an outdated or differently run server is never asked."""
    h = blake2b(digest_size=10)
    h.update(sys.executable.encode())
    h.update(sys.version.encode())
    h.update(f"{sys.flags}\0{sorted(sys._xoptions.items())}\0{sys.warnoptions}\0".encode())
    h.update(os.environ.get("PYTHONHASHSEED", "").encode())
    # Where modules are looked for beyond the installation (absolute: a relative entry means another
    # folder from another working folder).
    h.update(python_path().encode())
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


def python_path() -> str:
    """``PYTHONPATH`` with each entry made absolute."""
    return os.pathsep.join(os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)


def runtime_dir() -> str:
    """The user's own folder for the server's socket and log (mode 0700): ``$XDG_RUNTIME_DIR/cclab``, else
    (unset, or too long a path for a socket) ``/tmp/cclab-<uid>``."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    d = os.path.join(base, "cclab") if base else ""
    # A socket's path has at most 107 bytes: the socket's own name and a temporary suffix take 41.
    return d if d and len(os.fsencode(d)) <= 60 else f"/tmp/cclab-{os.getuid()}"


def socket_path(fp: Optional[str] = None) -> str:
    return os.path.join(runtime_dir(), f"daemon-{fp or fingerprint()}.sock")


def pid_path(sock: str) -> str:
    return sock[: -len(".sock")] + ".pid"


def safe_dir(d: str) -> bool:
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
    if os.environ.get("CCLAB_DAEMON", "") == "0":
        return None
    if not argv[1:] or argv[1] in _LOCAL:
        return None
    d = runtime_dir()
    if not safe_dir(d):
        return None
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.connect(socket_path())
    except OSError:
        s.close()
        return None
    try:
        return _talk(s, argv)
    finally:
        s.close()


def request(argv: list[str]) -> bytes:
    """The command as the server reads it (``marshal``: built in, and the peer is this user's own server)."""
    import resource  # built in, 0.4 ms

    umask = os.umask(0)
    os.umask(umask)
    # The process's limits (memory, open files, core size, CPU time) and niceness travel too: a command
    # under `ulimit -v` or `nice` gets them in the runner as it would have in a process of its own.
    limits = {}
    for name in dir(resource):
        if name.startswith("RLIMIT_"):
            try:
                limits[getattr(resource, name)] = resource.getrlimit(getattr(resource, name))
            except (OSError, ValueError):
                pass
    return marshal.dumps({"argv": list(argv), "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask,
                          "encoding": getattr(sys.stdout, "encoding", None), "limits": limits,
                          "nice": os.getpriority(os.PRIO_PROCESS, 0)})


class _Lines:
    """Reads the server's reply, one line at a time."""

    def __init__(self, s: _socket.socket):
        self.s, self.buf = s, b""

    def line(self) -> str:
        while b"\n" not in self.buf:
            try:
                chunk = self.s.recv(4096)
            except InterruptedError:
                continue
            if not chunk:
                return ""
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()


def _talk(s: _socket.socket, argv: list[str]) -> Optional[int]:
    body = request(argv)
    # As an array of C ints (`array` would cost 3 ms to import).
    fds = b"".join((fd if _is_open(fd) else os.open(os.devnull, os.O_RDWR)).to_bytes(4, sys.byteorder, signed=True)
                   for fd in (0, 1, 2))
    try:
        s.sendmsg([len(body).to_bytes(4, "big"), body], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    except OSError:
        return None
    reply = _Lines(s)
    first = reply.line().split()
    if first[:1] != ["pid"]:
        return None  # the server went away before starting the command: nothing ran, run it here
    pid = int(first[1])

    # Ctrl-C and the like reach this process (the terminal's foreground group); the runner, a child of
    # the server, is in a process group of its own: forward them to it.
    def forward(signum: int, _frame: object) -> None:
        try:
            os.killpg(pid, signum)
        except OSError:
            pass

    for sig in _SIGNALS:
        _signal.signal(sig, forward)
    last = reply.line().split()
    if len(last) != 2:
        print("error: the cclab server stopped while running this command (`cclab daemon status`; "
              "CCLAB_DAEMON=0 runs without it)", file=sys.stderr)
        return 1
    kind, value = last[0], int(last[1])
    if kind == "signal":
        # End the way the runner did, so that a shell sees the same status.
        for sig in _SIGNALS:
            _signal.signal(sig, _signal.SIG_DFL)
        os.kill(os.getpid(), value)
        return 128 + value
    return value


# Managing servers (`cclab daemon start|stop|status`): here rather than in the server's module, so that the
# command line does not import the module that imports the command line to warm up.

def servers() -> list[tuple[int, str, bool]]:
    """Every server of this user: (pid, socket, whether it serves this installation), live ones only."""
    d = runtime_dir()
    mine = socket_path()
    out = []
    names = sorted(os.listdir(d)) if safe_dir(d) else []
    for name in names:
        if not (name.startswith("daemon-") and name.endswith(".pid")):
            continue
        try:
            with open(os.path.join(d, name)) as f:
                pid = int(f.read().strip())
            os.kill(pid, 0)
        except (OSError, ValueError):
            continue
        sock = os.path.join(d, name[: -len(".pid")] + ".sock")
        out.append((pid, sock, sock == mine))
    return out


def start(idle_s: float = DEFAULT_IDLE_S, timeout_s: float = 60.0) -> tuple[int, str]:
    """Start a server for this installation in the background (unless one runs) and wait until it is
    warm. Returns (pid, socket)."""
    import select
    import subprocess

    for pid, sock, mine in servers():
        if mine:
            return pid, sock
    d = runtime_dir()
    os.makedirs(d, mode=0o700, exist_ok=True)
    log = os.path.join(d, "daemon.log")
    env = {k: v for k, v in os.environ.items() if k != "CCLAB_DAEMON"}
    # It starts in "/" (it keeps no folder busy), so a relative PYTHONPATH entry is made absolute: the
    # modules it finds are the ones this command would (the fingerprint has them absolute too).
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = python_path()
    with open(log, "ab") as err:
        # With this interpreter's flags (-O, -X, -W, ...: part of the fingerprint), as multiprocessing
        # starts its children.
        flags = subprocess._args_from_interpreter_flags()  # type: ignore[attr-defined]
        p = subprocess.Popen([sys.executable, *flags, "-m", "cclab.daemon", "--idle", str(idle_s)],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, env=env,
                             start_new_session=True, cwd="/")
    assert p.stdout is not None
    ready, _, _ = select.select([p.stdout], [], [], timeout_s)
    line = p.stdout.readline().decode() if ready else ""
    p.stdout.close()
    if not line.startswith("ready "):
        p.kill()
        raise RuntimeError(f"the server did not start (see {log})")
    return p.pid, line.split(" ", 1)[1].strip()


def stop(all_: bool = False) -> list[int]:
    """SIGTERM this installation's server (every server of the user with ``all_``); the pids signalled."""
    done = []
    for pid, _sock, mine in servers():
        if mine or all_:
            try:
                os.kill(pid, _signal.SIGTERM)
                done.append(pid)
            except OSError:
                pass
    return done
