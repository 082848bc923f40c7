"""The ``cclab`` command (pyproject.toml's script): starts a ``cclab run``'s figures' process before the
command line's own imports (≈ 0.2 s of click, pydantic and numpy: python/cclab/plotproc.py), then hands
over to :mod:`cclab.cli`. ``python -m cclab.cli`` works too, starting that process a little later."""
import sys


def main() -> None:
    from . import plotproc

    plotproc.early(sys.argv[1:])
    try:
        from .cli import main as cli

        cli()
    finally:
        plotproc.cancel_untaken()  # the command was refused or was not a run after all
