"""HyperCLOVA X SEED Think 14B's template (vLLM publishes the model card's format) through the server.

The template ends a plain reply ``<|im_end|><|endofturn|>`` and a call message
``<|im_end|><|stop|>`` (the card's two ends of generation), so detection ends the call turn at the
shared ``<|im_end|>``. Each scripted GGUF here carries the template, its end of generation
``<|endofturn|>``, and writes one call message whatever the prompt: the client gets calls, plain
and streamed, with nothing of the role's header in the text."""

from __future__ import annotations

from tests.server.conftest import TEMPLATES, TOOLS
from tests.server.scripted_replies import reply_fixtures, stray_wire_tests

USER = [{"role": "user", "content": "Weather in Oslo, and the time there?"}]
OSLO = {"city": "Oslo"}
ZONE = {"zone": "Europe/Oslo"}
HEADER = " -> tool/function_call\n"
REPLIES = {
    "clova-one": HEADER + '[{"name": "get_weather", "arguments": {"city": "Oslo"}}]<|im_end|>',
    "clova-two": HEADER
    + '[{"name": "get_weather", "arguments": {"city": "Oslo"}}, '
    + '{"name": "get_time", "parameters": {"zone": "Europe/Oslo"}}]',
}
CALLS = {
    "clova-one": [("get_weather", OSLO)],
    "clova-two": [("get_weather", OSLO), ("get_time", ZONE)],
}
TEMPLATE = TEMPLATES / "vllm-hyperclovax-seed-think-14b.jinja"

server, client = reply_fixtures(
    "hyperclovax",
    TEMPLATE.read_text(encoding="utf-8"),
    REPLIES,
    control=("<|im_start|>", "<|im_end|>", "<|stop|>", "<|endofturn|>"),
    eos="<|endofturn|>",
)

test_the_template_is_hyperclovax, test_call_messages_reach_the_client_as_calls = stray_wire_tests(
    TEMPLATE, "hyperclovax", CALLS, USER, TOOLS, markers=("tool/function_call", "<|im_end|>", "[")
)


def test_the_server_detects_the_family_from_the_gguf(server) -> None:
    """The model's own template, read from its GGUF with its end-of-generation token, names the
    family the server reads its replies with."""
    from app.engine.formats import detect_template

    source = TEMPLATE.read_text(encoding="utf-8")
    assert detect_template(source, eos_token="<|endofturn|>") == "hyperclovax"
    assert detect_template(source, eos_token="<|im_end|>") == "hyperclovax"
