"""Constrained decoding (Qt-free): tool_choice and response_format held by a grammar.

Public API::

    from app.engine.constraints import compile_constraint, ConstraintError
    c = compile_constraint(model, family="hermes", tools=tools, tool_choice="required",
                           parallel_tool_calls=True, response_format=None)
    generate(model, prompt, constraint=c)      # every sampled token is held to c

Each family writes its own grammar (``Format.constraint_grammar`` in
``app/engine/formats/<family>.py``) with the builders of :mod:`app.engine.constraints.lark`;
llguidance (imported lazily) compiles it against the model's vocabulary.
"""

from __future__ import annotations

from app.engine.constraints.compiler import (
    Constraint,
    ConstraintRun,
    ToolChoice,
    compile_constraint,
    parse_response_format,
    parse_tool_choice,
    resolve_tool_choice,
    tokenizer_for,
)
from app.engine.constraints.lark import ConstraintError, GrammarContext

__all__ = [
    "Constraint",
    "ConstraintError",
    "ConstraintRun",
    "GrammarContext",
    "ToolChoice",
    "compile_constraint",
    "parse_response_format",
    "parse_tool_choice",
    "resolve_tool_choice",
    "tokenizer_for",
]
