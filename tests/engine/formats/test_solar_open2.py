"""Solar Open2 (Solar Pro 4) beside Solar Open: detection of its stand-in template, the two
Upstage wires kept apart, the thinking switch of its generation prompt, and the one-sided key
tag of the shared arg-pair reader."""

from __future__ import annotations

from app.engine.formats import FORMATS, detect_template
from app.engine.formats.xml_params import read_arg_pairs
from tests.engine.formats.cases.solar_open2 import STAND_IN
from tests.engine.formats.harness import TOOLS
from tests.test_cli import REPO

SOLAR_OPEN = REPO / "tests" / "fixtures" / "chat_templates" / "upstage-Solar-Open-100B.jinja"


def test_the_stand_in_is_detected_as_solar_open2_and_solar_open_stays_solar():
    assert detect_template(STAND_IN, eos_token="<|im:end|>") == "solar-open2"
    assert detect_template(STAND_IN) == "solar-open2"  # the end of a turn learned from the template
    assert detect_template(SOLAR_OPEN.read_text()) == "solar"


def test_neither_upstage_family_reads_the_other_s_calls():
    args = {"city": "Paris", "days": 3}
    open2, solar = FORMATS["solar-open2"], FORMATS["solar"]
    assert not solar.parse(open2.example_call("get_weather", args), TOOLS).tool_calls
    assert not open2.parse(solar.example_call("get_weather", args), TOOLS).tool_calls


def test_the_generation_prompt_opens_the_reasoning_and_thinking_off_closes_it():
    fmt = FORMATS["solar-open2"]
    on = "<|im:start|>user<|im:content|>hi<|im:end|>\n<|im:start|>assistant<|im:content|><|think:start|>"
    assert fmt.opens_in_reasoning(on)
    assert not fmt.opens_in_reasoning(on + "<|think:end|>")
    reply = fmt.parse("plan<|think:end|>Hello.", TOOLS, in_reasoning=True)
    assert (reply.reasoning, reply.content) == ("plan", "Hello.")


def test_a_joined_key_tag_keeps_the_key_exact_and_the_value_s_whitespace():
    key, value = ("<k>", "<v>"), ("", "</v>")
    assert read_arg_pairs("<k>a<v> x\n</v>", 0, key=key, value=value, joined=True) == ({"a": " x\n"}, 14)
    assert read_arg_pairs("<k> a <v>x</v>", 0, key=key, value=value, joined=True) is None
    # without it, the reader is as it was: the key stripped, whitespace before the value skipped
    pairs = ("<k>", "</k>"), ("<v>", "</v>")
    assert read_arg_pairs("<k> a </k> <v>x</v>", 0, key=pairs[0], value=pairs[1]) == ({"a": "x"}, 19)
