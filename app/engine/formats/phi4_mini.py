"""Microsoft Phi-4-mini calls: `` functools[{"name": NAME, "arguments": {...}}, ...]``.

FireFunction v2's wire (its reader, ``firefunction``), under Phi-4-mini's own name and detection:
the word ``functools`` and, right after it, one JSON list of calls (no closing marker). Phi-4-mini's
published template does not read the ``tools`` variable: it takes the tools as a JSON string in
the system message's ``tools`` key, between ``<|tool|>`` and ``<|/tool|>`` (the renderer puts them
there, ``app.engine.render``), and writes a past call as its turn's content, so no call can be
probed through it: detection knows it by those markers (``app.engine.formats.detect``).
"""

from __future__ import annotations

from app.engine.formats.base import register
from app.engine.formats.firefunction import FirefunctionFormat

__all__ = ["Phi4MiniFormat"]


class Phi4MiniFormat(FirefunctionFormat):
    name = "phi4-mini"
    label = "Phi-4-mini functools list (Microsoft Phi-4-mini-instruct, Phi-4-mini-reasoning)"


register(Phi4MiniFormat())
