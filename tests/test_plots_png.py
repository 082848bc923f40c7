"""The figures' PNG writer (python/cclab/plots/_png.py): the pixels and the metadata of matplotlib's own PNG
through Pillow, for an opaque figure (written as RGB) and one with transparent pixels (kept RGBA)."""
import io

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from cclab.plots import save
from cclab.plots._png import encode


def _figure(transparent: bool) -> Figure:
    fig = Figure(figsize=(4, 3), dpi=150)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.plot([0, 1, 2, 3], [1, 3, 2, 4], label="a line")
    ax.fill_between([0, 1, 2, 3], 0, [1, 2, 1, 2], alpha=0.3)
    ax.set_title("α, 10⁶ bit/s")
    ax.legend()
    if transparent:
        fig.patch.set_alpha(0.0)
    return fig


def _pixels(path):
    with Image.open(path) as im:
        return np.asarray(im.convert("RGBA")), dict(im.info)


@pytest.mark.parametrize("transparent", [False, True])
def test_same_pixels_and_metadata_as_savefig(tmp_path, transparent):
    fig = _figure(transparent)
    fig.savefig(tmp_path / "pillow.png", format="png")
    save(fig, tmp_path / "ours.png")
    ours, ours_info = _pixels(tmp_path / "ours.png")
    theirs, their_info = _pixels(tmp_path / "pillow.png")
    assert ours.shape == theirs.shape == (450, 600, 4)
    assert (ours == theirs).all()
    assert ours_info == their_info  # the Software text and the dpi
    with Image.open(tmp_path / "ours.png") as im:
        assert im.mode == ("RGBA" if transparent else "RGB")


def test_encode_round_trip():
    # Random pixels: every byte value in every channel, rows of an odd width.
    rgba = np.random.default_rng(1).integers(0, 256, size=(7, 13, 4), dtype=np.uint8)
    with Image.open(io.BytesIO(encode(rgba, 72.0))) as im:
        assert (np.asarray(im) == rgba).all()
    rgba[..., 3] = 255
    with Image.open(io.BytesIO(encode(rgba, 72.0))) as im:
        assert im.mode == "RGB"
        assert (np.asarray(im) == rgba[..., :3]).all()
