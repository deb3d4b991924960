"""Render a model's chat template safely.

Chat templates come from the model file, so they are untrusted code. They run in a Jinja
``SandboxedEnvironment`` (private and dunder attributes blocked, as in the fix for
llama-cpp-python's CVE-2024-34359; list and dict mutation allowed because official templates
such as Kimi K2's call ``.append``), with the Hugging Face conventions: ``trim_blocks``,
``lstrip_blocks``, loop controls, the ``{% generation %}`` tag, and the globals
``raise_exception``, ``strftime_now`` and a ``tojson`` filter with ``indent``, ``ensure_ascii``,
``separators`` and ``sort_keys``.

Rendering is bounded: output size, a budget of operations (calls, loop iterations, output
chunks) and a wall-clock deadline checked on those operations (no signals, so any thread may
render). Every failure is a :class:`TemplateRenderError` whose message says what failed.
"""

from __future__ import annotations

import inspect
import json
import threading
import time
from datetime import datetime
from functools import lru_cache
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import SandboxedEnvironment

__all__ = [
    "MAX_OPERATIONS",
    "MAX_OUTPUT_CHARS",
    "MAX_RENDER_SECONDS",
    "TemplateRenderError",
    "compile_template",
    "render_template",
]

MAX_OUTPUT_CHARS = 4_000_000
MAX_OPERATIONS = 2_000_000
MAX_RENDER_SECONDS = 5.0
_MAX_SEQUENCE = 1_000_000  # largest string / list a binary operator may build


class TemplateRenderError(Exception):
    """The chat template could not be rendered; the message says why."""


class _Budget:
    __slots__ = ("deadline", "ops", "max_ops")

    def __init__(self, max_ops: int, seconds: float):
        self.ops = 0
        self.max_ops = max_ops
        self.deadline = time.monotonic() + seconds

    def tick(self, n: int = 1) -> None:
        self.ops += n
        if self.ops > self.max_ops:
            raise TemplateRenderError(f"template rendering exceeded {self.max_ops} operations (runaway loop?)")
        if (self.ops & 0x3FF) == 0 and time.monotonic() > self.deadline:
            raise TemplateRenderError("template rendering took too long")


_local = threading.local()


def _tick(n: int = 1) -> None:
    budget = getattr(_local, "budget", None)
    if budget is not None:
        budget.tick(n)


class _BoundedRange:
    """``range`` whose iteration counts against the render budget."""

    def __init__(self, *args: int):
        self._r = range(*args)
        if len(self._r) > _MAX_SEQUENCE:
            raise TemplateRenderError(f"range() of {len(self._r)} items is too large")

    def __iter__(self):
        for i in self._r:
            _tick()
            yield i

    def __len__(self) -> int:
        return len(self._r)

    def __getitem__(self, i):
        return self._r[i]

    def __contains__(self, x) -> bool:
        return x in self._r

    def __reversed__(self):
        return reversed(self._r)


class _TemplateException(Exception):
    pass


def _raise_exception(message: Any = "") -> None:
    raise _TemplateException(str(message))


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def _json_default(value: Any) -> Any:
    # Jinja's ``map``/``select`` filters yield generators: HF's tojson (Jinja's own) lists them,
    # so a template such as llama.cpp's older DeepSeek R1 renders ``tools | map(...) | tojson``.
    if isinstance(value, (map, filter)) or inspect.isgenerator(value):
        return list(value)
    return str(value)


def _tojson(value: Any, indent: int | None = None, ensure_ascii: bool = False,
            separators: Any = None, sort_keys: bool = False) -> str:
    if separators is not None:
        separators = tuple(separators)
    try:
        return json.dumps(value, indent=indent, ensure_ascii=ensure_ascii, separators=separators,
                          sort_keys=sort_keys, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise _TemplateException(f"tojson: {exc}") from exc


class _GenerationExtension(Extension):
    """``{% generation %}...{% endgeneration %}`` (HF assistant masks): renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


class _Sandbox(SandboxedEnvironment):
    """Sandbox that counts calls and binary-operator sizes against the render budget."""

    intercepted_binops = frozenset(["*", "**", "+"])

    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 (jinja's signature)
        _tick()
        return SandboxedEnvironment.call(__self, __context, __obj, *args, **kwargs)

    def call_binop(self, context, operator, left, right):
        _tick()
        if operator == "**":
            if isinstance(right, int | float) and abs(right) > 64:
                raise _TemplateException("exponent too large")
        elif operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, str | list | tuple) and isinstance(n, int) and len(seq) * n > _MAX_SEQUENCE:
                    raise _TemplateException("sequence repetition too large")
        elif operator == "+":
            if isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple):
                if len(left) + len(right) > MAX_OUTPUT_CHARS:
                    raise _TemplateException("concatenation too large")
        return super().call_binop(context, operator, left, right)


def _make_env() -> _Sandbox:
    env = _Sandbox(
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        extensions=["jinja2.ext.loopcontrols", _GenerationExtension],
        undefined=jinja2.Undefined,
        # No compile-time constant folding: it cost about a fifth of compiling a large template
        # (first detection of a model's template is mostly compiling) and changes no output.
        optimized=False,
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["range"] = _BoundedRange
    return env


_ENV = _make_env()
_compile_lock = threading.Lock()


@lru_cache(maxsize=64)
def _compile(source: str) -> jinja2.Template:
    with _compile_lock:
        return _ENV.from_string(source)


def compile_template(source: str) -> jinja2.Template:
    """Compile (cached by source) or raise :class:`TemplateRenderError` for a syntax error."""
    if not isinstance(source, str):
        raise TemplateRenderError(f"chat template must be a string, not {type(source).__name__}")
    try:
        return _compile(source)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateRenderError(f"chat template syntax error at line {exc.lineno}: {exc.message}") from exc
    except Exception as exc:  # noqa: BLE001 - any compile failure is the template's fault
        raise TemplateRenderError(f"chat template could not be compiled: {exc}") from exc


def render_template(
    source: str,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    add_generation_prompt: bool = True,
    bos_token: str = "",
    eos_token: str = "",
    max_output_chars: int = MAX_OUTPUT_CHARS,
    max_operations: int = MAX_OPERATIONS,
    max_seconds: float = MAX_RENDER_SECONDS,
    **extra: Any,
) -> str:
    """Render ``source`` for ``messages`` (and ``tools``) in the sandbox.

    Raises :class:`TemplateRenderError` on any failure: syntax, ``raise_exception``, a blocked
    attribute, too much output, too many operations, or too much time.
    """
    template = compile_template(source)
    context = dict(extra)
    context.update(messages=messages, tools=tools, add_generation_prompt=add_generation_prompt,
                   bos_token=bos_token, eos_token=eos_token)
    previous = getattr(_local, "budget", None)
    _local.budget = budget = _Budget(max_operations, max_seconds)
    parts: list[str] = []
    size = 0
    try:
        for chunk in template.generate(**context):
            budget.tick()
            size += len(chunk)
            if size > max_output_chars:
                raise TemplateRenderError(f"template output exceeded {max_output_chars} characters")
            parts.append(chunk)
    except TemplateRenderError:
        raise
    except _TemplateException as exc:
        raise TemplateRenderError(f"template raised an exception: {exc}") from None
    except jinja2.exceptions.SecurityError as exc:
        raise TemplateRenderError(f"template tried an unsafe operation: {exc}") from None
    except jinja2.TemplateError as exc:
        raise TemplateRenderError(f"template error: {exc}") from None
    except RecursionError:
        raise TemplateRenderError("template recursed too deeply") from None
    except MemoryError:
        raise TemplateRenderError("template used too much memory") from None
    except Exception as exc:  # noqa: BLE001 - untrusted code: any failure is a render error
        raise TemplateRenderError(f"template failed: {type(exc).__name__}: {exc}") from None
    finally:
        _local.budget = previous
    return "".join(parts)
