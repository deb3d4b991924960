"""Google FunctionGemma calls: ``<start_function_call>call:NAME{k:<escape>v<escape>,...}<end_function_call>``.

Gemma 4's value notation (read by ``gemma4``'s reader) with FunctionGemma's own markers: strings
between ``<escape>`` delimiters (no escapes: everything between them is the string), numbers,
``true``/``false``/``null``, nested ``{...}`` objects and ``[...]`` arrays, bare keys. Any number of
calls, with text around them; the ``<start_function_response>`` the model writes after its calls
(its stop token) is structure. A ``<end_function_call>`` inside a string does not end the call. A
string holding Gemma 4's own ``<|"|>`` delimiter is not this wire (the region is text). The
published template (LiteRT-LM's) takes arguments already written in the notation and renders no
probe call, so detection knows it by its markers (``app.engine.formats.detect``).
"""

from __future__ import annotations

from app.engine.formats.base import register
from app.engine.formats.gemma4 import GemmaFormat

__all__ = ["FUNCTIONGEMMA"]

OPEN = "<start_function_call>"
CLOSE = "<end_function_call>"
ESC = "<escape>"
RESPONSE = "<start_function_response>"  # written after the calls (the model's stop token)

FUNCTIONGEMMA = register(
    GemmaFormat(
        "functiongemma",
        "FunctionGemma (Google FunctionGemma 270M)",
        (OPEN,),
        close=CLOSE,
        quote=ESC,
        response=RESPONSE,
        bare=False,
    )
)
