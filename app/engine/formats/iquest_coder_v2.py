"""iQuest Coder V2 calls (IQuestLab IQuest-Coder-V2): GLM's arg pairs under iQuest's own call tags.

``<iquestcoder_tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>...</iquestcoder_tool_call>``,
any number per reply, whitespace allowed between the name and the tags (the model writes the
compact layout; vLLM's ``iquest_coder_v2`` parser reads both). The body is read by GLM's reader
(``glm.parse_glm_call``), exactly as GLM's: values are raw text typed by the tool's schema
(``08080`` stays a string for a string property), whitespace inside ``<arg_value>`` is the
value's; a marker inside a value does not end the call, an ``</arg_value>`` inside one closes it
only when the next ``<arg_key>`` or ``</iquestcoder_tool_call>`` follows; a last value whose
``</arg_value>`` is missing ends at a ``</iquestcoder_tool_call>`` that ends the reply or is
followed by the next call. A call without its ``</iquestcoder_tool_call>`` is text (cut by the
token limit: an incomplete call); a duplicate key, a key without a value or stray text makes the
call text. Reasoning is a ``<think>...</think>`` block (thinking is on by default: a reply may
start inside it, closing it with ``</think>`` only); the assistant turn opens with
``<|iquestcoder_assistant|>``, and a call opener ends an unclosed block (the IQuest Q1 reasoning
parser's "adaptive thinking"). No published template was found; see the stand-in in the tests.
"""

from __future__ import annotations

from typing import Any

from app.engine.formats.base import register
from app.engine.formats.glm import K_CLOSE, K_OPEN, V_CLOSE, V_OPEN, GlmFormat
from app.engine.formats.sections import raw_text

__all__ = ["ASSISTANT", "CLOSE", "IQUEST_CODER_V2", "OPEN", "IquestCoderV2Format"]

OPEN = "<iquestcoder_tool_call>"
CLOSE = "</iquestcoder_tool_call>"
ASSISTANT = "<|iquestcoder_assistant|>"  # the assistant turn's marker (its reasoning parser's)


class IquestCoderV2Format(GlmFormat):
    """GLM's reader and scanner under ``<iquestcoder_tool_call>`` tags, written compactly."""

    name = "iquest-coder-v2"
    label = "iQuest Coder V2 arg pairs (IQuestLab IQuest-Coder-V2)"
    openers = (OPEN,)
    tail = CLOSE
    unclosed = False  # GLM's deviation, not iQuest's
    param_after = ""  # compact: nothing between a value's close and the next key

    def head(self, name: str) -> str:
        return f"{OPEN}{name}"

    def param_head(self, key: str) -> str:
        return f"{K_OPEN}{key}{K_CLOSE}{V_OPEN}"

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        pairs = "".join(f"{self.param_head(k)}{raw_text(v)}{V_CLOSE}" for k, v in arguments.items())
        return f"{OPEN}{name}{pairs}{CLOSE}"


IQUEST_CODER_V2 = register(IquestCoderV2Format())
