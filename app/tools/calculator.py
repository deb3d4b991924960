"""A calculator the model can trust: the expression is parsed with ``ast`` and walked, never eval'd.

Numbers, + - * / // % **, unary signs, parentheses, a fixed set of math functions and the
constants pi, e, tau. Every value must stay finite: an overflow to infinity or a NaN is an
error the model reads, never a result. Exponents, factorials and result sizes are bounded so
an expression like ``9**9**9`` is refused instead of freezing the app.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from app.tools.types import ToolError

__all__ = ["MAX_EXPRESSION_CHARS", "calculator", "evaluate"]

MAX_EXPRESSION_CHARS = 500
MAX_NODES = 200
MAX_INT_BITS = 4096  # about 1233 decimal digits
MAX_FACTORIAL = 450
MAX_ROUND_DIGITS = 1000  # round(x, -N) builds 10**N in C, holding the GIL, before any other check

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_SYMBOL = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}

_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}
_NON_FINITE_NAMES = {"inf", "infinity", "nan"}


def _factorial(n: Any) -> int:
    if isinstance(n, float) and n.is_integer():
        n = int(n)
    if not isinstance(n, int) or n < 0:
        raise ToolError("factorial() needs a non-negative whole number.")
    if n > MAX_FACTORIAL:
        raise ToolError(f"factorial() is limited to n <= {MAX_FACTORIAL}.")
    return math.factorial(n)


def _round(x: Any, ndigits: Any = None) -> Any:
    if ndigits is None:
        return round(x)
    if isinstance(ndigits, float) and ndigits.is_integer():
        ndigits = int(ndigits)
    if not isinstance(ndigits, int):
        raise ToolError("round() needs a whole number of digits.")
    if abs(ndigits) > MAX_ROUND_DIGITS:
        raise ToolError(f"round() is limited to at most {MAX_ROUND_DIGITS} digits either side of the point.")
    return round(x, ndigits)


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "cbrt": lambda x: math.copysign(abs(x) ** (1 / 3), x),
    "exp": math.exp,
    "log": math.log,
    "ln": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "atan2": math.atan2,
    "sinh": math.sinh,
    "cosh": math.cosh,
    "tanh": math.tanh,
    "degrees": math.degrees,
    "radians": math.radians,
    "abs": abs,
    "round": _round,
    "floor": math.floor,
    "ceil": math.ceil,
    "trunc": math.trunc,
    "hypot": math.hypot,
    "min": min,
    "max": max,
    "gcd": math.gcd,
    "factorial": _factorial,
}


def _check_size(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ToolError("The result is too large (more than about 1200 digits).")
    if isinstance(value, complex):
        raise ToolError("The result is not a real number.")
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            raise ToolError("The result is not a number (NaN).")
        raise ToolError("The result is too large for a floating-point number (it overflows to infinity).")
    return value


def _bits(x: Any) -> float:
    if isinstance(x, int):
        return max(x.bit_length(), 1)
    return max(math.log2(abs(x)) if x else 1.0, 1.0)


def _power(base: Any, exponent: Any) -> Any:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
        if abs(base) > 1 and _bits(base) * exponent > MAX_INT_BITS:
            raise ToolError("The result is too large (more than about 1200 digits).")
    if isinstance(exponent, int | float) and abs(exponent) > 1_000_000 and abs(base) not in (0, 1):
        raise ToolError("The exponent is too large.")
    return base**exponent


class _Evaluator:
    def __init__(self) -> None:
        self.nodes = 0

    def eval(self, node: ast.AST) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ToolError(f"The expression is too complex (more than {MAX_NODES} parts).")
        if isinstance(node, ast.Expression):
            return self.eval(node.body)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | float):
                raise ToolError(f"Only numbers are allowed, got {node.value!r}.")
            return _check_size(node.value)
        if isinstance(node, ast.BinOp):
            op = type(node.op)
            if op not in _BINARY:
                raise ToolError(f"The operator {type(node.op).__name__} is not supported.")
            left, right = self.eval(node.left), self.eval(node.right)
            if op is ast.Pow:
                return _check_size(_power(left, right))
            if op is ast.Mult and isinstance(left, int) and isinstance(right, int):
                if _bits(left) + _bits(right) > MAX_INT_BITS + 1:
                    raise ToolError("The result is too large (more than about 1200 digits).")
            if op in (ast.Div, ast.FloorDiv, ast.Mod) and right == 0:
                raise ToolError(f"Division by zero in '{_SYMBOL[op]}'.")
            return _check_size(_BINARY[op](left, right))
        if isinstance(node, ast.UnaryOp):
            if type(node.op) not in _UNARY:
                raise ToolError(f"The operator {type(node.op).__name__} is not supported.")
            return _check_size(_UNARY[type(node.op)](self.eval(node.operand)))
        if isinstance(node, ast.Name):
            if node.id in _CONSTANTS:
                return _CONSTANTS[node.id]
            if node.id.lower() in _NON_FINITE_NAMES:
                raise ToolError(
                    f"'{node.id}' is not a finite number; the calculator works with finite numbers only."
                )
            if node.id in _FUNCTIONS:
                raise ToolError(f"'{node.id}' is a function: call it like {node.id}(x).")
            raise ToolError(f"Unknown name '{node.id}'. Known constants: {', '.join(_CONSTANTS)}.")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
                shown = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)[:40]
                raise ToolError(
                    f"Unknown function '{shown}'. Known functions: {', '.join(sorted(_FUNCTIONS))}."
                )
            if node.keywords:
                raise ToolError("Functions take positional arguments only.")
            args = [self.eval(a) for a in node.args]
            try:
                return _check_size(_FUNCTIONS[node.func.id](*args))
            except ToolError:
                raise
            except (ValueError, TypeError, OverflowError) as exc:
                raise ToolError(f"{node.func.id}() cannot be computed for these arguments ({exc}).") from None
        raise ToolError(f"'{ast.unparse(node)[:40]}' is not allowed in an expression.")


def evaluate(expression: str) -> int | float:
    """The value of ``expression``; ToolError (one clear sentence) when it cannot be computed."""
    if not isinstance(expression, str) or not expression.strip():
        raise ToolError("The expression is empty.")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"The expression is too long (more than {MAX_EXPRESSION_CHARS} characters).")
    text = expression.strip().replace("^", "**").replace("×", "*").replace("÷", "/")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ToolError(
            f"The expression is not valid arithmetic (syntax error at column {exc.offset})."
        ) from None
    try:
        value = _Evaluator().eval(tree)
    except ToolError:
        raise
    except ZeroDivisionError:
        raise ToolError("Division by zero.") from None
    except OverflowError:
        raise ToolError("The result is too large for a floating-point number.") from None
    except RecursionError:
        raise ToolError("The expression is nested too deeply.") from None
    return _check_size(value)


def _format(value: int | float) -> str:
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return format(value, ".15g")
    return str(value)


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression exactly and return the result.

    Supports + - * / // % ** (or ^), parentheses, functions such as sqrt, sin, cos, tan,
    log (natural), log10, exp, abs, round, floor, ceil, factorial, and the constants pi and e.

    Args:
        expression: The arithmetic expression, for example "sqrt(2) * (3 + 4)^2".
    """
    return _format(evaluate(expression))
