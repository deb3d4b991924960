"""OpenAI's Responses API (``/v1/responses``) through the official openai SDK: plain and streamed
(the SDK's stream accumulator checks every event's order and identity), a whole call -> output ->
answer loop, reasoning, parallel calls, and the 400s that name the Responses field. The scripted
models of ``tests.server.conftest`` on a real server."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.server.conftest import ANSWER, THOUGHT, TOOLS

QUESTION = "What is the weather in Oslo?"
#: a question, the model's call and the call's output: what the loop model answers with text
ANSWERED_CALL = [
    {"role": "user", "content": QUESTION},
    {"type": "function_call", "call_id": "call_abcdefghi", "name": "get_weather", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_abcdefghi", "output": "<|tool_done|>"},
]
#: the Responses API's flat function tools
FUNCTIONS = [{"type": "function", **t["function"]} for t in TOOLS]


@pytest.fixture(scope="module")
def client(family_server):
    from openai import OpenAI

    return OpenAI(base_url=family_server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


def _calls(response) -> list[tuple[str, dict]]:
    return [(o.name, json.loads(o.arguments)) for o in response.output if o.type == "function_call"]


def test_a_call_then_its_output_then_the_answer(client):
    first = client.responses.create(model="loop-hermes", input=QUESTION, tools=FUNCTIONS)
    assert first.status == "completed" and first.object == "response" and first.id.startswith("resp_")
    (call,) = [o for o in first.output if o.type == "function_call"]
    assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "Oslo"})
    assert call.call_id.startswith("call_") and first.usage.input_tokens > 0
    # the conversation goes back whole: the call item as it came, its output
    second = client.responses.create(
        model="loop-hermes",
        input=[
            {"role": "user", "content": QUESTION},
            call.model_dump(exclude_none=True),
            {"type": "function_call_output", "call_id": call.call_id, "output": "<|tool_done|>"},
        ],
        tools=FUNCTIONS,
    )
    assert second.output_text == ANSWER and not _calls(second)
    assert [o.type for o in second.output] == ["message"]


def test_previous_response_id_continues_a_kept_response(client):
    """The canonical multi-turn form: the next request names the last response and sends only
    what is new (here the call's output); the server adds the conversation it kept."""
    import openai

    first = client.responses.create(
        model="loop-hermes", input=QUESTION, tools=FUNCTIONS, instructions="Be brief."
    )
    (call,) = [o for o in first.output if o.type == "function_call"]
    second = client.responses.create(
        model="loop-hermes",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "<|tool_done|>"}],
        tools=FUNCTIONS,
    )
    assert second.output_text == ANSWER and second.previous_response_id == first.id
    # continuing the same response again reads the same kept conversation (not one a request changed)
    again = client.responses.create(
        model="loop-hermes",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "<|tool_done|>"}],
        tools=FUNCTIONS,
    )
    assert again.output_text == ANSWER and again.usage.input_tokens == second.usage.input_tokens
    # the conversation was read whole: more prompt than the output alone
    assert second.usage.input_tokens > first.usage.input_tokens
    # streamed responses are kept too, and can be read back and forgotten
    with client.responses.stream(model="loop-hermes", input=QUESTION, tools=FUNCTIONS) as stream:
        streamed = stream.get_final_response()
    assert client.responses.retrieve(streamed.id).id == streamed.id
    client.responses.delete(streamed.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(streamed.id)
    # store: false keeps nothing
    unkept = client.responses.create(model="loop-hermes", input=QUESTION, store=False)
    assert unkept.store is False
    with pytest.raises(openai.BadRequestError, match="is not a response this server keeps"):
        client.responses.create(model="loop-hermes", previous_response_id=unkept.id, input="again")


def test_the_stream_accumulates_to_the_plain_answer(client):
    plain = client.responses.create(model="call-hermes-parallel", input=QUESTION, tools=FUNCTIONS)
    with client.responses.stream(model="call-hermes-parallel", input=QUESTION, tools=FUNCTIONS) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert (
        _calls(final)
        == _calls(plain)
        == [("get_weather", {"city": "Oslo"}), ("get_time", {"zone": "Europe/Oslo"})]
    )
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert kinds.count("response.output_item.added") == kinds.count("response.output_item.done") == 2
    assert "response.function_call_arguments.delta" in kinds


def test_text_streams_in_one_message_item(client):
    with client.responses.stream(
        model="loop-hermes",
        input=ANSWERED_CALL,
        tools=FUNCTIONS,
    ) as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == final.output_text == ANSWER


def test_reasoning_comes_back_as_a_reasoning_item_and_goes_back_in(client):
    plain = client.responses.create(model="think-hermes", input=QUESTION, tools=FUNCTIONS)
    kinds = [o.type for o in plain.output]
    assert kinds == ["reasoning", "function_call"]
    assert plain.output[0].content[0].text.strip() == THOUGHT
    with client.responses.stream(model="think-hermes", input=QUESTION, tools=FUNCTIONS) as stream:
        streamed = "".join(e.delta for e in stream if e.type == "response.reasoning_text.delta")
        final = stream.get_final_response()
    assert streamed == plain.output[0].content[0].text and [o.type for o in final.output] == kinds
    # the reasoning item and the call go back as they came
    call = plain.output[1]
    again = client.responses.create(
        model="think-hermes",
        tools=FUNCTIONS,
        input=[
            {"role": "user", "content": QUESTION},
            *(o.model_dump(exclude_none=True) for o in plain.output),
            {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"},
        ],
    )
    assert again.status == "completed"


def test_tool_choice_none_and_a_cut_reply(client):
    none = client.responses.create(model="call-hermes", input=QUESTION, tools=FUNCTIONS, tool_choice="none")
    assert not _calls(none)
    cut = client.responses.create(model="loop-hermes", input=QUESTION, max_output_tokens=1)
    assert cut.status == "incomplete" and cut.incomplete_details.reason == "max_output_tokens"
    assert [o.status for o in cut.output] == ["incomplete"]
    streamed = httpx.post(
        str(client.base_url) + "responses",
        json={"model": "loop-hermes", "input": QUESTION, "max_output_tokens": 1, "stream": True},
        timeout=60,
    ).text
    events = [json.loads(line[6:]) for line in streamed.splitlines() if line.startswith("data: ")]
    assert events[-1]["type"] == "response.incomplete"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    done = [e["item"]["status"] for e in events if e["type"] == "response.output_item.done"]
    assert done == ["incomplete"] and events[-1]["response"]["output"][0]["status"] == "incomplete"
    named = client.responses.create(
        model="call-hermes-parallel",
        input=QUESTION,
        tools=FUNCTIONS,
        tool_choice={"type": "function", "name": "get_time"},
    )
    assert {name for name, _ in _calls(named)} == {"get_time"}  # held to the named function


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"input": []}, "input must hold at least one item"),
        ({"input": 3}, "input must be a string or an array of items, got number"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0] is an item_reference, which"),
        ({"input": "hi", "previous_response_id": "resp_1"}, "'resp_1' is not a response this server keeps"),
        ({"input": "hi", "tools": [{"type": "web_search"}]}, "tools[0] is the hosted tool 'web_search'"),
        ({"input": "hi", "max_output_tokens": 0}, "max_output_tokens"),
        (
            {
                "input": [
                    {"role": "user", "content": "hi"},
                    {"type": "function_call_output", "call_id": "x", "output": "1"},
                ]
            },
            "input[1] is a tool result for call 'x', but no earlier message made that call",
        ),
        ({"input": [{"role": "robot", "content": "hi"}]}, "input[0].role 'robot'"),
        ({"input": "hi", "text": {"format": {"type": "xml"}}}, "text.format.type must be"),
        (
            {
                "input": [
                    {"role": "user", "content": "hi"},
                    {"type": "function_call", "call_id": "c", "name": "", "arguments": "{}"},
                ]
            },
            "input[1].name '' is not a valid tool name",
        ),
        (
            {
                "input": [
                    {"role": "user", "content": "hi"},
                    {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{"},
                ]
            },
            "input[1].arguments is not valid JSON",
        ),
    ],
)
def test_what_it_cannot_serve_is_a_400_in_the_responses_words(family_server, body, words):
    r = httpx.post(family_server.url + "/v1/responses", json={"model": "loop-hermes", **body}, timeout=60)
    assert r.status_code == 400, r.text
    message = r.json()["error"]["message"]
    assert words in message and "messages" not in message, message


def test_the_kept_responses_are_bounded_and_the_least_recently_used_go_first():
    from app.server._state import RecentResponses

    kept = RecentResponses(max_items=3, max_bytes=100)
    for i in range(3):
        kept.put({"id": f"r{i}"}, [{"role": "user", "content": str(i)}], 10)
    assert kept.get("r0") is not None  # r0 is now the most recently used
    kept.put({"id": "r3"}, [], 10)  # a fourth: the least recently used (r1) goes
    assert [kept.get(f"r{i}") is not None for i in range(4)] == [True, False, True, True]
    # read in the order r0, r2, r3 just now: past the bytes, the least recently used (r0) goes
    kept.put({"id": "big"}, [], 80)
    assert kept.get("big") is not None and kept.get("r0") is None and kept.get("r2") is not None
    kept.put({"id": "huge"}, [], 101)  # larger than the whole bound: never kept
    assert kept.get("huge") is None
    assert kept.delete("big") and not kept.delete("big")


def test_a_request_never_changes_the_conversation_it_continues(client):
    """A request whose input begins with a call joins it to the kept reply's turn, on a copy: the
    same response continued afterwards reads as it did before."""
    answered = client.responses.create(
        model="loop-hermes",
        input=ANSWERED_CALL,
        tools=FUNCTIONS,
    )
    assert answered.output_text == ANSWER

    def follow_up() -> int:
        r = client.responses.create(model="loop-hermes", previous_response_id=answered.id, input="thanks")
        return r.usage.input_tokens

    before = follow_up()
    client.responses.create(
        model="loop-hermes",
        previous_response_id=answered.id,
        input=[
            {"type": "function_call", "call_id": "call_jklmnopqr", "name": "get_time", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_jklmnopqr", "output": "<|tool_done|>"},
        ],
        tools=FUNCTIONS,
    )
    assert follow_up() == before
