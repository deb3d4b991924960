"""Constrained decoding (Qt-free): tool_choice and response_format held by a grammar.

Public API::

    from app.engine.constraints import compile_constraint
    from app.engine.errors import ConstraintError
    c = compile_constraint(model, family="hermes", tools=tools, tool_choice="required",
                           parallel_tool_calls=True, response_format=None)
    generate(model, prompt, constraint=c)      # every sampled token is held to c

Each family writes its own grammar (``Format.constraint_grammar`` in
``app/engine/formats/<family>.py``) with the builders of :mod:`app.engine.grammar` (a leaf
package below the formats); llguidance (imported lazily) compiles it against the model's
vocabulary, where llama.cpp runs (the model's backend). :mod:`app.engine.constraints.remote`
writes the same grammars in GBNF for remote engines.
"""

from __future__ import annotations

from app.engine.constraints import compiler
from app.engine.constraints.compiler import *  # noqa: F403  (the package's API is the compiler's)

__all__ = compiler.__all__
