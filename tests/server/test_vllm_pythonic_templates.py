"""vLLM's pythonic tool templates (Gemma 3's, Llama 3.2's) through the API server.

Google's own Gemma 3 template takes no tools; vLLM publishes one that teaches a Python call list
(``[get_weather(city="Oslo")]``), and one for Llama 3.2. Both render a past call so that no
family reads it back (its arguments without their commas, or unquoted), so detection knows them
by the call list their system prompt teaches. Each scripted GGUF here carries such a template
and writes one call list whatever the prompt: the client gets calls, plain and streamed."""

from __future__ import annotations

from tests.server.conftest import TEMPLATES, TOOLS
from tests.server.scripted_replies import reply_fixtures, stray_wire_tests

USER = [{"role": "user", "content": "Weather in Oslo, and the time there?"}]
OSLO = {"city": "Oslo"}
ZONE = {"zone": "Europe/Oslo"}
REPLIES = {
    "gemma3-pythonic-one": '[get_weather(city="Oslo")]',
    "gemma3-pythonic-two": '[get_weather(city="Oslo"), get_time(zone="Europe/Oslo")]',
}
CALLS = {
    "gemma3-pythonic-one": [("get_weather", OSLO)],
    "gemma3-pythonic-two": [("get_weather", OSLO), ("get_time", ZONE)],
}
GEMMA3 = TEMPLATES / "vllm-gemma3-pythonic.jinja"
LLAMA32 = TEMPLATES / "vllm-llama3.2-pythonic.jinja"

server, client = reply_fixtures(
    "gemma3-pythonic",
    GEMMA3.read_text(encoding="utf-8"),
    REPLIES,
    control=("<start_of_turn>", "<end_of_turn>"),
    eos="<end_of_turn>",
)

test_the_template_is_pythonic, test_gemma3_s_call_lists_reach_the_client_as_calls = stray_wire_tests(
    GEMMA3, "pythonic", CALLS, USER, TOOLS, markers=("[", "(")
)


def test_the_llama_3_2_template_is_pythonic_too() -> None:
    from app.engine.formats import detect_template

    assert detect_template(LLAMA32.read_text(encoding="utf-8")) == "pythonic"
