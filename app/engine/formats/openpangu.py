"""Huawei openPangu calls: ``<|tool_call_start|>[{"name": NAME, "arguments": {...}}, ...]<|tool_call_end|>``.

Nemotron v2's / Jamba's JSON list (``json_list``) between openPangu's ``<|tool_call_start|>`` /
``<|tool_call_end|>`` tokens (LFM2 writes a Python list between the same two tokens: the body
tells them apart, and each family reads only its own). Any number of calls in one list, after an
optional ``<think>...</think>`` reasoning block (openPangu 2.0's thinking tokens; its older
vocabulary's ``[unused16]`` / ``[unused17]`` are not read). Each element
has exactly ``name`` and one of ``arguments`` / ``parameters`` (openPangu v2's servers read
``parameters`` where ``arguments`` is missing); ``arguments`` written as a JSON string holding an
object is read as that object. Anything else in the region makes it text. The closing token is
implied when the reply ended normally right after the list; a list cut by the token limit keeps
its complete calls and the cut element is an incomplete call.

Not read: the ``[unused11]`` / ``[unused12]`` call markers the older Pangu server falls back to
when a vocabulary lacks the two tokens (such a model is a different vocabulary, and reading
generic unused-token names as markers would turn plain text into calls for every other model).
No published template was found: the family is chosen in Settings / ``--tool-format``.
"""

from __future__ import annotations

from app.engine.formats.base import THINK, register
from app.engine.formats.json_list import JsonListFormat

__all__ = ["OPENPANGU"]

OPEN = "<|tool_call_start|>"
CLOSE = "<|tool_call_end|>"
PARAMETERS = "parameters"


OPENPANGU = register(
    JsonListFormat(
        "openpangu",
        "openPangu JSON list (Huawei openPangu 2.0, openPangu v2, Pangu)",
        (OPEN,),
        close=CLOSE,
        reasoning=THINK,
        args_required=True,
        alt_args_key=PARAMETERS,
    )
)
