"""The grammar writers (Qt-free, pure text): a leaf package the tool-call families import.

* :mod:`app.engine.grammar.lark`: the Lark builders and the :class:`GrammarContext` a family
  writes its constraint grammar against (``Format.constraint_grammar``);
* :mod:`app.engine.grammar.wires`: the shared call shapes (JSON-tagged calls, sections, raw
  parameters, notations), parametrised by a family's markers;
* :mod:`app.engine.grammar.gbnf`: Lark translated to GBNF for engines that take llama.cpp's
  grammars.

It imports only :mod:`app.engine.errors`: the compiler that turns these grammars into token masks
(``app.engine.constraints``) sits above the formats, this package below them. Import the
submodules directly; this package exports nothing itself.
"""

__all__: list[str] = []
