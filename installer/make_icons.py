"""Render Callisto's app icon files from ``resources/icons/callisto.svg``.

    python installer/make_icons.py            # writes callisto.png, callisto.ico, callisto.icns

Qt's SVG renderer draws each size; the ``.ico`` (Windows) and ``.icns`` (macOS) containers are
written here with PNG-compressed entries (both formats allow that: ICO since Vista, ICNS since
10.7), so no image tool beyond PySide6 is needed. Deterministic: the same SVG gives the same bytes.
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

__all__ = ["ICNS_TYPES", "ICO_SIZES", "ico_bytes", "icns_bytes", "main", "render_png"]

ROOT = Path(__file__).resolve().parent.parent
ICONS = ROOT / "resources" / "icons"
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
#: ICNS element types that hold PNG data, by pixel size.
ICNS_TYPES = {16: b"icp4", 32: b"icp5", 64: b"icp6", 128: b"ic07", 256: b"ic08", 512: b"ic09", 1024: b"ic10"}


def render_png(svg: Path, size: int) -> bytes:
    """The SVG drawn at ``size`` x ``size`` pixels, as PNG bytes."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _ = QGuiApplication.instance() or QGuiApplication([sys.argv[0]])
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise ValueError(f"{svg} is not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(0)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buf, "PNG"):
        raise RuntimeError(f"Qt could not encode a {size}px PNG")
    buf.close()
    return bytes(data.data())


def ico_bytes(pngs: dict[int, bytes]) -> bytes:
    """A Windows .ico holding one PNG per size (ICONDIR + ICONDIRENTRYs + data)."""
    sizes = sorted(pngs)
    header = struct.pack("<HHH", 0, 1, len(sizes))
    offset = 6 + 16 * len(sizes)
    entries, blobs = b"", b""
    for s in sizes:
        data = pngs[s]
        dim = 0 if s >= 256 else s  # 0 means 256 in an ICONDIRENTRY
        entries += struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(data), offset)
        offset += len(data)
        blobs += data
    return header + entries + blobs


def icns_bytes(pngs: dict[int, bytes]) -> bytes:
    """A macOS .icns holding PNG elements ('icns' + total length, then type + length + data)."""
    body = b""
    for s in sorted(pngs):
        body += ICNS_TYPES[s] + struct.pack(">I", 8 + len(pngs[s])) + pngs[s]
    return b"icns" + struct.pack(">I", 8 + len(body)) + body


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    out = Path(args[0]) if args else ICONS
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    svg = ICONS / "callisto.svg"
    sizes = sorted(set(ICO_SIZES) | set(ICNS_TYPES))
    pngs = {s: render_png(svg, s) for s in sizes}
    out.mkdir(parents=True, exist_ok=True)
    (out / "callisto.png").write_bytes(pngs[256])
    (out / "callisto.ico").write_bytes(ico_bytes({s: pngs[s] for s in ICO_SIZES}))
    (out / "callisto.icns").write_bytes(icns_bytes({s: pngs[s] for s in ICNS_TYPES}))
    for name in ("callisto.png", "callisto.ico", "callisto.icns"):
        print(f"wrote {out / name} ({(out / name).stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
