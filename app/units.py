"""Units written for people: one byte-size formatter for the window and the core.

:func:`format_bytes` writes a size as ``512 B``, ``1.5 KB``, ``3.2 GB`` (powers of 1024, one
decimal from KB up, TB the largest unit); an unknown size (``None``) is ``?``. The Models page,
the approval dialog and the workspace's file tools all use it, so a size reads the same
everywhere.

Imports nothing from the app: it sits at the bottom layer, beside ``app.calls``.
"""

from __future__ import annotations

__all__ = ["format_bytes"]

_UNITS = ("B", "KB", "MB", "GB", "TB")


def format_bytes(n: float | None) -> str:
    """``n`` bytes for people: ``512 B``, ``1.5 KB`` … ``2.0 TB``; ``?`` when ``n`` is None."""
    if n is None:
        return "?"
    value = float(n)
    for unit in _UNITS[:-1]:
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} {_UNITS[-1]}"
