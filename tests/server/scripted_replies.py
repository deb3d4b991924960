"""Servers of scripted GGUFs that write one fixed reply whatever the prompt, and what the official
openai client reads of a reply, plain and streamed (shared by the tests of models that stray
from their template's wire)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.ui.scripted_gguf import write_scripted_gguf

__all__ = ["read_plain", "read_streamed", "reply_fixtures", "scripted_reply_server", "stray_wire_tests"]


def scripted_reply_server(
    folder: Path, template: str, replies: Mapping[str, str], *, control: tuple[str, ...], eos: str
) -> Iterator[Any]:
    """An API server whose models (named by ``replies``' keys) each write their reply, one token,
    then the end of the turn, with ``template``; stopped when the generator closes."""
    from app.server import ApiServer, ServerConfig

    paths = [
        write_scripted_gguf(
            folder / f"{name}.gguf",
            chat_template=template,
            control_tokens=control,
            user_tokens=[text],  # the whole reply is one token, then the end of the turn
            eos=eos,
            script={text: eos},
            default_next=text,
            name=name,
        )
        for name, text in replies.items()
    ]
    srv = ApiServer(
        ServerConfig(port=0, models=[str(p) for p in paths], use_library=False, n_ctx=2048, n_threads=1)
    )
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def reply_fixtures(
    label: str, template: str, replies: Mapping[str, str], *, control: tuple[str, ...], eos: str
) -> tuple[Any, Any]:
    """The module's ``server`` (:func:`scripted_reply_server`, its GGUFs in a folder named after
    ``label``) and ``client`` (the official openai client of it) fixtures:
    ``server, client = reply_fixtures(...)`` at a test module's top level."""

    @pytest.fixture(scope="module")
    def server(tmp_path_factory) -> Iterator[Any]:
        folder = tmp_path_factory.mktemp(label)
        yield from scripted_reply_server(folder, template, replies, control=control, eos=eos)

    @pytest.fixture(scope="module")
    def client(server):
        from openai import OpenAI

        return OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)

    return server, client


def read_plain(client, model: str, messages, tools, max_tokens: int = 128) -> tuple[list, str | None, str]:
    """(calls as (name, arguments), content, finish reason) of a non-streamed completion."""
    r = client.chat.completions.create(model=model, messages=messages, tools=tools, max_tokens=max_tokens)
    choice = r.choices[0]
    calls = [(c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls or []]
    return calls, choice.message.content, choice.finish_reason


def read_streamed(client, model: str, messages, tools, max_tokens: int = 128) -> tuple[list, str | None, str]:
    """The same of a streamed completion, its call deltas joined by index."""
    seen: dict[int, dict] = {}
    text, finish = "", ""
    for chunk in client.chat.completions.create(
        model=model, messages=messages, tools=tools, max_tokens=max_tokens, stream=True
    ):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for tc in delta.tool_calls or []:
            entry = seen.setdefault(tc.index, {"name": tc.function.name, "args": ""})
            entry["args"] += tc.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    calls = [(v["name"], json.loads(v["args"])) for _, v in sorted(seen.items())]
    return calls, text or None, finish


def stray_wire_tests(
    template: Path,
    family: str,
    calls: Mapping[str, list[tuple[str, dict[str, Any]]]],
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    *,
    markers: Sequence[str] = (),
) -> tuple[Callable[..., None], Callable[..., None]]:
    """The two tests of a module of stray-wire replies (its ``server`` and ``client`` from
    :func:`reply_fixtures`): ``template`` is detected as ``family``, and each model's reply
    reaches the client as exactly ``calls[model]``, plain and streamed, with no text (none of
    ``markers`` either) and the finish reason ``tool_calls``. Assign them to the module's
    ``test_`` names."""

    def test_template(server) -> None:
        from app.engine.formats import detect_template

        assert detect_template(template.read_text(encoding="utf-8")) == family

    @pytest.mark.parametrize("read", [read_plain, read_streamed], ids=["plain", "streamed"])
    @pytest.mark.parametrize("model", sorted(calls))
    def test_calls(client, model: str, read) -> None:
        got, content, finish = read(client, model, messages, tools)
        assert got == calls[model]
        assert not (content or "").strip() and finish == "tool_calls"
        assert not any(m in (content or "") for m in markers)

    return test_template, test_calls
