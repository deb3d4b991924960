"""ServiceNow Apriel 1.5 / 1.6 calls: ``<tool_calls>[{"name": NAME, "arguments": {...}}, ...]</tool_calls>``.

Apriel reasons in plain text before ``[BEGIN FINAL RESPONSE]``: Apriel 1.6's generation prompt
ends with ``Here are my reasoning steps:`` (the reply starts inside the reasoning), Apriel 1.5's
with the assistant header (its reply may start with that phrase, or reason without it; the
closing marker makes the text before it reasoning). Apriel 1.5 ends its final response with
``[END FINAL RESPONSE]``, which is consumed (never content). An element may carry the model's ``id``
(the 1.6 template writes it for past calls), which is kept. ``arguments`` written as a JSON
string holding an object is read as that object.
"""

from __future__ import annotations

from app.engine.formats.base import register
from app.engine.formats.json_list import JsonListFormat

__all__ = ["APRIEL"]

OPEN = "<tool_calls>"
CLOSE = "</tool_calls>"
REASONING_START = "Here are my reasoning steps:"
FINAL = "[BEGIN FINAL RESPONSE]"
END_FINAL = "[END FINAL RESPONSE]"  # Apriel 1.5 closes its final response with it: structure

APRIEL = register(
    JsonListFormat(
        "apriel",
        "Apriel JSON list (ServiceNow Apriel 1.5, 1.6)",
        (OPEN, END_FINAL),  # END_FINAL: the end of the final response, consumed
        close=CLOSE,
        reasoning=(REASONING_START, FINAL),
        args_required=True,
        id_key="id",
    )
)
