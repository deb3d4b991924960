"""MiniMax XML calls (MiniMax-M2, M2.1).

``<minimax:tool_call>\\n<invoke name="NAME">\\n<parameter name="K">V</parameter>\\n</invoke>\\n
</minimax:tool_call>``: one block may hold several ``<invoke>`` elements (parallel calls), after
an optional ``<think>...</think>`` block (the generation prompt opens ``<think>``). Values are raw
text (a string as written, anything else as JSON) typed by the schema; a ``</minimax:tool_call>``
inside a value does not end the block, and a ``</parameter>`` inside a value closes it only where
the next ``<parameter name=`` or the ``</invoke>`` follows (vLLM #38803). A missing ``</minimax:tool_call>`` is accepted only when
the reply ended normally right after ``</invoke>``.
"""

from __future__ import annotations

from app.engine.formats.base import register
from app.engine.formats.xml_params import InvokeFormat

__all__ = ["MINIMAX"]

OPEN = "<minimax:tool_call>"
CLOSE = "</minimax:tool_call>"

MINIMAX = register(
    InvokeFormat("minimax", "MiniMax XML (MiniMax-M2, M2.1)", (OPEN,), close=CLOSE, single_region=True)
)
