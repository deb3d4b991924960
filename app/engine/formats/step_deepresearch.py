"""StepFun Step-DeepResearch calls: StepTML invocations in one ``<steptml:toolcall>`` block.

``<steptml:toolcall>\\n<steptml:invoke name="NAME">\\n<steptml:parameter name="K">V</steptml:parameter>\\n
</steptml:invoke>\\n</steptml:toolcall>``: MiniMax's invoke wire (``xml_params.InvokeFormat``) with
Step-3's ``steptml:`` tag prefix and a ``<steptml:toolcall>`` wrapper instead of Step-3's
``<｜tool_calls_begin｜>`` section. One block may hold several invokes (parallel calls), after an
optional ``<think>...</think>`` block. Values are raw text (a string as written, anything else as
JSON) typed by the tool's schema; a ``</steptml:toolcall>`` inside a value does not end the block.
A missing ``</steptml:toolcall>`` is accepted only when the reply ended normally right after
``</steptml:invoke>``. Anything else inside the block (text between invokes, an unquoted name, a
repeated parameter) makes the whole block text.

Not read (the servers' parser is looser): values are kept as written, not stripped of
surrounding whitespace, and a list item holding quoted strings is not split into several items.
No published template was found: the family is chosen in Settings / ``--tool-format``.
"""

from __future__ import annotations

from app.engine.formats.base import register
from app.engine.formats.xml_params import InvokeFormat

__all__ = ["STEP_DEEPRESEARCH"]

OPEN = "<steptml:toolcall>"
CLOSE = "</steptml:toolcall>"

STEP_DEEPRESEARCH = register(
    InvokeFormat(
        "step-deepresearch",
        "Step DeepResearch StepTML (StepFun Step-DeepResearch)",
        (OPEN,),
        close=CLOSE,
        prefix="steptml:",
        single_region=True,
    )
)
