"""Render a model's chat template safely.

Chat templates come from the model file, so they are untrusted code. They run in a Jinja
``SandboxedEnvironment`` (private and dunder attributes blocked, as in the fix for
llama-cpp-python's CVE-2024-34359; list and dict mutation allowed because official templates
such as Kimi K2's call ``.append``), with the Hugging Face conventions: ``trim_blocks``,
``lstrip_blocks``, loop controls, the ``{% generation %}`` tag, and the globals
``raise_exception``, ``strftime_now`` and a ``tojson`` filter with ``indent``, ``ensure_ascii``,
``separators`` and ``sort_keys``.

Rendering is bounded in time and memory whatever the template does: a budget of operations
(calls, filters, operators, loop iterations, output chunks) and a wall-clock deadline checked on
every few of them (no signals, so any thread may render), and no single operation may be
expensive. Every operator, filter and method that can grow a value (integer arithmetic, ``~``,
``*``, ``+``, ``%`` and ``str.format`` widths, ``|replace``, ``|center``, ``|indent``, ``|join``,
``|sum``, ``.extend``...) has its result size checked *before* it is built: no string over
:data:`MAX_OUTPUT_CHARS`, no list over a million items, no integer over :data:`MAX_INT_BITS`
bits; filters that work word by word in Python (``wordwrap``, ``urlize``, ``title``,
``wordcount``) take at most :data:`MAX_WORD_FILTER_CHARS` characters. A template whose render
runs out of time after :data:`SLOW_AFTER_SECONDS` or more is remembered (by its text's sha256,
for the process's life): every later render of it, on any path, fails at once with the same
sentence, so a slow template costs one time limit in all. The source is limited to
:data:`MAX_TEMPLATE_CHARS` and its syntax tree to
:data:`MAX_TEMPLATE_NODES` nodes before it is compiled, so compiling is bounded too. Every render
works on its own deep copy of the messages, tools and extra values (with lone surrogates made
valid), so a template cannot change them for the caller or for later renders.
Every failure is a :class:`TemplateRenderError` whose message says what failed.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from datetime import datetime
from functools import lru_cache
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.compiler import CodeGenerator
from jinja2.ext import Extension
from jinja2.sandbox import SandboxedEnvironment

from app.engine.errors import TemplateRenderError

__all__ = [
    "MAX_CALL_DEPTH",
    "MAX_INT_BITS",
    "MAX_OPERATIONS",
    "MAX_OUTPUT_CHARS",
    "MAX_RENDER_SECONDS",
    "MAX_WORD_FILTER_CHARS",
    "SLOW_AFTER_SECONDS",
    "MAX_TEMPLATE_CHARS",
    "MAX_TEMPLATE_NODES",
    "compile_template",
    "functions_variables",
    "render_deadline",
    "render_template",
    "template_variables",
    "template_tools_mode",
]

MAX_OUTPUT_CHARS = 4_000_000
MAX_OPERATIONS = 2_000_000
MAX_RENDER_SECONDS = 5.0
_MAX_SEQUENCE = 1_000_000  # largest list (items) an operator or method may build
MAX_INT_BITS = 4096  # largest integer arithmetic may build (about 1233 digits)
MAX_TEMPLATE_CHARS = 131_072  # real chat templates are under 20 KB
MAX_TEMPLATE_NODES = 20_000  # syntax-tree nodes, checked before code generation (real ones: < 1300)
MAX_CALL_DEPTH = 64  # nested macro / caller / recursive-loop calls (real templates: under 10)
_MAX_WIDTH = 100_000  # widths in %-formats, str.format specs, center/ljust/indent
# Filters that work word by word in Python (one call, no deadline check inside): wordwrap, urlize,
# title and wordcount take seconds on a few MB. Their input is capped (real templates give them a
# role name or a line, if they use them at all).
MAX_WORD_FILTER_CHARS = 100_000
# A render stopped by the clock after running this long marks its template as too slow: later
# renders of the same text (detection, inspect, the library, chat, the check, lint) fail at once
# with the same sentence, so a slow template costs one time limit in all, not one per render.
SLOW_AFTER_SECONDS = 1.0
_MAX_REMEMBERED_SLOW = 256


class _Budget:
    __slots__ = ("clock", "deadline", "ops", "max_ops", "next_check", "timed_out")

    def __init__(self, max_ops: int, seconds: float, clock: Callable[[], float] = time.monotonic):
        self.ops = 0
        self.next_check = 0
        self.max_ops = max_ops
        self.clock = clock
        self.deadline = clock() + seconds
        self.timed_out = False

    def tick(self, n: int = 1) -> None:
        self.ops += n
        if self.ops > self.max_ops:
            raise TemplateRenderError(
                f"template rendering exceeded {self.max_ops} operations (runaway loop?)"
            )
        if self.ops >= self.next_check:  # every 16 operations: none of them can take long
            self.next_check = self.ops + 16
            if self.clock() > self.deadline:
                self.timed_out = True
                raise TemplateRenderError("template rendering took too long")


_local = threading.local()


def _tick(n: int = 1) -> None:
    budget = getattr(_local, "budget", None)
    if budget is not None:
        budget.tick(n)


def _size(value: Any, limit: int = MAX_OUTPUT_CHARS) -> int:
    """About how many characters ``str(value)`` would be, counted without building it (capped)."""
    total = 0
    stack = [value]
    seen = 0
    while stack:
        v = stack.pop()
        seen += 1
        if (seen & 0x3FF) == 0:
            _tick()
        if isinstance(v, str):
            total += len(v)
        elif isinstance(v, bool) or v is None:
            total += 5
        elif isinstance(v, int):
            total += v.bit_length() // 3 + 1
        elif isinstance(v, list | tuple):
            total += 2 * len(v) + 2
            if total <= limit:
                stack.extend(v)
        elif isinstance(v, dict):
            total += 4 * len(v) + 2
            if total <= limit:
                stack.extend(v.keys())
                stack.extend(v.values())
        else:
            total += 24
        if total > limit:
            return total
    return total


def _check_str_size(n: int, what: str) -> None:
    if n > MAX_OUTPUT_CHARS:
        raise _TemplateException(f"{what} would build a string of {n} characters (limit {MAX_OUTPUT_CHARS})")


def _check_int(value: Any, what: str) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise _TemplateException(f"{what} would build an integer of more than {MAX_INT_BITS} bits")


def _check_width(width: Any, what: str) -> None:
    if isinstance(width, int | float) and not isinstance(width, bool) and abs(width) > _MAX_WIDTH:
        raise _TemplateException(f"{what}: width {width} is too large (limit {_MAX_WIDTH})")


_PRINTF_SPEC = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(\*|\d+)?(?:\.(\*|\d+))?")
_FORMAT_SPEC = re.compile(r"\{[^{}]*:([^{}]*)\}")
_DIGITS = re.compile(r"\d+")


def _check_format(fmt: Any, args: Any, what: str) -> None:
    """Refuse %-formats and str.format specs whose widths or precisions would build huge strings."""
    if not isinstance(fmt, str):
        return
    if "*" in fmt:
        for a in args if isinstance(args, tuple | list) else (args,):
            _check_width(a, what)
    for m in _PRINTF_SPEC.finditer(fmt):
        for g in m.groups():
            if g and g != "*" and len(g) > 6 or (g and g.isdigit() and int(g) > _MAX_WIDTH):
                raise _TemplateException(f"{what}: width {g[:12]} is too large (limit {_MAX_WIDTH})")
    for m in _FORMAT_SPEC.finditer(fmt):
        for d in _DIGITS.findall(m.group(1)):
            if len(d) > 6 or int(d) > _MAX_WIDTH:
                raise _TemplateException(f"{what}: width {d[:12]} is too large (limit {_MAX_WIDTH})")
    _check_str_size(len(fmt) + _size(args), what)


def _check_replace(s: Any, old: Any, new: Any, count: Any = None) -> None:
    if isinstance(s, str) and isinstance(old, str) and isinstance(new, str) and len(new) > len(old):
        n = s.count(old) if old else len(s) + 1
        if isinstance(count, int) and count >= 0:
            n = min(n, count)
        _check_str_size(len(s) + n * (len(new) - len(old)), "replace")


def _materialize(value: Any, what: str) -> list[Any]:
    items = list(itertools.islice(value, _MAX_SEQUENCE + 1)) if not isinstance(value, list) else value
    if len(items) > _MAX_SEQUENCE:
        raise _TemplateException(f"{what} of more than {_MAX_SEQUENCE} items")
    return items


def _check_result(value: Any, what: str) -> Any:
    if isinstance(value, str):
        _check_str_size(len(value), what)
    elif isinstance(value, list | tuple) and len(value) > _MAX_SEQUENCE:
        raise _TemplateException(f"{what} built a list of more than {_MAX_SEQUENCE} items")
    else:
        _check_int(value, what)
    return value


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


def _tojson(
    value: Any,
    indent: int | None = None,
    ensure_ascii: bool = False,
    separators: Any = None,
    sort_keys: bool = False,
) -> str:
    if separators is not None:
        separators = tuple(separators)
    try:
        return json.dumps(
            value,
            indent=indent,
            ensure_ascii=ensure_ascii,
            separators=separators,
            sort_keys=sort_keys,
            default=_json_default,
        )
    except (TypeError, ValueError) as exc:
        raise _TemplateException(f"tojson: {exc}") from exc


class _GenerationExtension(Extension):
    """``{% generation %}...{% endgeneration %}`` (HF assistant masks): renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


def _check_method(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Size checks before a str or list method that can grow a value runs."""
    owner = getattr(obj, "__self__", None)
    name = getattr(obj, "__name__", "")
    if isinstance(owner, str):
        if name in ("center", "ljust", "rjust", "zfill") and args:
            _check_width(args[0], f"str.{name}")
        elif name == "expandtabs":
            _check_width(args[0] if args else kwargs.get("tabsize", 8), "str.expandtabs")
            _check_str_size(len(owner) * (1 + owner.count("\t")), "str.expandtabs")
        elif name == "replace" and len(args) >= 2:
            _check_replace(owner, args[0], args[1], args[2] if len(args) > 2 else kwargs.get("count"))
        elif name == "join" and args:
            items = _materialize(args[0], "str.join")
            args = (items,)
            _check_str_size(_size(items) + len(owner) * len(items), "str.join")
        elif name in ("format", "format_map"):
            _check_format(owner, args + tuple(kwargs.values()), f"str.{name}")
    elif isinstance(owner, list):
        if name == "extend" and args:
            extra = len(args[0]) if hasattr(args[0], "__len__") else 0
            if len(owner) + extra > _MAX_SEQUENCE:
                raise _TemplateException(f"list.extend would build a list of more than {_MAX_SEQUENCE} items")
        elif name in ("append", "insert") and len(owner) >= _MAX_SEQUENCE:
            raise _TemplateException(f"list.{name} would build a list of more than {_MAX_SEQUENCE} items")


class _Sandbox(SandboxedEnvironment):
    """Sandbox that counts calls and checks the size of what operators and methods build."""

    intercepted_binops = frozenset(["*", "**", "+", "-", "/", "//", "%"])

    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 (jinja's signature)
        _tick()
        _check_method(__obj, args, kwargs)
        if (
            getattr(__obj, "__name__", "") == "join"
            and isinstance(getattr(__obj, "__self__", None), str)
            and args
        ):
            args = (_materialize(args[0], "str.join"), *args[1:])
        # Calls nest only through template code (macros, ``caller()``, recursive loops): bound
        # that depth so a recursion bomb stops long before a small thread stack (256 KB) overflows.
        depth = getattr(_local, "depth", 0)
        if depth >= MAX_CALL_DEPTH:
            raise _TemplateException(f"macro calls nested more than {MAX_CALL_DEPTH} deep")
        _local.depth = depth + 1
        try:
            result = SandboxedEnvironment.call(__self, __context, __obj, *args, **kwargs)
        finally:
            _local.depth = depth
        return _check_result(result, "a call")

    def call_binop(self, context, operator, left, right):
        _tick()
        ints = isinstance(left, int) and isinstance(right, int)
        if operator == "**":
            if isinstance(right, int | float) and abs(right) > 64:
                raise _TemplateException("exponent too large")
            if ints and right > 0 and abs(left) > 1 and max(left.bit_length(), 1) * right > MAX_INT_BITS:
                raise _TemplateException(f"power would build an integer of more than {MAX_INT_BITS} bits")
        elif operator == "*":
            if ints and left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise _TemplateException(f"product would build an integer of more than {MAX_INT_BITS} bits")
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, str | list | tuple) and isinstance(n, int):
                    limit = MAX_OUTPUT_CHARS if isinstance(seq, str) else _MAX_SEQUENCE
                    if len(seq) * n > limit:
                        raise _TemplateException("sequence repetition too large")
        elif operator == "+":
            if isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple):
                limit = MAX_OUTPUT_CHARS if isinstance(left, str) else _MAX_SEQUENCE
                if len(left) + len(right) > limit:
                    raise _TemplateException("concatenation too large")
        elif operator == "%" and isinstance(left, str):
            _check_format(left, right, "%-format")
        result = super().call_binop(context, operator, left, right)
        if ints or isinstance(result, int):
            _check_int(result, "arithmetic")
        return result

    def wrap_str_format(self, value: Any) -> Any:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        owner, name = value.__self__, value.__name__

        def checked(*args: Any, **kwargs: Any) -> str:
            _tick()
            _check_format(owner, args + tuple(kwargs.values()), f"str.{name}")
            return _check_result(wrapped(*args, **kwargs), f"str.{name}")

        return checked

    def _concat(self, parts: tuple[Any, ...]) -> str:
        """``a ~ b``: the parts' sizes are checked before they are turned into text and joined."""
        _tick()
        _check_str_size(_size(parts), "~ (concatenation)")
        return "".join(str(p) for p in parts)

    def _bounded_iter(self, iterable: Any) -> Any:
        """A ``for`` loop's iterable: each iteration counts against the budget."""
        if isinstance(iterable, _BoundedRange):  # already counts its iterations
            yield from iterable
            return
        for item in iterable:
            _tick()
            yield item


class _CodeGenerator(CodeGenerator):
    """Jinja's code generator with ``~`` and ``for`` routed through the sandbox's checks."""

    def visit_Concat(self, node, frame):
        self.write("environment._concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")

    def visit_For(self, node, frame):
        node.iter = nodes.Call(
            nodes.EnvironmentAttribute("_bounded_iter"), [node.iter], [], None, None, lineno=node.iter.lineno
        )
        super().visit_For(node, frame)

    def writeline(self, x: str, node: Any = None, extra: int = 0) -> None:
        # ``{% set obj.key = v %}`` on a mapping, as llama.cpp's template engine allows it
        # (MiroThinker's published template marks each tool so): Jinja allows the dotted target
        # on a namespace() only. A render's messages and tools are its own copies, so a template
        # changes nothing outside its render.
        if x.startswith("if not isinstance(") and x.endswith(", Namespace):"):
            x = x[: -len("Namespace):")] + "(Namespace, dict)):"
        super().writeline(x, node, extra)


def _finalize(value: Any) -> Any:
    """Every ``{{ value }}``: its size is checked before it is turned into text."""
    if not isinstance(value, str):
        _check_str_size(_size(value), "output")
    return value


def _filter_checks() -> dict[str, Any]:
    def center(value: Any, width: Any = 80, *a: Any, **k: Any) -> None:
        _check_width(width, "center")

    def indent(value: Any, width: Any = 4, *a: Any, **k: Any) -> None:
        _check_width(width, "indent")
        if isinstance(value, str):
            w = len(width) if isinstance(width, str) else int(width) if isinstance(width, int | float) else 4
            _check_str_size(len(value) + (value.count("\n") + 1) * w, "indent")

    def words(name: str) -> Any:
        def check(value: Any, *a: Any, **k: Any) -> None:
            n = len(value) if isinstance(value, str) else _size(value)
            if n > MAX_WORD_FILTER_CHARS:
                raise _TemplateException(
                    f"|{name} of {n} characters is too slow to run (limit {MAX_WORD_FILTER_CHARS})"
                )

        return check

    def wordwrap(value: Any, width: Any = 79, *a: Any, **k: Any) -> None:
        _check_width(width, "wordwrap")
        words("wordwrap")(value)

    def truncate(value: Any, length: Any = 255, *a: Any, **k: Any) -> None:
        _check_width(length, "truncate")

    def replace(value: Any, old: Any = "", new: Any = "", count: Any = None, *a: Any, **k: Any) -> None:
        _check_replace(str(value) if not isinstance(value, str) else value, old, new, count)

    def format_(value: Any, *args: Any, **kwargs: Any) -> None:
        _check_format(value, args + tuple(kwargs.values()), "format")

    def whole(value: Any, *a: Any, **k: Any) -> None:
        _check_str_size(_size(value), "filter")

    return {
        "center": center,
        "indent": indent,
        "wordwrap": wordwrap,
        "truncate": truncate,
        "replace": replace,
        "format": format_,
        "string": whole,
        "tojson": whole,
        "pprint": whole,
        "sum": whole,
        "urlize": words("urlize"),
        "title": words("title"),
        "wordcount": words("wordcount"),
        "xmlattr": whole,
    }


def _guard_filter(name: str, fn: Any, check: Any) -> Any:
    offset = 1 if getattr(fn, "jinja_pass_arg", None) is not None else 0
    materialize = name in (
        "join",
        "list",
        "sort",
        "unique",
        "sum",
        "reverse",
        "batch",
        "slice",
        "groupby",
        "dictsort",
    )

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        _tick()
        items: Any = None
        if (
            materialize
            and len(args) > offset
            and not isinstance(args[offset], dict)
            and (name == "unique" or not isinstance(args[offset], str))  # unique(str): its characters
        ):
            try:
                items = _materialize(args[offset], f"|{name}")
            except TypeError:
                items = None
            if items is not None:
                args = (*args[:offset], items, *args[offset + 1 :])
                _tick(len(items) // 64)
        if name == "join" and len(args) > offset:
            if isinstance(args[offset], str):
                items = args[offset]  # a string joins its characters: one separator between each two
            if items is not None:
                sep = args[offset + 1] if len(args) > offset + 1 else kwargs.get("d", "")
                _check_str_size(
                    _size(items) + (len(sep) if isinstance(sep, str) else 0) * len(items), "|join"
                )
        if check is not None and len(args) > offset:
            check(*args[offset:], **kwargs)
        return _check_result(fn(*args, **kwargs), f"|{name}")

    return guarded


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # noqa: A002
    if not all(isinstance(x, int) and 0 <= x <= 100 for x in (n, min, max)):
        raise _TemplateException("lipsum() is limited to 100 paragraphs of 100 words")
    from jinja2.utils import generate_lorem_ipsum

    return generate_lorem_ipsum(n=n, html=html, min=min, max=max)


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
    env.code_generator_class = _CodeGenerator
    env.finalize = _finalize
    env.filters["tojson"] = _tojson
    checks = _filter_checks()
    for fname, fn in list(env.filters.items()):
        env.filters[fname] = _guard_filter(fname, fn, checks.get(fname))
    env.globals["lipsum"] = _lipsum
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["range"] = _BoundedRange
    return env


_ENV = _make_env()
_compile_lock = threading.Lock()

# Templates whose render ran out of time after :data:`SLOW_AFTER_SECONDS` or more (sha256 of the
# source -> seconds it ran), newest last, at most _MAX_REMEMBERED_SLOW.
_slow: dict[str, float] = {}
_slow_lock = threading.Lock()


def _source_key(source: str) -> str:
    import hashlib

    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


def _remember_slow(key: str, seconds: float) -> None:
    with _slow_lock:
        _slow.pop(key, None)
        _slow[key] = seconds
        while len(_slow) > _MAX_REMEMBERED_SLOW:
            del _slow[next(iter(_slow))]


def _known_slow(key: str) -> float | None:
    with _slow_lock:
        return _slow.get(key)


def _count_nodes(tree: nodes.Node) -> int:
    count = 0
    stack = [tree]
    while stack:
        node = stack.pop()
        count += 1
        if count > MAX_TEMPLATE_NODES:
            break
        stack.extend(node.iter_child_nodes())
    return count


def _lend_macro_arguments(tree: nodes.Template) -> None:
    """Give each call of a template's macro that leaves out a parameter (one without a default)
    the caller's variable of that name, as llama.cpp's template engine lends it (a macro runs in
    its caller's variables there). MiroThinker's published template calls
    ``render_tool_call()`` for ``render_tool_call(message)`` inside its loop over the messages; in
    Jinja the parameter would be undefined, and a conversation holding a past call would not
    render. Where the caller has no such variable, the parameter is undefined as before."""
    macros: dict[str, nodes.Macro | None] = {}
    for macro in tree.find_all(nodes.Macro):
        macros[macro.name] = None if macro.name in macros else macro  # defined twice: left as is
    for call in tree.find_all(nodes.Call):
        if not isinstance(call.node, nodes.Name) or call.dyn_args is not None or call.dyn_kwargs is not None:
            continue
        called = macros.get(call.node.name)
        if called is None:
            continue
        required = called.args[: len(called.args) - len(called.defaults)]
        given = {kw.key for kw in call.kwargs}
        for param in required[len(call.args) :]:
            if param.name not in given:
                lent = nodes.Keyword(
                    param.name, nodes.Name(param.name, "load", lineno=call.lineno), lineno=call.lineno
                )
                lent.set_environment(_ENV)
                call.kwargs.append(lent)


@lru_cache(maxsize=64)
def _compile(source: str) -> jinja2.Template:
    with _compile_lock:
        tree = _ENV.parse(source)
        if _count_nodes(tree) > MAX_TEMPLATE_NODES:
            raise TemplateRenderError(
                f"chat template is too complex to compile (more than {MAX_TEMPLATE_NODES} syntax nodes)"
            )
        _lend_macro_arguments(tree)
        code = _ENV.compile(tree, raw=False)
        return _ENV.template_class.from_code(_ENV, code, _ENV.make_globals(None), None)


@contextlib.contextmanager
def render_deadline(seconds: float, *, clock: Callable[[], float] = time.monotonic):
    """Every render in this thread inside the block shares one deadline ``seconds`` from now.

    Detection renders a template many times; under a shared deadline a hostile template costs
    ``seconds`` in all, not the per-render limit times the number of renders. Nested blocks keep
    the earlier deadline (and the outer block's clock). ``clock`` is the time the renders inside
    read (seconds, never going back): a test passes one it controls.
    """
    previous = getattr(_local, "deadline", None)
    previous_clock = getattr(_local, "clock", None)
    if previous_clock is not None:
        clock = previous_clock
    mine = clock() + seconds
    _local.deadline = mine if previous is None else min(previous, mine)
    _local.clock = clock
    try:
        yield
    finally:
        _local.deadline = previous
        _local.clock = previous_clock


def compile_template(source: str) -> jinja2.Template:
    """Compile (cached by source) or raise :class:`TemplateRenderError` for a syntax error."""
    if not isinstance(source, str):
        raise TemplateRenderError(f"chat template must be a string, not {type(source).__name__}")
    if len(source) > MAX_TEMPLATE_CHARS:
        raise TemplateRenderError(
            f"chat template is too long to compile ({len(source)} characters, the limit "
            f"is {MAX_TEMPLATE_CHARS})"
        )
    try:
        return _compile(source)
    except TemplateRenderError:
        raise
    except RecursionError:
        raise TemplateRenderError("chat template could not be compiled: it is nested too deeply") from None
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
    shared = getattr(_local, "deadline", None)
    clock = getattr(_local, "clock", None) or time.monotonic
    if shared is not None:
        max_seconds = min(max_seconds, shared - clock())
        if max_seconds <= 0:
            raise TemplateRenderError(
                "template rendering took too long (the time for this template is used up)"
            )
    # Remembered with its operation budget: a smaller budget may stop the same template by its
    # operation count long before the time that stopped it with a larger one.
    key = f"{_source_key(source)}:{max_operations}" if isinstance(source, str) else ""
    ran = _known_slow(key)
    if ran is not None:  # one time limit per template in all: it is not run again
        raise TemplateRenderError(
            f"template rendering took too long (it was stopped after {ran:.1f} s before, so it is not run again)"
        )
    template = compile_template(source)
    from app.tools.validation import scrub_value

    # Deep copies: whatever the template mutates (``.append``, ``.update``...) stays in this render.
    context = {k: scrub_value(v) for k, v in extra.items()}
    context.update(
        messages=scrub_value(messages),
        tools=scrub_value(tools),
        add_generation_prompt=add_generation_prompt,
        bos_token=scrub_value(bos_token),
        eos_token=scrub_value(eos_token),
    )
    previous = getattr(_local, "budget", None)
    started = clock()
    _local.budget = budget = _Budget(max_operations, max_seconds, clock)
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
        if budget.timed_out and clock() - started >= SLOW_AFTER_SECONDS:
            _remember_slow(key, clock() - started)
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


# -- template facts (what a template does with tools), read by the formats and the renderer -----

_PROBE_NAME = "callisto_probe_tool_7f3a"
_PROBE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": _PROBE_NAME,
            "description": "probe",
            "parameters": {"type": "object", "properties": {}},
        },
    }
]


def functions_variables(tools: list[dict[str, Any]], date: str | None = None) -> dict[str, Any]:
    """The variables of a template that takes tools as ``functions`` (FireFunction v2): the
    function specs as a JSON string and ``datetime`` (``date``, default now, ``YYYY-MM-DD HH:MM``)."""
    specs = [t.get("function", t) if isinstance(t, dict) else t for t in tools]
    when = date if date is not None else datetime.now().strftime("%Y-%m-%d %H:%M")
    return {"functions": json.dumps(specs, ensure_ascii=False, indent=4), "datetime": when}


@lru_cache(maxsize=64)
def template_variables(source: str) -> frozenset[str]:
    """The variables ``source`` reads that it does not set itself (``enable_thinking``,
    ``reasoning_effort``...): what a caller may pass to :func:`render_template`. Raises
    :class:`TemplateRenderError` when the template does not compile."""
    from jinja2 import meta

    compile_template(source)  # the same limits as a render
    with _compile_lock:
        return frozenset(meta.find_undeclared_variables(_ENV.parse(source)))


@lru_cache(maxsize=64)
def template_tools_mode(source: str) -> str:
    """How a template takes tools: ``variable`` (the standard ``tools``), ``system_message``
    (Phi-4-mini: a JSON string in the system message's ``tools`` key), ``system_list`` (GLM-4-9B-chat:
    the list itself in the system message's ``tools`` key), ``functions`` (FireFunction v2: its
    own ``functions`` variable) or ``none``."""
    base = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    try:
        if _PROBE_NAME in render_template(source, base, tools=_PROBE_TOOLS):
            return "variable"
    except TemplateRenderError:
        pass
    sys_msgs = [
        {"role": "system", "content": "s", "tools": json.dumps(_PROBE_TOOLS)},
        {"role": "user", "content": "u"},
    ]
    try:
        if _PROBE_NAME in render_template(source, sys_msgs):
            return "system_message"
    except TemplateRenderError:
        pass
    try:
        if _PROBE_NAME in render_template(source, [dict(sys_msgs[0], tools=_PROBE_TOOLS), sys_msgs[1]]):
            return "system_list"
    except TemplateRenderError:
        pass
    try:
        if _PROBE_NAME in render_template(source, base, **functions_variables(_PROBE_TOOLS, "2026-01-01")):
            return "functions"
    except TemplateRenderError:
        pass
    return "none"
