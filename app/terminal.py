"""Text made safe to print on a terminal, for every command-line surface (``app.cli``, ``app.check``).

A bottom-layer module (standard library only), so that ``app.check`` escapes what it prints the way
the CLI does without importing ``app.cli``."""

from __future__ import annotations

__all__ = ["terminal_text"]

# What must not reach a terminal as is: C0 controls but newline and tab (ESC starts CSI/OSC
# sequences: cursor moves, screen clears, window titles, hyperlinks; CR and BS overwrite what was
# shown), DEL, C1 controls (U+0080-U+009F, CSI/OSC in 8-bit form), and the bidirectional
# overrides, embeddings and isolates that make text read in another order than it is.
_UNSAFE = frozenset(
    [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]
    + [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
)
_ESCAPES = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _UNSAFE}


def terminal_text(text: str) -> str:
    """``text`` safe to print on a terminal: newlines and tabs kept (a ``\\r\\n`` is a newline),
    every other control character and each bidirectional control written as an escape."""
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return text.translate(_ESCAPES)
