"""A family's constraint grammar for a remote engine, in GBNF (llama-server's ``/completion``
``grammar`` field, vLLM's and SGLang's GBNF/EBNF grammars).

Public API::

    from app.engine.constraints.remote import remote_grammar
    gbnf = remote_grammar(family="hermes", tools=tools, tool_choice="required")   # or None

The family writes its grammar (``Format.constraint_grammar``) against a context built from the
template's special tokens as text (:func:`app.engine.grammar.gbnf.remote_context`), and
:func:`app.engine.grammar.gbnf.lark_to_gbnf` translates it. Lives above the formats, beside the
local constraint compiler.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.engine.constraints.compiler import parse_response_format, resolve_tool_choice
from app.engine.errors import ConstraintError
from app.engine.formats import FORMATS
from app.engine.grammar.gbnf import lark_to_gbnf, remote_context
from app.engine.grammar.lark import DEFAULT_MAX_CALLS, _reasoning

__all__ = ["remote_grammar"]


def remote_grammar(
    *,
    family: str | None,
    tools: Sequence[Mapping[str, Any]] | None,
    tool_choice: Any = "auto",
    parallel_tool_calls: bool = True,
    response_format: Any = None,
    special_tokens: Sequence[str] = (),
    reasoning: bool = False,
    in_reasoning: bool = False,
    max_calls: int | None = DEFAULT_MAX_CALLS,
) -> str | None:
    """The GBNF that holds a remote engine's raw reply to ``tool_choice`` (``required`` or a named
    tool: one call, or up to ``max_calls`` when ``parallel_tool_calls``) or, with no tools to call, to
    ``response_format``'s JSON schema; None when nothing is to be held (``auto``, ``none``).
    Raises :class:`ConstraintError` (:class:`GbnfError` where the family's grammar has no GBNF)."""
    calls: list[dict[str, Any]] = [dict(t) for t in tools or []]
    choice = resolve_tool_choice(tool_choice, calls)
    schema = parse_response_format(response_format)
    fmt = FORMATS.get(family or "")
    if family is not None and fmt is None:
        raise ConstraintError(f"unknown tool-call format {family!r}")
    ctx, tokens = remote_context(
        family=family or "json", special_tokens=special_tokens, reasoning=reasoning, in_reasoning=in_reasoning
    )
    if choice.mode in ("required", "function") and calls:
        if fmt is None:
            raise ConstraintError(
                f"tool_choice {choice.mode!r} needs a tool-call format, and this model has none "
                "(choose one in chat.tool_format)"
            )
        forced = choice.name if choice.mode == "function" else None
        ctx.max_calls = max_calls
        lark = fmt.constraint_grammar(calls, forced=forced, parallel=bool(parallel_tool_calls), ctx=ctx)
    elif schema is not None and (choice.mode == "none" or not calls):
        lead = _reasoning(ctx, fmt) if fmt is not None else ""
        lark = ctx.grammar(f"{lead} {ctx.json(schema)}".strip())
    else:
        return None
    return lark_to_gbnf(lark, tokens=tokens)
