"""Kimi K2's copied call ids through the API server, read by the official openai client.

Kimi names the tool of a call in the call's id (``functions.NAME:IDX``) and copies the ids it sees
in the conversation: after a client that rewrote them it writes ``functions_NAME_1``, after a
client's own ids no name at all (``call00004``, ``call_...``). Each scripted GGUF here has a real
Kimi K2 template and writes one such reply whatever the prompt, so each request shows what a
client gets: a call to the tool the id names, or to the one tool the arguments fit. The same
for calls whose wrappers were left out (a section without the per-call markers, calls without
the section): calls, never the markers as text. And the prompt of a conversation with a
client's own ids shows Kimi its own ids, never the client's."""

from __future__ import annotations

import json
from typing import Any

from tests.server.conftest import TEMPLATES, TOOLS
from tests.server.scripted_replies import reply_fixtures, stray_wire_tests

USER = [{"role": "user", "content": "Weather in Oslo, and the time there?"}]
OSLO = {"city": "Oslo"}
ZONE = {"zone": "Europe/Oslo"}
TEMPLATE = TEMPLATES / "older" / "moonshotai-Kimi-K2.jinja"


def _section(*calls: tuple[str, dict[str, Any]]) -> str:
    body = "".join(
        f"<|tool_call_begin|>{cid}<|tool_call_argument_begin|>{json.dumps(args)}<|tool_call_end|>"
        for cid, args in calls
    )
    return f"<|tool_calls_section_begin|>{body}<|tool_calls_section_end|>"


REPLIES = {
    "kimi-underscored": _section(("functions_get_weather_1", OSLO)),
    "kimi-joined": _section(("functionsget_time7", ZONE)),
    "kimi-client-ids": _section(("call00004", OSLO), ("call_Xa91kq", ZONE)),
    "kimi-section-without-call-markers": _section(("functions.get_weather:0", OSLO))
    .replace("<|tool_call_begin|>", "")
    .replace("<|tool_call_end|>", ""),
    "kimi-calls-without-section": _section(("functions.get_weather:0", OSLO), ("functions.get_time:1", ZONE))
    .removeprefix("<|tool_calls_section_begin|>")
    .removesuffix("<|tool_calls_section_end|>"),
}
CALLS = {
    "kimi-underscored": [("get_weather", OSLO)],
    "kimi-joined": [("get_time", ZONE)],
    "kimi-client-ids": [("get_weather", OSLO), ("get_time", ZONE)],
    "kimi-section-without-call-markers": [("get_weather", OSLO)],
    "kimi-calls-without-section": [("get_weather", OSLO), ("get_time", ZONE)],
}
CONTROL = ("<|im_user|>", "<|im_assistant|>", "<|im_system|>", "<|im_middle|>", "<|im_end|>")


server, client = reply_fixtures(
    "kimi", TEMPLATE.read_text(encoding="utf-8"), REPLIES, control=CONTROL, eos="<|im_end|>"
)


test_the_template_is_kimi_k2_s, test_calls_named_by_copied_ids_reach_the_client_as_calls_to_its_tools = (
    stray_wire_tests(TEMPLATE, "kimi-k2", CALLS, USER, TOOLS)
)


def test_a_conversation_with_the_client_s_ids_shows_kimi_its_own(server):
    import httpx

    messages = [
        *USER,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                for cid, name, args in (("call_q7Rk2", "get_weather", OSLO), ("toolu_01Bx", "get_time", ZONE))
            ],
        },
        {"role": "tool", "tool_call_id": "call_q7Rk2", "content": "rain, 4 C"},
        {"role": "tool", "tool_call_id": "toolu_01Bx", "content": "14:05"},
    ]
    body = {"model": "kimi-client-ids", "messages": messages, "tools": TOOLS}
    r = httpx.post(server.url + "/apply-template", json=body, timeout=60)
    assert r.status_code == 200, r.text
    prompt = r.json()["prompt"]
    # each result answers its call by the id Kimi writes, not by the client's
    assert "## Return of functions.get_weather:0\\nrain, 4 C" in prompt
    assert "## Return of functions.get_time:1\\n14:05" in prompt
    assert "call_q7Rk2" not in prompt and "toolu_01Bx" not in prompt
