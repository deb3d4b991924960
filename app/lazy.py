"""Lazy exports for a package ``__init__`` (PEP 562): a name is imported on first use.

    from app.lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, {"load_model": "app.engine.llm", ...})

``import package`` then imports none of the listed modules (so neither llama.cpp, gguf, httpx nor
Starlette loads until a name that needs them is used); the first lookup of a name imports its
module and keeps the value in the package's namespace, so later lookups cost nothing. The mapping
is name -> the module that defines it; list the names in ``__all__`` and, for type checkers, import
them under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` for ``exports`` (name -> module)."""
    table = dict(exports)

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__
