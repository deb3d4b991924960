"""StepFun Step-3 calls: one section of StepTML invocations.

``<｜tool_calls_begin｜>\\n<｜tool_call_begin｜>\\nfunction<｜tool_sep｜><steptml:invoke name="NAME">
<steptml:parameter name="K">V</steptml:parameter></steptml:invoke><｜tool_call_end｜>\\n
<｜tool_calls_end｜>``: the markers use the fullwidth bar ``｜`` and underscores (DeepSeek's use
``▁``); several calls stand one after another in the section, after an optional
``<think>...</think>`` block. Values are raw text (a string as written, anything else as JSON)
typed by the schema; a closing marker inside a value does not end the section. A missing
``<｜tool_calls_end｜>`` is accepted only when the reply ended normally right after a call.

The spelling written (the example call, the constraint grammar) is the one the published template
teaches in its system text (stepfun-ai/step3's chat_template.json, seen only in part: see
tests/fixtures/chat_templates/sources.txt): a newline after ``<｜tool_calls_begin｜>``, after
``<｜tool_call_begin｜>`` and after each ``<｜tool_call_end｜>``, none inside the invoke. Between
``<｜tool_call_begin｜>`` and ``function`` stands exactly that one newline or nothing (the spelling
the servers' parsers document); whitespace between the calls and around the invoke's parameters is
skipped (MiniMax's invoke wire). A template is known by its rendered call or by the markers it
names (``app.engine.formats.detect``).
"""

from __future__ import annotations

from app.engine.formats.base import register
from app.engine.formats.xml_params import InvokeFormat

__all__ = ["STEP3"]

OPEN = "<｜tool_calls_begin｜>"
CLOSE = "<｜tool_calls_end｜>"
CALL_BEGIN = "<｜tool_call_begin｜>"
CALL_END = "<｜tool_call_end｜>"
SEP = "<｜tool_sep｜>"
KIND = "function"

STEP3 = register(
    InvokeFormat(
        "step3",
        "Step-3 StepTML (StepFun Step-3)",
        (OPEN,),
        close=CLOSE,
        prefix="steptml:",
        call_begin=CALL_BEGIN + "\n" + KIND + SEP,
        call_begin_also=(CALL_BEGIN + KIND + SEP,),
        call_end=CALL_END,
        param_after="",
    )
)
