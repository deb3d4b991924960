"""The check knows every family's call openers: a reply whose text holds one is a call that did not
parse (or markup that leaked), whatever family the model behind the endpoint writes."""

from __future__ import annotations

import pytest

from app.check.scorer import FAILURE_CLASSES, call_shaped, leaked_marker
from app.engine.formats import FORMATS

# Openers that are not a call's mark on their own, each with its reason.
EXEMPT = {
    # generic text: JSON, a list, a fence, a word (the check finds such calls by the tool's name)
    "{": "JSON",
    "[": "a list",
    "```": "a code fence",
    "call:": "a word",
    "Action:": "a word",
    ">>>": "a prompt",
    " to=": "a word",
    "<tools>": "the tools' own tag in system prompts",
    "<parameter=": "a parameter inside a call (its opener is found first)",
    "<parameter": "a parameter inside a call (its opener is found first)",
    # answer and message frames: structure, not calls
    "<response>": "an answer frame",
    "<answer>": "an answer frame",
    "<|START_RESPONSE|>": "an answer frame",
    "<|END_RESPONSE|>": "an answer frame",
    "<co>": "a citation",
    "<|CHATBOT_TOKEN|>": "a role",
    "<|content|>": "an answer frame",
    "<|begin|>assistant": "a role",
    "<|end|>": "an end of turn (a marker)",
    "[END FINAL RESPONSE]": "an answer frame",
    "<|open|>response<|sep|>": "an answer frame",
    '<|open|>message role="assistant"<|sep|>': "a role",
    "<|end_of_msg|>": "an end of message",
    "<|start|>": "a role (a marker)",
    "<|assistant|>": "a role (a marker): GLM-4's calls open with a tool's name",
    "<|channel|>": "a channel (a marker)",
}


def _openers() -> list[tuple[str, str]]:
    return sorted(
        {
            (name, op)
            for name, fmt in FORMATS.items()
            for op in fmt.openers
            if op not in EXEMPT and not op.lstrip().startswith(("</", "<|close|>"))
        }
    )


@pytest.mark.parametrize(("family", "opener"), _openers(), ids=[f"{f}:{o!r}" for f, o in _openers()])
def test_every_family_s_call_opener_is_a_call_in_the_text(family, opener):
    text = f'Sure. {opener} name="lookup">'
    assert call_shaped(text, [], markers_only=True) is not None, (family, opener)
    assert leaked_marker(text) is not None, (family, opener)


def test_glm4_s_role_headers_are_leaked_markers_not_calls():
    for header in ("<|assistant|>", "<|observation|>"):
        text = f"Sure. {header}get_time"
        assert leaked_marker(text) is not None and call_shaped(text, [], markers_only=True) is None


def test_a_plain_answer_holds_no_call_and_no_marker():
    text = "The weather in Paris is sunny: 21 C, light wind. Call me if you need more (tools aside)."
    assert call_shaped(text, [], markers_only=True) is None
    assert leaked_marker(text) is None
    assert "unparsed_tool_call" in FAILURE_CLASSES and "marker_leak" in FAILURE_CLASSES
