"""Token log probabilities in each API's shape (``app.engine.logprobs`` computes them).

A turn asked for them emits ``("logprobs", (kind, entries))`` before each text, reasoning or
call (``app.server._engine._Output``); :class:`LogprobBuffer` keeps the entries of the kinds an
API shows until the chunk they go with. OpenAI's chat shows those of the message's content
(``logprobs.content``, as OpenAI defines it: the reasoning and a call's markup are not content);
Ollama those of the content and the thinking; a raw completion every token.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable
from typing import Any

from app.engine.logprobs import MAX_TOP_LOGPROBS, TokenLogprob, token_text
from app.server._common import check_bool, check_int
from app.server._errors import ApiError

__all__ = [
    "CONTENT",
    "LogprobBuffer",
    "chat_logprobs",
    "completion_logprobs",
    "llamacpp_probs",
    "ollama_logprobs",
    "read_chat_logprobs",
    "read_completion_logprobs",
]

#: the kinds of a chat message's content (the text, and what is left at its end)
CONTENT = ("text",)


def read_chat_logprobs(body: dict[str, Any]) -> int | None:
    """The alternatives a token a chat request asks for (``logprobs: true`` and ``top_logprobs``
    0 to 20, OpenAI's and Ollama's fields), or None when it asks for none."""
    on = check_bool(body.get("logprobs"), "logprobs", False)
    n = check_int(body.get("top_logprobs"), "top_logprobs", lo=0, hi=MAX_TOP_LOGPROBS)
    if n and not on:
        raise ApiError(400, "top_logprobs needs logprobs set to true", param="top_logprobs")
    return (n or 0) if on else None


def read_completion_logprobs(body: dict[str, Any]) -> int | None:
    """The legacy completions' ``logprobs``: the alternatives a token (0 to 20; OpenAI's own
    bound is 5), or None."""
    value = body.get("logprobs")
    if isinstance(value, bool):  # a chat-style true/false sent here
        return 0 if value else None
    return check_int(value, "logprobs", lo=0, hi=MAX_TOP_LOGPROBS)


class LogprobBuffer:
    """The entries of the ``kinds`` an API shows, kept until they go out (:meth:`take`)."""

    def __init__(self, kinds: Iterable[str] = CONTENT):
        self.kinds = tuple(kinds)
        self.pending: list[TokenLogprob] = []

    def add(self, value: tuple[str, list[TokenLogprob]]) -> None:
        kind, entries = value
        if kind in self.kinds:
            self.pending.extend(entries)

    def take(self) -> list[TokenLogprob]:
        out, self.pending = self.pending, []
        return out


def _openai_entry(e: TokenLogprob) -> dict[str, Any]:
    return {"token": e.text, "logprob": e.logprob, "bytes": list(e.data)}


def chat_logprobs(entries: list[TokenLogprob]) -> dict[str, Any]:
    """OpenAI chat's ``choices[].logprobs``."""
    return {
        "content": [
            {
                **_openai_entry(e),
                "top_logprobs": [_openai_entry(TokenLogprob(i, d, lp)) for i, d, lp in e.top],
            }
            for e in entries
        ],
        "refusal": None,
    }


def completion_logprobs(entries: list[TokenLogprob], offset: int = 0, silent: int = 0) -> dict[str, Any]:
    """The legacy completions' ``choices[].logprobs``: parallel lists, and each token's offset in
    the choice's text (``offset``: where the first token's text begins in it; the first ``silent``
    tokens write none of it, as a BOS before an echoed prompt). A prompt's first token has no log
    probability and no alternatives (None, as OpenAI gives them)."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    offsets = []
    for i, e in enumerate(entries):  # (a character split over tokens is counted at the token that ends it)
        offsets.append(offset)
        if i >= silent:
            offset += len(decoder.decode(e.data))
    return {
        "tokens": [e.text for e in entries],
        "token_logprobs": [e.logprob for e in entries],
        "top_logprobs": [
            None if e.logprob is None else {token_text(d): lp for _i, d, lp in e.top} for e in entries
        ],
        "text_offset": offsets,
    }


def ollama_logprobs(entries: list[TokenLogprob]) -> list[dict[str, Any]]:
    """Ollama's ``logprobs`` list (``/api/chat``, ``/api/generate``)."""
    return [
        {
            **_openai_entry(e),
            "top_logprobs": [_openai_entry(TokenLogprob(i, d, lp)) for i, d, lp in e.top],
        }
        for e in entries
    ]


def llamacpp_probs(entries: list[TokenLogprob]) -> list[dict[str, Any]]:
    """llama-server's ``completion_probabilities`` (``/completion`` with ``n_probs``)."""

    def one(i: int, d: bytes, lp: float | None) -> dict[str, Any]:
        return {"id": i, "token": token_text(d), "bytes": list(d), "logprob": lp}

    return [{**one(e.token, e.data, e.logprob), "top_logprobs": [one(*t) for t in e.top]} for e in entries]
