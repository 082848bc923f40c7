"""The ``cclab`` command (pyproject.toml's script). A warm server started by ``cclab daemon start`` runs the
command if one serves this installation (python/cclab/daemon.py); otherwise it runs here: a ``cclab run``'s
figures' process starts before the command line's own imports (≈ 0.2 s of click, pydantic and numpy:
python/cclab/plotproc.py), then :mod:`cclab.cli` takes over. ``python -m cclab.cli`` works too, in this
process always, starting that process a little later."""
import sys


def main() -> None:
    from . import daemon_client

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
