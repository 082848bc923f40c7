"""The ``cclab`` command (pyproject.toml's script). A warm server started by ``cclab daemon start`` runs the
command if one serves this installation (python/cclab/daemon.py); otherwise it runs here: a ``cclab run``'s
figures' process starts before the command line's own imports (≈ 0.2 s of click, pydantic and numpy:
python/cclab/plotproc.py), then :mod:`cclab.cli` takes over. ``python -m cclab.cli`` works too, in this
process always, starting that process a little later."""
from __future__ import annotations

import os
import sys

# cclab's switches in the environment, and what each value does. Unset or empty: the default. Any other
# value is refused (exit code 2), as the real datapath refuses one in its CCLAB_NET_* switches: read as
# neither, CCLAB_DAEMON=off used the server and CCLAB_DEBUG=0 showed tracebacks.
SWITCHES = {
    "CCLAB_DAEMON": "0 runs every command in a process of its own; 1 (the default) hands it to a warm server "
                    "if one serves this installation",
    "CCLAB_DEBUG": "1 shows the traceback of an internal error; 0 (the default) one line",
    "CCLAB_PLOT_PROCESS": "1 draws a run's figures in a second process, 0 in this one; unset: when a core is free",
    "CCLAB_PLOT_SPLIT": "1 draws the figures in two forked halves, 0 in one; unset: on two cores or more",
}


def bad_switch() -> str | None:
    """The first switch set to something other than 0 or 1, as an error message; None if all are good."""
    for name, what in SWITCHES.items():
        value = os.environ.get(name, "")
        if value not in ("", "0", "1"):
            return f"error: {name}={value!r}: allowed values are 0 or 1 ({what})"
    return None


def main() -> None:
    from . import daemon_client

    bad = bad_switch()
    if bad is not None:
        print(bad, file=sys.stderr)
        sys.exit(2)
    code = daemon_client.run(sys.argv)
    if code is not None:
        sys.exit(code)
    here(sys.argv[1:])


def here(args: list[str]) -> None:
    """The command in this process (the server's runner calls this too, with ``sys.argv`` set)."""
    from . import plotproc

    plotproc.early(args)
    try:
        from .cli import main as cli

        cli()
    finally:
        plotproc.cancel_untaken()  # the command was refused or was not a run after all


if __name__ == "__main__":
    main()
