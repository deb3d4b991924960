"""dots invoke XML calls (dots-studio dots3-note preview, vLLM's and SGLang's ``dots`` parser).

``<dots_function_call>\\n<invoke name="NAME">\\n<parameter name="K">V</parameter>\\n</invoke>\\n
</dots_function_call>``: MiniMax's invoke wire inside ``<dots_function_call>``. One block may
hold several ``<invoke>`` elements (parallel calls, whitespace between) and a reply may hold
several blocks, after an optional ``<think>...</think>`` block (the servers pair the parser with
a Qwen3-style reasoning parser). Values are raw text (a string as written, anything else as
JSON) typed by the schema; a ``</dots_function_call>`` inside a value does not end the block. A
missing ``</dots_function_call>`` is accepted only when the reply ended normally right after
``</invoke>``.

Strictness (vLLM's parser is looser): names are read in double quotes only (its documented
form; bare or single-quoted names are text), values exactly as written (not stripped), and the
JSON-object body vLLM accepts as a fallback is not read: no source shows the model writing it,
so such a block stays text, as does any block with text between its invokes.
"""

from __future__ import annotations

from app.engine.formats.base import register
from app.engine.formats.xml_params import InvokeFormat

__all__ = ["DOTS"]

OPEN = "<dots_function_call>"
CLOSE = "</dots_function_call>"

DOTS = register(
    InvokeFormat("dots", "dots invoke XML (dots-studio dots3-note)", (OPEN,), close=CLOSE, single_region=True)
)
