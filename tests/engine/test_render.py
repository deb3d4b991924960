"""Message shapes and prompt rendering through the official templates (Jinja sandbox)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from app.engine.errors import PromptRenderError
from app.engine.llm import load_model
from app.engine.messages import Message, ToolCall, is_valid_call_id, local_call_id
from app.engine.render import render_messages, render_prompt, renders_tool_results, shape_messages
from app.engine.templates import template_tools_mode

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"
FAMILIES = json.loads((TEMPLATES / "families.json").read_text())["templates"]
SUPPORTED = sorted(
    n for n, info in FAMILIES.items() if info["family"] in ("hermes", "qwen-xml", "llama3", "mistral")
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]


def conversation() -> list[Message]:
    return [
        Message("system", "Be brief."),
        Message("user", "Weather in Paris?"),
        Message(
            "assistant",
            "",
            reasoning="I should call the tool.",
            tool_calls=[ToolCall("call_9f2b7c1e-long", "get_weather", {"city": "Paris", "days": 2})],
        ),
        Message("tool", "sunny, 21 C", tool_call_id="call_9f2b7c1e-long", name="get_weather"),
        Message("assistant", "It is sunny."),
        Message("user", "Thanks."),
        Message("user", "And tomorrow?"),  # two user turns in a row (e.g. after a failed reply)
    ]


def test_shapes():
    shaped = shape_messages(conversation())
    call_turn = shaped[2]
    assert call_turn["content"] == "" and isinstance(call_turn["content"], str)
    call = call_turn["tool_calls"][0]
    assert call == {
        "id": "hist00000",
        "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}},
    }
    assert call_turn["reasoning_content"] == "I should call the tool."
    assert shaped[3] == {
        "role": "tool",
        "content": "sunny, 21 C",
        "tool_call_id": "hist00000",
        "name": "get_weather",
    }
    # a valid local id is kept; a tool result without a name gets its call's name
    msgs = [
        Message("assistant", tool_calls=[ToolCall("call00007", "f", {})]),
        Message("tool", "ok", tool_call_id="call00007"),
    ]
    shaped = shape_messages(msgs)
    assert shaped[0]["tool_calls"][0]["id"] == "call00007"
    assert shaped[1]["name"] == "f"
    assert is_valid_call_id(local_call_id(3)) and local_call_id(3) == "call00003"
    assert is_valid_call_id(local_call_id(12, "hist"))


def test_merge_consecutive_same_role_turns():
    shaped = shape_messages(conversation(), merge_turns=True)
    assert [m["role"] for m in shaped] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert shaped[-1]["content"] == "Thanks.\n\nAnd tomorrow?"


def test_message_round_trip_for_storage():
    for m in conversation():
        assert Message.from_dict(m.to_dict()) == m
    with pytest.raises(ValueError, match="unknown message role"):
        Message("robot", "hi")


@pytest.mark.parametrize("name", SUPPORTED)
def test_every_supported_template_renders_a_whole_tool_conversation(name):
    source = (TEMPLATES / name).read_text()
    rendered = render_messages(source, conversation(), tools=TOOLS, bos_token="<s>", eos_token="</s>")
    text = rendered.text
    assert "sunny, 21 C" in text
    assert "And tomorrow?" in text and "Weather in Paris?" in text
    assert "get_weather" in text
    assert rendered.tools_sent


def test_mistral_alternation_is_merged_instead_of_failing():
    source = (TEMPLATES / "mistralai-Mistral-Nemo-Instruct-2407.jinja").read_text()
    rendered = render_messages(source, conversation(), tools=TOOLS, bos_token="<s>", eos_token="</s>")
    assert rendered.merged_turns
    assert "[INST]Be brief.\n\nThanks.\n\nAnd tomorrow?[/INST]" in rendered.text
    # 9-character ids that Mistral's template insists on
    assert '"id": "hist00000"' in rendered.text
    assert '"call_id": "hist00000"' in rendered.text


# A template that writes each call with the id it was given, and the result with its call's id.
ID_TEMPLATE = (
    "{% for m in messages %}{% if m.tool_calls %}{% for c in m.tool_calls %}"
    "<|tool_call_begin|>{{ c.id }}<|tool_call_argument_begin|>{{ c.function.arguments | tojson }}"
    "{% endfor %}{% elif m.role == 'tool' %}[result of {{ m.tool_call_id }}: {{ m.content }}]"
    "{% else %}{{ m.content }}{% endif %}{% endfor %}"
)


def test_kimi_sees_its_past_calls_with_the_ids_it_writes():
    # Kimi copies the ids it sees into its next call: a client's ids (or Callisto's) would come
    # back in place of the tool's name, so its calls are rendered with its own id shape, one
    # index per call in the conversation, and each result with its call's id.
    msgs = [
        *conversation()[:4],
        Message(
            "assistant",
            tool_calls=[
                ToolCall("call00007", "get_weather", {"city": "Oslo"}),
                ToolCall("toolu_01XYZ", "get_time", {}),
            ],
        ),
        Message("tool", "rain", tool_call_id="call00007"),
        Message("tool", "noon", tool_call_id="toolu_01XYZ"),
    ]
    text = render_messages(ID_TEMPLATE, msgs, tool_format="kimi-k2").text
    for n, name, result in (
        (0, "get_weather", "sunny, 21 C"),
        (1, "get_weather", "rain"),
        (2, "get_time", "noon"),
    ):
        assert f"<|tool_call_begin|>functions.{name}:{n}<|tool_call_argument_begin|>" in text
        assert f"[result of functions.{name}:{n}: {result}]" in text
    assert "call00007" not in text and "toolu_01XYZ" not in text and "call_9f2b7c1e" not in text
    # another family keeps the ids as they are (a valid one as sent)
    other = render_messages(ID_TEMPLATE, msgs, tool_format="hermes").text
    assert "<|tool_call_begin|>call00007<|tool_call_argument_begin|>" in other
    assert "[result of hist00000: sunny, 21 C]" in other
    # Kimi K2's own older template writes the results with the id the call was given
    older = (TEMPLATES / "older" / "moonshotai-Kimi-K2.jinja").read_text()
    assert (
        "## Return of functions.get_weather:0"
        in render_messages(older, msgs, tools=TOOLS, tool_format="kimi-k2").text
    )


def test_reasoning_is_handed_back_to_templates_that_read_it():
    source = (TEMPLATES / "Qwen-Qwen3-0.6B.jinja").read_text()
    msgs = conversation()[:4]  # the reply in progress: call turn + result after the last user turn
    text = render_messages(source, msgs, tools=TOOLS).text
    assert "<think>\nI should call the tool.\n</think>" in text


def test_phi4_mini_takes_tools_as_a_json_string_on_the_system_message():
    source = (TEMPLATES / "microsoft-Phi-4-mini-instruct.jinja").read_text()
    assert template_tools_mode(source) == "system_message"
    text = render_messages(source, [Message("user", "hi")], tools=TOOLS).text
    m = re.search(r"<\|tool\|>(.*)<\|/tool\|>", text)
    assert m and json.loads(m.group(1)) == TOOLS
    assert text.startswith("<|system|><|tool|>")
    # without tools, no tool block at all
    assert "<|tool|>" not in render_messages(source, [Message("user", "hi")]).text


def test_template_that_raises_is_a_clear_error():
    source = "{{ raise_exception('This template only supports user messages') }}"
    with pytest.raises(PromptRenderError, match="only supports user messages"):
        render_messages(source, [Message("user", "hi")])


def test_tool_use_template_is_used_when_tools_are_on(tiny_gguf):
    path = tiny_gguf(
        chat_template="DEFAULT{% for m in messages %}{{ m.content }}{% endfor %}",
        named_templates={
            "tool_use": "TOOLS{{ tools | length }}{% for m in messages %}{{ m.content }}{% endfor %}"
        },
    )
    model = load_model(path, n_ctx=256, n_threads=1)
    try:
        with_tools = render_prompt(model, [Message("user", "hi")], tools=TOOLS)
        assert (with_tools.template, with_tools.text) == ("tool_use", "TOOLS1hi")
        plain = render_prompt(model, [Message("user", "hi")])
        assert (plain.template, plain.text) == ("chat_template", "DEFAULThi")
    finally:
        model.close()


def test_fallback_template_for_a_gguf_without_one(tiny_gguf):
    model = load_model(tiny_gguf(), n_ctx=256, n_threads=1)
    try:
        r = render_prompt(model, [Message("system", "S"), Message("user", "hi")])
        assert r.template == "fallback"
        assert (
            r.text
            == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
        )
    finally:
        model.close()


CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
HERMES_EXAMPLE = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "<city>"}}\n</tool_call>'


def test_explicit_format_on_a_template_without_tools_gets_schemas_and_guidance():
    assert template_tools_mode(CHATML) == "none"
    # merged with the conversation's system prompt
    r = render_messages(
        CHATML, [Message("system", "Be brief."), Message("user", "hi")], tools=TOOLS, tool_format="hermes"
    )
    assert (r.tools_mode, r.tools_sent) == ("guidance", True)
    system = r.text.split("<|im_end|>")[0]
    assert system.startswith("<|im_start|>system\nBe brief.\n\nYou can call these tools:\n")
    assert json.dumps(TOOLS, ensure_ascii=False) in system and HERMES_EXAMPLE in system
    assert r.text.count("<|im_start|>system") == 1
    # no system prompt: the guidance is the system message
    r = render_messages(CHATML, [Message("user", "hi")], tools=TOOLS, tool_format="qwen-xml")
    assert r.text.startswith("<|im_start|>system\nYou can call these tools:\n")
    assert "<tool_call>\n<function=get_weather>\n<parameter=city>\n<city>\n</parameter>" in r.text


def test_without_a_format_a_template_that_ignores_tools_gets_nothing():
    r = render_messages(CHATML, [Message("user", "hi")], tools=TOOLS)
    assert (r.tools_mode, r.tools_sent) == ("none", False)
    assert "get_weather" not in r.text and "You can call" not in r.text


@pytest.mark.parametrize("name", SUPPORTED)
def test_a_template_that_renders_tools_gets_no_guidance(name):
    source = (TEMPLATES / name).read_text()
    family = FAMILIES[name]["family"]
    r = render_messages(
        source, [Message("user", "hi")], tools=TOOLS, tool_format=family, bos_token="<s>", eos_token="</s>"
    )
    assert r.tools_mode in ("variable", "system_message") and "You can call these tools" not in r.text
    assert "get_weather" in r.text


def test_guidance_replays_past_calls_in_the_chosen_syntax():
    msgs = conversation()[1:5]  # user, call turn, tool result, answer
    r = render_messages(CHATML, msgs, tools=TOOLS, tool_format="hermes")
    assert (
        '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", '
        '"days": 2}}\n</tool_call><|im_end|>'
    ) in r.text
    assert "<|im_start|>tool\nsunny, 21 C<|im_end|>" in r.text
    # without guidance the call turn keeps tool_calls for the template (content stays empty)
    assert shape_messages(msgs)[1]["content"] == ""


def test_guidance_sends_results_as_the_user_s_words_where_the_template_drops_the_tool_role():
    """RWKV World's template renders only system, user and assistant turns: a ``tool`` message
    would vanish and the model never see what its tool answered, though the guidance promises it
    the result in the next message."""
    source = (TEMPLATES / "llama-cpp-rwkv-world.jinja").read_text()
    assert not renders_tool_results(source) and renders_tool_results(CHATML)
    r = render_messages(source, conversation()[1:5], tools=TOOLS, tool_format="rwkv")
    assert r.tools_mode == "guidance" and not r.merged_turns
    assert r.text.startswith("System: You can call these tools:\n")
    assert (
        'Assistant: **Tool Call:**\n```json\n{"name": "get_weather", "arguments": {"city": "Paris", '
        '"days": 2}}\n```\n\nUser: Result of the tool get_weather:\nsunny, 21 C\n\nAssistant: It is sunny.'
    ) in r.text
    # a template that renders the role keeps it
    r = render_messages(CHATML, conversation()[1:5], tools=TOOLS, tool_format="rwkv")
    assert "<|im_start|>tool\nsunny, 21 C<|im_end|>" in r.text and "Result of the tool" not in r.text


def test_guidance_on_a_template_without_system_or_tool_roles():
    strict = (
        "{% for m in messages %}{% if m.role not in ['user', 'assistant'] %}"
        "{{ raise_exception('Only user and assistant roles are supported') }}{% endif %}"
        "[{{ m.role }}]{{ m.content }}{% endfor %}"
    )
    r = render_messages(strict, conversation()[1:5], tools=TOOLS, tool_format="hermes")
    assert r.tools_mode == "guidance" and r.merged_turns
    assert r.text.startswith("[user]You can call these tools:\n")
    assert HERMES_EXAMPLE in r.text and "\n\nWeather in Paris?[assistant]<tool_call>" in r.text
    assert "[user]Result of the tool get_weather:\nsunny, 21 C[assistant]It is sunny." in r.text


def test_glm4_sees_its_past_calls_as_metadata_messages_and_results_as_observations():
    """GLM-4's templates render a call only from an assistant message's ``metadata`` and a result
    only from an ``observation`` message: ``tool_calls`` and a ``tool`` message would render as
    nothing, and the model would never see the call or its result."""
    source = (TEMPLATES / "glm-z1-9b-0414.jinja").read_text(encoding="utf-8")
    messages = conversation()
    messages[2].tool_calls.append(ToolCall("call_second", "get_weather", {"city": "Oslo"}))
    messages.insert(4, Message("tool", "rain", tool_call_id="call_second", name="get_weather"))
    text = render_messages(source, messages, tools=TOOLS).text
    assert '<|assistant|>get_weather\n{"city": "Paris", "days": 2}' in text
    assert '<|assistant|>get_weather\n{"city": "Oslo"}' in text
    assert "<|observation|>\nsunny, 21 C" in text and "<|observation|>\nrain" in text
    assert text.index('Paris", "days"') < text.index("Oslo") < text.index("sunny") < text.index("rain")
    assert "<|assistant|>\nIt is sunny." in text  # the answer after the results, as before
    shaped = shape_messages(messages, metadata_calls=True)
    # the turn's reasoning goes with its first call (no empty message before it)
    assert [m["role"] for m in shaped[2:6]] == ["assistant", "assistant", "observation", "observation"]
    assert (
        shaped[2]["metadata"] == "get_weather" and shaped[2]["reasoning_content"] == "I should call the tool."
    )
    text_first = shape_messages(
        [Message("assistant", "Checking.", tool_calls=[ToolCall("c", "f", "not json")])], metadata_calls=True
    )
    assert text_first == [
        {"role": "assistant", "content": "Checking."},
        {"role": "assistant", "metadata": "f", "content": "not json"},  # a client's text, as sent
    ]
    # a template that renders tool_calls keeps them, whatever else it mentions
    from app.engine.render import reads_metadata_calls

    assert reads_metadata_calls(source)
    assert not any(
        reads_metadata_calls((TEMPLATES / n).read_text(encoding="utf-8"))
        for n in FAMILIES
        if "glm-z1" not in n
    )


def test_a_template_that_writes_each_role_as_its_header_gets_observations():
    """GLM-4-9B-chat's loop writes any message as ``<|role|>{metadata}`` then its content: a tool
    message would become ``<|tool|>``, a header the model never saw."""
    source = (
        "{% for item in messages %}{% if item['content'] %}<|{{ item['role'] }}|>{{ item['metadata'] }}\n"
        "{{ item['content'] }}{% endif %}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    text = render_messages(source, conversation()[1:4], tools=TOOLS, tool_format="glm4").text
    assert '<|assistant|>get_weather\n{"city": "Paris", "days": 2}<|observation|>\nsunny, 21 C' in text
    assert "<|tool|>" not in text


def test_a_template_that_reads_the_tool_list_from_the_system_message_gets_it_there():
    """GLM-4-9B-chat's template ignores the ``tools`` variable and walks the ``tools`` key of the
    message that carries it, as a list of OpenAI tools (Phi-4-mini's takes a JSON string there)."""
    source = (
        "{% for item in messages %}{% if item['tools'] is defined %}<|system|>\nTools:"
        "{% for tool in item['tools'] %}{% if tool['type'] == 'function' %}\n## {{ tool['function']['name'] }}"
        "{% endif %}{% endfor %}{% endif %}{% if item['content'] %}<|{{ item['role'] }}|>{{ item['metadata'] }}\n"
        "{{ item['content'] }}{% endif %}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    assert template_tools_mode(source) == "system_list"
    for messages in (conversation(), conversation()[1:]):  # with and without a system message
        rendered = render_messages(source, messages, tools=TOOLS, tool_format="glm4")
        assert rendered.tools_mode == "system_list" and rendered.tools_sent
        assert rendered.text.count("## get_weather") == 1 and "You can call these tools" not in rendered.text
    phi = (TEMPLATES / "microsoft-Phi-4-mini-instruct.jinja").read_text()
    assert template_tools_mode(phi) == "system_message"  # the JSON string is tried first


def test_a_template_that_pads_the_reasoning_gets_it_back_as_the_reply_wrote_it():
    """MiniCPM3's template writes ``<|thought_start|>\\n{thought}\\n<|thought_end|>``; its model
    writes those line breaks itself, and the parser keeps them in the reasoning. Passed back as
    read, they were written twice, and the next prompt no longer extended the reply (its KV
    prefix was read again from there)."""
    from app.engine.formats import FORMATS

    source = (TEMPLATES / "vllm-minicpm3.jinja").read_text(encoding="utf-8")
    user = [Message("user", "Weather in Paris?")]
    first = render_messages(source, user, tools=TOOLS).text
    thought = "<|thought_start|>\nThe user wants the weather.\n<|thought_end|>\n"
    reply = FORMATS["minicpm3"].parse(
        thought + '<|tool_call_start|>\n```python\nget_weather(city="Paris")\n```\n<|tool_call_end|>', TOOLS
    )
    assert reply.reasoning == "\nThe user wants the weather.\n" and reply.tool_calls
    turn = Message("assistant", reply.content, reasoning=reply.reasoning, tool_calls=reply.tool_calls)
    result = Message("tool", "sunny", tool_call_id=reply.tool_calls[0].id, name="get_weather")
    second = render_messages(source, [*user, turn, result], tools=TOOLS).text
    assert second.startswith(first + thought)
    from app.engine.thinking import thinking_control

    assert thinking_control(source).pads_reasoning == (True, True)
    # gpt-oss writes its analysis between its own tags, no line break around it: as read
    assert thinking_control((TEMPLATES / "openai-gpt-oss-120b.jinja").read_text()).pads_reasoning == (
        False,
        False,
    )
