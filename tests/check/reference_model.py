"""A real GGUF per scenario that answers each turn with scripted text (the in-process reference target).

Built on ``tests.ui.scripted_gguf``: the next token depends only on the current one. The template is
ChatML whose generation prompt ends in a control token ``<|rK|>``, K the number of assistant replies
since the last user message, so turn K of a scenario gets its own scripted reply. Every reply is cut
into user tokens that are all different, so the bigram chain says each reply exactly once and ends
with ``<|im_end|>`` (EOS). Callisto parses it with the family forced on the session (hermes).
"""

from __future__ import annotations

import json
from pathlib import Path

from app.check.corpus import Scenario
from tests.ui.scripted_gguf import write_scripted_gguf

__all__ = ["FREE_GRAMMAR", "ROUND_TEMPLATE", "hermes_reply", "write_reply_model"]

# The script is a bigram chain over its own tokens: tokens a call grammar forces (tokenized its own
# way) would derail it, so the scripted model decodes under a grammar that admits any text instead of
# the chat loop's call constraints. Everything else (render, parse, stream, results) is the real loop.
FREE_GRAMMAR = "root ::= [^\\x00]*"

MAX_TURNS = 4
ROUND_TEMPLATE = (
    "{%- for m in messages -%}"
    "{{ '<|im_start|>' + m['role'] + '\\n' + (m['content'] or '') + '<|im_end|>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{%- set ns = namespace(k=0) -%}"
    "{%- for m in messages -%}"
    "{%- if m['role'] == 'user' -%}{%- set ns.k = 0 -%}"
    "{%- elif m['role'] == 'assistant' -%}{%- set ns.k = ns.k + 1 -%}{%- endif -%}"
    "{%- endfor -%}"
    "{{ '<|im_start|>assistant<|r' ~ ns.k ~ '|>' }}"
    "{%- endif -%}"
)


def hermes_reply(calls: list[tuple[str, dict]], text: str = "") -> str:
    parts = [text] if text else []
    parts += [
        f"<tool_call>\n{json.dumps({'name': n, 'arguments': a}, ensure_ascii=False)}\n</tool_call>"
        for n, a in calls
    ]
    return "\n".join(parts)


def expected_replies(scenario: Scenario) -> list[str]:
    out = []
    for turn in scenario.turns:
        if turn.expect:
            out.append(hermes_reply([(e.name, dict(e.arguments)) for e in turn.expect]))
        else:
            out.append("Here is my answer, without any tool.")
    return out


def _chunks(texts: list[str]) -> list[list[str]]:
    """Cut every text into pieces of 2+ characters, no piece used twice across all texts."""
    seen: set[str] = set()
    out = []
    for text in texts:
        pieces: list[str] = []
        pos = 0
        while pos < len(text):
            n = 4
            while pos + n < len(text) and text[pos : pos + n] in seen:
                n += 1
            piece = text[pos : pos + n]
            if (piece in seen or len(piece) < 2) and pieces:
                seen.discard(pieces[-1])
                piece = pieces.pop() + piece
            pieces.append(piece)
            seen.add(piece)
            pos += n
        out.append(pieces)
    return out


def write_reply_model(path: str | Path, replies: list[str]) -> Path:
    """A model that answers turn K (K = replies since the last user message) with ``replies[K]``."""
    if len(replies) > MAX_TURNS:
        raise ValueError(f"at most {MAX_TURNS} turns")
    rounds = [f"<|r{k}|>" for k in range(MAX_TURNS)]
    script: dict[str, str] = {}
    user_tokens: list[str] = []
    for k, pieces in enumerate(_chunks(replies)):
        if not pieces:
            script[rounds[k]] = "<|im_end|>"
            continue
        script[rounds[k]] = pieces[0]
        for a, b in zip(pieces, pieces[1:], strict=False):
            script[a] = b
        script[pieces[-1]] = "<|im_end|>"
        user_tokens += pieces
    d = 64
    while d <= len(script) + 1:
        d += 64
    return write_scripted_gguf(
        path,
        chat_template=ROUND_TEMPLATE,
        script=script,
        default_next="<|im_end|>",
        control_tokens=["<|im_start|>", "<|im_end|>", *rounds],
        user_tokens=user_tokens,
        embedding_length=d,
        name="check-reference-model",
    )
