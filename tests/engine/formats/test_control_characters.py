"""A raw control character (a newline, a tab) inside a JSON string of a call's arguments.

JSON forbids them there, but models write multi-line code and messages into an argument so:
Qwen3-Next's and Qwen3.6's edits, Kimi's commit messages, Command's file contents (the servers'
and agents' trackers are full of "Invalid control character", each dropping the call). Every
family whose wire writes JSON strings reads such a call, with the characters as written, parsed
and streamed alike; the XML wires' values, text typed by the schema, decode an array or object so
too. Elsewhere such a character keeps its meaning (whitespace between tokens, or not JSON).
Python-notation calls (pythonic, LFM2, Olmo 3) keep Python's rule: no raw newline in a string."""

from __future__ import annotations

import json

import pytest

from app.engine.formats import FORMATS
from app.json_schema import type_value
from tests.engine.formats.harness import TOOLS, Case, check_parse, check_splits

VALUE = "\t\tif x:\n\t\t\treturn 1\r\n"
ESCAPED = json.dumps(VALUE)[1:-1]


def _json_families() -> list[str]:
    """The families whose example call writes a string argument as a JSON string (Python's
    notation, ``set_port(blob='...')``, escapes the same characters the same way, but a raw
    newline inside a Python string is no literal: those families keep Python's rule)."""
    return [
        n
        for n, f in FORMATS.items()
        if ESCAPED in (text := f.example_call("set_port", {"blob": VALUE})) and "set_port(blob=" not in text
    ]


JSON_FAMILIES = _json_families()


def test_most_families_write_json_strings():
    assert {"hermes", "llama3", "mistral", "harmony", "inkling"} <= set(JSON_FAMILIES)


@pytest.mark.parametrize("family", JSON_FAMILIES)
def test_a_raw_newline_or_tab_in_a_json_string_is_read_as_written(family):
    fmt = FORMATS[family]
    text = fmt.example_call("set_port", {"blob": VALUE}).replace(ESCAPED, VALUE)
    case = Case(f"{family}-raw-control", text, calls=[("set_port", {"blob": VALUE})])
    check_parse(fmt, case)
    check_splits(fmt, case)


def test_stringified_arguments_with_a_raw_newline_are_read():
    fmt = FORMATS["hermes"]
    args = json.dumps(json.dumps({"blob": "a"})).replace('"a', '"a\n', 1)  # a raw newline inside
    got = fmt.parse('<tool_call>\n{"name": "set_port", "arguments": ' + args + "}\n</tool_call>", TOOLS)
    assert [(c.name, c.arguments) for c in got.tool_calls] == [("set_port", {"blob": "a\n"})]


def test_an_array_written_as_text_decodes_with_raw_newlines_in_its_strings():
    schema = {"type": "array", "items": {"type": "object", "properties": {"old": {"type": "string"}}}}
    text = '[{"old": "x = 1\n\ty = 2"}]'  # a Qwen XML parameter's value, as the model writes it
    assert type_value(text, schema, raw=True) == [{"old": "x = 1\n\ty = 2"}]
    assert type_value(text, schema) == [{"old": "x = 1\n\ty = 2"}]  # a JSON wire's stringified array
    tools = [
        {
            "type": "function",
            "function": {"name": "edit", "parameters": {"type": "object", "properties": {"edits": schema}}},
        }
    ]
    reply = (
        "<tool_call>\n<function=edit>\n<parameter=edits>\n"
        + text
        + "\n</parameter>\n</function>\n</tool_call>"
    )
    (call,) = FORMATS["qwen-xml"].parse(reply, tools).tool_calls
    assert call.arguments == {"edits": [{"old": "x = 1\n\ty = 2"}]}


def test_outside_a_string_nothing_changes():
    fmt = FORMATS["hermes"]
    # between tokens a newline or tab is JSON's whitespace, as before
    got = fmt.parse('<tool_call>\n{"name":\t"get_time",\n"arguments": {}}\n</tool_call>', TOOLS)
    assert [c.name for c in got.tool_calls] == ["get_time"]
    # a key broken by a raw newline is still no call object
    broken = '<tool_call>\n{"na\nme": "get_time", "arguments": {}}\n</tool_call>'
    assert not fmt.parse(broken, TOOLS).tool_calls
