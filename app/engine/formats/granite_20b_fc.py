"""IBM Granite 20B function calling: ``<function_call> {"name": NAME, "arguments": {...}}``.

Each call is the marker ``<function_call>`` and, after optional whitespace, one JSON object with
``name`` and ``arguments`` (an object, or a JSON string holding one) and nothing else; no closing
marker. Several calls follow one another, text may stand before them. The template asks the model
to call the pseudo-tool ``no_function`` when no tool fits: it comes back as a call of that name
like any other (the dispatcher answers that no such tool exists).
"""

from __future__ import annotations

from app.engine.formats.base import register
from app.engine.formats.open_json import OpenObjectFormat

__all__ = ["GRANITE_20B_FC"]

OPEN = "<function_call>"

GRANITE_20B_FC = register(
    OpenObjectFormat(
        "granite-20b-fc", "Granite 20B function calling (IBM granite-20b-functioncalling)", (OPEN,), gap=" "
    )
)
