"""A conversation's title: the first words of its first message (what a new chat is called), or a
few words the model writes for it (Settings -> Chat -> *Name new chats*, or a conversation's menu
-> *Name with the model*): a local model (:func:`model_title`) or a remote engine's
(:func:`remote_title`, through its API, no tools offered).

The model is asked once, greedily, for at most :data:`TITLE_TOKENS` tokens held by
:data:`TITLE_GRAMMAR` to one line without the marks a title has no use for (quotes, Markdown, tags:
so a thinking model writes no ``<think>`` either); :func:`clean_title` then takes off what models
add around a title ("Title:", a final full stop) and cuts it at a word. Qt-free.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.engine.llm import LoadedModel
    from app.engine.remote import Provider

__all__ = [
    "FIRST_WORDS",
    "MAX_TITLE",
    "QUOTE",
    "REMOTE_TITLE_TOKENS",
    "TITLE_GRAMMAR",
    "TITLE_TOKENS",
    "clean_title",
    "model_title",
    "remote_title",
    "title_from_message",
    "title_prompt",
]

MAX_TITLE = 60  # characters of a title the model writes, at the most
FIRST_WORDS = 48  # characters of the first message a new chat is called by
TITLE_TOKENS = 24  # tokens the model may write for a title
#: ...a remote engine's model (no grammar holds it, and a reasoning model's thinking counts)
REMOTE_TITLE_TOKENS = 96
QUOTE = 600  # characters of the question and of the answer the model is shown, at the most

#: one line of at most MAX_TITLE characters, none of them a double quote, Markdown's marks or a tag's
TITLE_GRAMMAR = f'root ::= [^\\n\\r\\t"`*#<>\\[\\]{{}}|]{{1,{MAX_TITLE}}}\n'

_LEAD = re.compile(r"^\s*(?:(?:chat|conversation)\s+)?(?:title|name|topic)\s*[:\-–—]\s*", re.IGNORECASE)
_EDGES = " \t'‘’“”«»()-–—:;,."


def title_from_message(text: str) -> str:
    """What a new chat is called: its first message's first :data:`FIRST_WORDS` characters, spaces
    folded ("New chat" for a message of no text, an image alone)."""
    return " ".join(text.split())[:FIRST_WORDS] or "New chat"


def title_prompt(question: str, answer: str) -> str:
    """The message that asks the model for a title of a chat that starts with ``question`` and
    ``answer`` (each cut to :data:`QUOTE` characters)."""

    def quoted(text: str) -> str:
        text = " ".join(text.split())
        return text if len(text) <= QUOTE else text[:QUOTE] + "…"

    lines = [
        "Write a short title, of three to six words, for the conversation below.",
        "Reply with the title only: no quotes, no full stop.",
        "",
        f"User: {quoted(question)}",
    ]
    if answer.strip():
        lines.append(f"Assistant: {quoted(answer)}")
    return "\n".join(lines)


def clean_title(text: str) -> str | None:
    """``text`` (the model's) as a title: one line without control or format characters, "Title:"
    and the quotes, brackets and full stops around it taken off, spaces folded, at most
    :data:`MAX_TITLE` characters (cut at a word). None when no letter or digit is left."""
    line = next((part for part in text.splitlines() if part.strip()), "")
    # no control or format characters (a bidi override, a zero-width space): a remote model's
    # words are held by no grammar, and a title is shown in the list, the title bar and a terminal
    line = "".join(ch for ch in line if unicodedata.category(ch) not in ("Cc", "Cf"))
    line = _LEAD.sub("", " ".join(line.split()))
    line = line.strip(_EDGES + '"`*#').strip()
    if len(line) > MAX_TITLE:
        cut = line[: MAX_TITLE + 1].rsplit(" ", 1)[0]
        line = (cut if cut and len(cut) <= MAX_TITLE else line[:MAX_TITLE]).rstrip(_EDGES)
    if not any(ch.isalnum() for ch in line):
        return None
    return line


def model_title(
    model: LoadedModel, question: str, answer: str, *, cancel: threading.Event | None = None
) -> str | None:
    """A title for the chat that starts with ``question`` and ``answer``, written by ``model``
    (greedy, held to :data:`TITLE_GRAMMAR`); None when what it wrote is no title. Raises what
    generation raises (the model closed, a deadline, a crash of its engine process)."""
    from app.engine.generation import complete

    result = complete(
        model,
        title_prompt(question, answer),
        grammar=TITLE_GRAMMAR,
        max_tokens=TITLE_TOKENS,
        deadline_s=60.0,
        sampling={"temperature": 0.0},
        cancel=cancel,
    )
    return clean_title(result.text)


def remote_title(
    provider: Provider, model: str, question: str, answer: str, *, cancel: threading.Event | None = None
) -> str | None:
    """A title for the chat that starts with ``question`` and ``answer``, written by ``model`` on
    the remote engine ``provider`` (its API: no tools, temperature 0, one reply of at most
    :data:`REMOTE_TITLE_TOKENS` tokens); None when what it wrote is no title. Raises
    ``RuntimeError`` with the engine's error when the request fails."""
    from app.engine.events import DoneEvent, TextEvent
    from app.engine.remote import RemoteChatSession

    session = RemoteChatSession(
        provider,
        model,
        parser="api",
        sampling={"temperature": 0.0},
        max_tokens=REMOTE_TITLE_TOKENS,
        max_rounds=1,
    )
    text: list[str] = []
    for ev in session.send(title_prompt(question, answer), cancel=cancel):
        if isinstance(ev, TextEvent):
            text.append(ev.text)
        elif isinstance(ev, DoneEvent) and ev.finish_reason == "error":
            raise RuntimeError(ev.error or "the remote engine answered with an error")
    return clean_title("".join(text))
