"""PLaMo 3 (``plamo3``): what its cases file cannot say. No published tool template was found, so
the family is chosen in Settings / ``--tool-format``; a template that renders PLaMo 3's request
section is still detected by the call it renders."""

from __future__ import annotations

from app.engine.formats import FORMATS, detect_template
from app.engine.formats.plamo3 import CONSTRAIN
from tests.engine.formats.cases.plamo3 import STAND_IN
from tests.engine.formats.harness import TOOLS


def test_the_stand_in_is_detected_by_its_rendered_call():
    assert detect_template(STAND_IN) == "plamo3"
    assert detect_template(STAND_IN, bos_token="<|plamo:bos|>", eos_token="<|plamo:tag|>") == "plamo3"


def test_a_template_that_leaves_out_the_constrain_hint_is_detected_too():
    # A past call written as PFN's API clients see it: <|plamo:msg|> without the hint.
    assert detect_template(STAND_IN.replace(CONSTRAIN, "")) == "plamo3"


def test_a_template_that_only_names_the_tags_is_not_detected():
    # The tags in the system text alone (no call rendered) decide nothing.
    no_call = STAND_IN.replace("{%- if m.tool_calls %}", "{%- if false %}")
    assert detect_template(no_call) is None


def test_the_example_call_reads_back():
    fmt = FORMATS["plamo3"]
    text = fmt.example_call("search", {"query": "q <|plamo:end_tool_requests:plamo|>", "limit": 2})
    reply = fmt.parse(text, TOOLS)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("search", {"query": "q <|plamo:end_tool_requests:plamo|>", "limit": 2})
    ]
    assert reply.content == "" and reply.reasoning == ""
