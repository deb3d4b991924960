"""GLM-Z1-0414's template through the server: the tool's name on a line, its JSON arguments next.

GLM-4's wire has no marker: a reply whose first line names a declared tool, with a JSON object on
the next, is a call; further calls follow after ``<|assistant|>``. The template opens ``<think>``
in its generation prompt, so each scripted reply closes its reasoning first. The client gets the
calls, plain and streamed, with neither the name line nor the header in the text, and nothing of
what a model writes after the result's header; a reply that names no declared tool is text."""

from __future__ import annotations

from tests.server.conftest import TEMPLATES, TOOLS
from tests.server.scripted_replies import read_plain, read_streamed, reply_fixtures, stray_wire_tests

USER = [{"role": "user", "content": "Weather in Oslo, and the time there?"}]
OSLO = {"city": "Oslo"}
ZONE = {"zone": "Europe/Oslo"}
REPLIES = {
    "glm4-one": 'The user wants the weather.</think>\nget_weather\n{"city": "Oslo"}',
    "glm4-two": 'Two tools.</think>\nget_weather \n{"city": "Oslo"}<|assistant|>get_time\n{"zone": "Europe/Oslo"}',
    "glm4-answer": "Easy.</think>\nweather\n{} is what I would call it.",
    # GGUFs that do not mark <|observation|> as an end of generation: the model goes on to write
    # the result itself, and then the next user turn
    "glm4-runs-on": 'Weather.</think>\nget_weather\n{"city": "Oslo"}<|observation|>\nsunny<|user|>\nThanks',
}
CALLS = {
    "glm4-one": [("get_weather", OSLO)],
    "glm4-two": [("get_weather", OSLO), ("get_time", ZONE)],
    "glm4-runs-on": [("get_weather", OSLO)],
}
TEMPLATE = TEMPLATES / "glm-z1-9b-0414.jinja"

server, client = reply_fixtures(
    "glm4",
    TEMPLATE.read_text(encoding="utf-8"),
    REPLIES,
    control=("[gMASK]", "<sop>", "<|user|>"),
    eos="<|user|>",
)

test_the_template_is_glm4, test_named_calls_reach_the_client_as_calls = stray_wire_tests(
    TEMPLATE,
    "glm4",
    {k: CALLS[k] for k in CALLS},
    USER,
    TOOLS,
    markers=("get_", "<|assistant|>", "{", "observation", "sunny"),
)


def test_a_name_no_tool_has_is_an_answer(client) -> None:
    for read in (read_plain, read_streamed):
        got, content, finish = read(client, "glm4-answer", USER, TOOLS)
        assert got == [] and finish == "stop"
        assert (content or "").strip() == "weather\n{} is what I would call it."
