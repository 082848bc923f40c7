"""PNG files written from the figure's own pixels with zlib alone, in a thread (docs/performance.md, "The
figures' PNG files").

Why not ``savefig(..., format="png")``: matplotlib hands the pixels to Pillow, which stores all four RGBA
channels and tries each PNG filter on every row before compressing it. For the five figures of the 30-flow
example that was 1.8 G of the 8.3 G instructions of a process importing matplotlib and pandas, reading the
results and drawing them (callgrind); this writer needs about 0.6 G for the same pixels (7.1 G in all). The
figures are opaque, so this writes RGB rows unfiltered at zlib level 1: the same pixels (the test decodes
both), the same ``Software`` text and resolution chunks, files about as large (smaller for most figures),
and ``zlib.compress`` lets go of the GIL, so a figure is compressed while the next is drawn. A figure with
any transparent pixel keeps its alpha channel (colour type 6)."""
from __future__ import annotations

import struct
import threading
import zlib
from pathlib import Path
from typing import IO, Callable, cast

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode(rgba: np.ndarray, dpi: float) -> bytes:
    """A PNG of ``rgba`` (height × width × 4, uint8): RGB when every pixel is opaque, else RGBA; the
    resolution chunk and the ``Software`` text as matplotlib writes them through Pillow."""
    h, w, _ = rgba.shape
    opaque = bool((rgba[..., 3] == 255).all())
    c = 3 if opaque else 4
    rows = np.empty((h, 1 + w * c), np.uint8)
    rows[:, 0] = 0  # filter type 0 (none) on every row
    rows[:, 1:] = rgba[..., :c].reshape(h, w * c)
    ppm = int(dpi / 0.0254 + 0.5)  # Pillow's rounding of dots per inch to dots per metre
    software = f"Matplotlib version{matplotlib.__version__}, https://matplotlib.org/"
    return b"".join((
        b"\x89PNG\r\n\x1a\n",
        _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2 if opaque else 6, 0, 0, 0)),
        _chunk(b"tEXt", b"Software\0" + software.encode("latin-1")),
        _chunk(b"pHYs", struct.pack(">IIB", ppm, ppm, 1)),
        _chunk(b"IDAT", zlib.compress(rows.data, 1)),
        _chunk(b"IEND", b""),
    ))


class _Discard:
    """A file that keeps nothing: savefig's raw output is read from the renderer instead (no copy)."""

    def write(self, data: object) -> None:
        pass

    def seek(self, offset: int, whence: int = 0) -> int:  # matplotlib takes an object with seek for a file
        return 0


def write(fig: Figure, path: Path) -> Callable[[], None]:
    """Draws ``fig`` now and writes ``path`` in a thread; returns the function that waits for the file
    (and raises what writing it raised)."""
    canvas = fig.canvas
    if not isinstance(canvas, FigureCanvasAgg):  # not drawn by Agg: matplotlib and Pillow write it
        fig.savefig(path, format="png", pil_kwargs={"compress_level": 1})
        return lambda: None
    fig.savefig(cast(IO[bytes], _Discard()), format="rgba")  # savefig's own drawing (face colour, dpi)
    renderer = canvas.get_renderer()
    rgba = np.asarray(renderer.buffer_rgba())  # the pixels, not copied: this figure's own renderer
    dpi = float(renderer.dpi)  # what savefig drew at (savefig.dpi), as matplotlib gives Pillow
    failed: list[BaseException] = []

    def run() -> None:
        try:
            path.write_bytes(encode(rgba, dpi))
        except BaseException as e:  # handed to the thread that waits for the file
            failed.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()

    def wait() -> None:
        t.join()
        if failed:
            raise failed[0]

    return wait
