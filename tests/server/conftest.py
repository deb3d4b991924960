"""Server fixtures: real servers on free loopback ports, serving real GGUFs.

* ``family_server``: one server offering scripted GGUFs of several tool-call families (each a real
  template of that family; its first reply is a call, or two calls for the ``-parallel`` models)
  and a Hermes model whose reply after a tool result is text (multi-turn loops).
* ``smol_server``: SmolLM2-135M-Instruct with the hermes format forced (live).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.tool_done import write_tool_done_model
from tests.ui.scripted_gguf import write_scripted_gguf

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Current time in a time zone",
        "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]},
    },
}
TOOLS = [WEATHER, TIME]

# Bounded strings: under a forced choice the grammar may turn the scripted model from its script,
# and a random string could then run to the token limit.
BOUNDED_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {what}",
            "parameters": {
                "type": "object",
                "properties": {arg: {"type": "string", "maxLength": 12}},
                "required": [arg],
            },
        },
    }
    for name, what, arg in (
        ("get_weather", "weather in a city", "city"),
        ("get_time", "time in a zone", "zone"),
    )
]
ANSWER = "It is sunny in Oslo."


@dataclass(frozen=True)
class Family:
    family: str
    template: str
    bos: str | None
    eos: str
    control: tuple[str, ...]


FAMILIES = {
    "hermes": Family(
        "hermes",
        "Qwen-Qwen2.5-7B-Instruct.jinja",
        None,
        "<|im_end|>",
        ("<|im_start|>", "<|im_end|>", "<|endoftext|>"),
    ),
    "qwen-xml": Family(
        "qwen-xml", "Qwen3-Coder.jinja", None, "<|im_end|>", ("<|im_start|>", "<|im_end|>", "<|endoftext|>")
    ),
    "mistral": Family(
        "mistral",
        "mistralai-Mistral-Nemo-Instruct-2407.jinja",
        "<s>",
        "</s>",
        (
            "[INST]",
            "[/INST]",
            "[TOOL_CALLS]",
            "[AVAILABLE_TOOLS]",
            "[/AVAILABLE_TOOLS]",
            "[TOOL_RESULTS]",
            "[/TOOL_RESULTS]",
        ),
    ),
    "llama3": Family(
        "llama3",
        "meta-llama-Llama-3.1-8B-Instruct.jinja",
        "<|begin_of_text|>",
        "<|eot_id|>",
        ("<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|python_tag|>"),
    ),
    "harmony": Family(
        "harmony",
        "openai-gpt-oss-120b.jinja",
        None,
        "<|return|>",
        ("<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|call|>"),
    ),
}

PARALLEL = ("hermes", "qwen-xml", "mistral", "harmony")  # Llama 3's call is the whole reply: one call

# What each scripted model says: (tool name, arguments) per call.
ONE_CALL = [("get_weather", {"city": "Oslo"})]
TWO_CALLS = [("get_weather", {"city": "Oslo"}), ("get_time", {"zone": "Europe/Oslo"})]


def call_text(family: str, calls: list[tuple[str, dict]]) -> str:
    from app.engine.formats.guidance import call_example

    if family == "mistral" and len(calls) > 1:  # one [TOOL_CALLS] list holds every call
        import json

        return "[TOOL_CALLS]" + json.dumps([{"name": n, "arguments": a} for n, a in calls])
    return "\n".join(call_example(family, n, a) for n, a in calls)


def write_family_model(folder: Path, family: str, calls: list[tuple[str, dict]], name: str) -> Path:
    """A real template of ``family``; whatever the prompt, the reply is ``calls`` in that family's
    syntax (one user token), then the end-of-turn token."""
    spec = FAMILIES[family]
    text = call_text(family, calls)
    return write_scripted_gguf(
        folder / f"{name}.gguf",
        chat_template=(TEMPLATES / spec.template).read_text(encoding="utf-8"),
        control_tokens=spec.control,
        user_tokens=[text],
        bos=spec.bos,
        eos=spec.eos,
        script={text: spec.eos},
        default_next=text,
        name=name,
    )


def write_loop_model(folder: Path) -> Path:
    """Qwen 2.5's template (Hermes): the first reply is a call; after a tool result the reply is
    ``ANSWER`` (``tests.support.tool_done``)."""
    return write_tool_done_model(
        folder / "loop-hermes.gguf", call_text("hermes", ONE_CALL), ANSWER, name="loop-hermes"
    )


THOUGHT = "The user wants the weather, so I call the tool."


def write_thinking_model(folder: Path) -> Path:
    """Qwen3's template (Hermes with reasoning): the reply is a reasoning block, then a call."""
    text = f"<think>\n{THOUGHT}\n</think>\n\n" + call_text("hermes", ONE_CALL)
    return write_scripted_gguf(
        folder / "think-hermes.gguf",
        chat_template=(TEMPLATES / "Qwen-Qwen3-0.6B.jinja").read_text(encoding="utf-8"),
        control_tokens=FAMILIES["hermes"].control,
        user_tokens=[text],
        eos="<|im_end|>",
        script={text: "<|im_end|>"},
        default_next=text,
        name="think-hermes",
    )


@pytest.fixture(scope="session")
def family_models(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("server-models")
    models = {}
    for fam in FAMILIES:
        models[fam] = write_family_model(folder, fam, ONE_CALL, f"call-{fam}")
        if fam in PARALLEL:
            models[f"{fam}-parallel"] = write_family_model(folder, fam, TWO_CALLS, f"call-{fam}-parallel")
    models["loop"] = write_loop_model(folder)
    models["think"] = write_thinking_model(folder)
    return models


def _start(config) -> Iterator[object]:
    from app.server import ApiServer

    server = ApiServer(config)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def family_server(family_models) -> Iterator[object]:
    from app.server import ServerConfig

    yield from _start(
        ServerConfig(
            port=0,
            models=[str(p) for p in family_models.values()],
            use_library=False,
            n_ctx=4096,
            n_threads=1,
            queue_size=8,
        )
    )


@pytest.fixture(scope="session")
def smol_server(smollm2_path) -> Iterator[object]:
    from app.server import ServerConfig

    yield from _start(
        ServerConfig(
            port=0,
            models=[str(smollm2_path)],
            use_library=False,
            tool_format="hermes",
            n_ctx=2048,
            n_threads=1,
            preload=str(smollm2_path),
        )
    )


@pytest.fixture
def hermes_path(tiny_gguf) -> Path:
    """The tiny GGUF with a Hermes-style template (``tests.support.slot_server.hermes_tiny``)."""
    from tests.support.slot_server import hermes_tiny

    return hermes_tiny(tiny_gguf)


@pytest.fixture
def slot_serve(hermes_path) -> Iterator[Any]:
    """``start(parallel, queue_size=16, preload=True)``: a server of ``hermes_path`` with slots
    (``tests.support.slot_server.slot_servers``), stopped when the test ends."""
    from tests.support.slot_server import slot_servers

    with slot_servers(hermes_path) as start:
        yield start
