"""TeX math in a reply, shown as Unicode text: ``\\(17 \\times 23 = 391\\)`` reads 17 × 23 = 391.

Models write their math in TeX (Qwen and DeepSeek nearly always: ``\\boxed{391}``, ``\\frac``,
``x^2``). Shown as Markdown it was mangled: Markdown reads ``\\(`` as an escaped parenthesis and
``_`` as emphasis. Qt's rich text has no math layout, so the common part of TeX is written with
Unicode instead (Greek letters, operators, arrows, super- and subscripts, fractions as ``a/b``,
roots, ``\\text``, ``\\mathbb``, accents, ``\\boxed``, simple environments), which reads well for
the arithmetic, algebra and calculus of chat answers. A command it does not know stays as written.

Qt-free and never raises: :func:`math_spans` finds the spans (``$$...$$``, ``\\[...\\]``,
``\\(...\\)``, and ``$...$`` as pandoc reads it, so "$5 and $10" stays money, when what it holds
reads as math, so "$HOME/$USER" stays words), :func:`math_html`
renders one. Both are linear in their text (a span is at most :data:`MAX_SPAN` characters, and
nesting deeper than :data:`MAX_DEPTH` is shown as written).
"""

from __future__ import annotations

import html
import re

__all__ = ["MAX_DEPTH", "MAX_SPAN", "MathSpan", "math_html", "math_spans"]

MAX_SPAN = 4000  # characters of one math span (a longer one is text)
MAX_DEPTH = 40  # groups inside groups

_N = str(MAX_SPAN)
_SPAN = re.compile(
    r"\$\$(?P<dd>.{1,N}?)\$\$".replace("N", _N)
    + r"|\\\[(?P<db>.{1,N}?)\\\]".replace("N", _N)
    + r"|\\\((?P<ip>.{1,N}?)\\\)".replace("N", _N)
    + r"|(?<![\\$\w])\$(?P<id>[^\s$](?:[^$\n]{0,N}?[^\s$\\])?)\$(?![\d$])".replace("N", _N),
    re.S,
)

SYMBOLS = {
    # Greek
    **dict(
        zip(
            "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu "
            "xi pi varpi rho varrho sigma varsigma tau upsilon phi varphi chi psi omega".split(),
            "αβγδϵεζηθϑικλμνξπϖρϱσςτυϕφχψω",
            strict=True,
        )
    ),
    **dict(
        zip("Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega".split(), "ΓΔΘΛΞΠΣΥΦΨΩ", strict=True)
    ),
    # operators and relations
    "times": "×", "cdot": "·", "div": "÷", "pm": "±", "mp": "∓", "ast": "∗", "star": "⋆",
    "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "neq": "≠", "ne": "≠", "approx": "≈",
    "equiv": "≡", "sim": "∼", "simeq": "≃", "cong": "≅", "propto": "∝", "ll": "≪", "gg": "≫",
    "infty": "∞", "partial": "∂", "nabla": "∇", "sum": "∑", "prod": "∏", "coprod": "∐",
    "int": "∫", "iint": "∬", "iiint": "∭", "oint": "∮", "to": "→", "rightarrow": "→",
    "leftarrow": "←", "gets": "←", "leftrightarrow": "↔", "Rightarrow": "⇒", "Leftarrow": "⇐",
    "Leftrightarrow": "⇔", "iff": "⟺", "implies": "⟹", "impliedby": "⟸", "mapsto": "↦",
    "longrightarrow": "⟶", "uparrow": "↑", "downarrow": "↓", "in": "∈", "notin": "∉",
    "ni": "∋", "subset": "⊂", "subseteq": "⊆", "supset": "⊃", "supseteq": "⊇", "cup": "∪",
    "cap": "∩", "setminus": "∖", "emptyset": "∅", "varnothing": "∅", "forall": "∀",
    "exists": "∃", "nexists": "∄", "neg": "¬", "lnot": "¬", "land": "∧", "wedge": "∧",
    "lor": "∨", "vee": "∨", "oplus": "⊕", "otimes": "⊗", "ldots": "…", "cdots": "⋯",
    "dots": "…", "vdots": "⋮", "ddots": "⋱", "circ": "∘", "bullet": "•", "degree": "°",
    "angle": "∠", "perp": "⊥", "parallel": "∥", "mid": "∣", "langle": "⟨", "rangle": "⟩",
    "lfloor": "⌊", "rfloor": "⌋", "lceil": "⌈", "rceil": "⌉", "hbar": "ℏ", "ell": "ℓ",
    "Re": "ℜ", "Im": "ℑ", "aleph": "ℵ", "prime": "′", "therefore": "∴", "because": "∵",
    "checkmark": "✓", "triangle": "△", "square": "□", "lbrace": "{", "rbrace": "}",
    "vert": "|", "Vert": "‖", "backslash": "\\",
    # escaped characters and spacing
    "%": "%", "$": "$", "{": "{", "}": "}", "_": "_", "&": "&", "#": "#",
    ",": " ", ";": " ", ":": " ", ">": " ", "!": "", " ": " ", "quad": "  ", "qquad": "    ",
}  # fmt: skip
_FUNCTIONS = frozenset(
    "sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh log ln lg exp lim limsup liminf "
    "max min sup inf det gcd lcm arg deg dim ker hom Pr mod bmod".split()
)
# sizes and delimiters' partners that only change the layout: dropped
_DROPPED = frozenset(
    "left right big Big bigg Bigg bigl bigr Bigl Bigr displaystyle textstyle scriptstyle limits nolimits "
    "nonumber notag label".split()
)
_TEXT = frozenset(
    "text textrm textnormal mathrm mathit mathsf mathtt textit texttt operatorname mbox".split()
)
_BOLD = frozenset("mathbf textbf boldsymbol bm boxed".split())
_DOUBLE = dict(zip("RNZQCPHE", "ℝℕℤℚℂℙℍ𝔼", strict=True))
_ACCENTS = {"bar": "\u0304", "overline": "\u0305", "hat": "\u0302", "widehat": "\u0302", "tilde": "\u0303",
            "widetilde": "\u0303", "vec": "\u20d7", "dot": "\u0307", "ddot": "\u0308"}  # fmt: skip
_SUP = dict(zip("0123456789+-=()ni", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ", strict=True))
_SUB = dict(zip("0123456789+-=()aeoxhklmnpstijruv", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₒₓₕₖₗₘₙₚₛₜᵢⱼᵣᵤᵥ", strict=True))
_TOKEN = re.compile(r"\\(?:[A-Za-z]+|.)|[{}^_&~\[\]]|\s+|[^\\{}^_&~\[\]\s]+", re.S)


class MathSpan:
    """One span of math in a text: where it stands, its TeX, and whether it is set on its own line."""

    __slots__ = ("display", "end", "start", "tex")

    def __init__(self, start: int, end: int, tex: str, display: bool) -> None:
        self.start, self.end, self.tex, self.display = start, end, tex, display


_MATHY = re.compile(r"[\\^_=+<>()|]")
_VARIABLES = re.compile(r"[A-Za-z](?:\s*,\s*[A-Za-z])+")


def _inline_math(tex: str) -> bool:
    """Whether ``$tex$`` reads as math rather than prose with dollar signs ("$HOME/$USER" in a
    sentence): a command, a script, a relation or brackets in it, a short symbol (``$x$``,
    ``$n_1$``), or a list of variables (``$x, y$``)."""
    return len(tex) <= 3 or bool(_MATHY.search(tex)) or bool(_VARIABLES.fullmatch(tex))


def math_spans(text: str) -> list[MathSpan]:
    """The math spans of ``text`` in order (none overlap)."""
    out = []
    for m in _SPAN.finditer(text):
        key = m.lastgroup or ""
        tex = m.group(key)
        if not tex.strip() or (key == "id" and not _inline_math(tex)):
            continue
        out.append(MathSpan(m.start(), m.end(), tex, key in ("dd", "db")))
    return out


def _script(text: str, table: dict[str, str], mark: str) -> str:
    """``text`` in super- or subscript letters when each has one, else ``^(text)`` / ``_(text)``."""
    if text and all(c in table for c in text):
        return "".join(table[c] for c in text)
    return f"{mark}{text}" if len(text) == 1 else f"{mark}({text})"


def _one_group(t: str) -> bool:
    """Whether ``t`` is one bracketed group: its first ``(`` closes at its very end."""
    if not (t.startswith("(") and t.endswith(")")):
        return False
    depth = 0
    for k, c in enumerate(t):
        depth += (c == "(") - (c == ")")
        if depth == 0 and k < len(t) - 1:
            return False  # "(a)+(b)": two groups, not one
    return True


def _wrapped(text: str) -> str:
    """``text`` as one side of ``a/b``: in parentheses unless it is one word, one number or one
    bracketed group."""
    t = text.strip()
    return t if re.fullmatch(r"[\w.′²³¹⁰-⁹]+", t) or _one_group(t) else f"({t})"


class _Reader:
    """A recursive reader of TeX tokens that writes HTML (text escaped, ``\\boxed`` and bold as
    ``<b>``, line breaks of environments as ``<br>``)."""

    def __init__(self, tex: str) -> None:
        self.toks = _TOKEN.findall(tex)
        self.i = 0

    def group(self, depth: int) -> str:
        """The next argument: a ``{...}`` group, or one token."""
        while self.i < len(self.toks) and self.toks[self.i].isspace():
            self.i += 1
        if self.i >= len(self.toks):
            return ""
        tok = self.toks[self.i]
        self.i += 1
        if tok == "{":
            return self.seq(depth + 1, "}")
        if tok.startswith("\\"):
            return self.command(tok[1:], depth + 1)
        if len(tok) > 1 and not tok.isspace():  # a run of letters: the argument is its first one
            self.toks[self.i - 1] = tok[1:]
            self.i -= 1
            return html.escape(tok[0])
        return html.escape(tok)

    def raw_group(self) -> str:
        """The next ``{...}`` group's text as written (for ``\\text`` and environments' names)."""
        while self.i < len(self.toks) and self.toks[self.i].isspace():
            self.i += 1
        if self.i < len(self.toks) and self.toks[self.i] == "{":
            depth, start = 0, self.i
            while self.i < len(self.toks):
                tok = self.toks[self.i]
                self.i += 1
                depth += tok == "{"
                depth -= tok == "}"
                if depth == 0:
                    return "".join(self.toks[start + 1 : self.i - 1])
            return "".join(self.toks[start + 1 :])
        return ""

    def command(self, name: str, depth: int) -> str:
        if depth > MAX_DEPTH:
            return html.escape("\\" + name)
        if name in SYMBOLS:
            return html.escape(SYMBOLS[name])
        if name in _FUNCTIONS:
            return "mod" if name == "bmod" else name
        if name == "pmod":
            return f"(mod {self.group(depth).strip()})"
        if name in _DROPPED:
            return ""
        if name in ("frac", "dfrac", "tfrac", "cfrac"):
            top, bottom = self.group(depth), self.group(depth)
            return f"{_wrapped(top)}/{_wrapped(bottom)}"
        if name == "binom":
            top, bottom = self.group(depth), self.group(depth)
            return f"C({top.strip()}, {bottom.strip()})"
        if name == "sqrt":
            index = ""
            if self.i < len(self.toks) and self.toks[self.i] == "[":
                self.i += 1
                parts = []
                while self.i < len(self.toks) and self.toks[self.i] != "]":
                    parts.append(self.toks[self.i])
                    self.i += 1
                self.i += 1
                index = _script("".join(parts).strip(), _SUP, "^")
            body = self.group(depth)
            return f"{index}√{_wrapped(body)}"
        if name in _TEXT:
            return (
                html.escape(self.raw_group())
                if name.startswith("text") or name == "mbox"
                else self.group(depth)
            )
        if name in _BOLD:
            return f"<b>{self.group(depth)}</b>"
        if name == "mathbb":
            inner = self.group(depth)
            return "".join(_DOUBLE.get(c, c) for c in inner)
        if name in _ACCENTS:
            inner = self.group(depth)
            return inner + _ACCENTS[name] if len(html.unescape(inner)) == 1 else inner
        if name == "begin":
            self.raw_group()  # the environment's name; its body is read as it comes
            return ""
        if name == "end":
            self.raw_group()
            return ""
        if name == "\\":
            return "<br>"
        # a command it does not know stays as written, its argument in its braces
        if self.i < len(self.toks) and self.toks[self.i] == "{":
            self.i += 1
            return html.escape("\\" + name) + "{" + self.seq(depth + 1, "}") + "}"
        return html.escape("\\" + name)

    def seq(self, depth: int, until: str | None = None) -> str:
        out: list[str] = []
        while self.i < len(self.toks):
            tok = self.toks[self.i]
            self.i += 1
            if tok == until:
                break
            if tok == "{":
                out.append(self.seq(depth + 1, "}") if depth < MAX_DEPTH else "{")
            elif tok == "}":
                continue  # unbalanced: dropped
            elif tok in ("^", "_"):
                arg = html.unescape(re.sub(r"<[^>]*>", "", self.group(depth)))  # (bold dropped there)
                out.append(html.escape(_script(arg, _SUP if tok == "^" else _SUB, tok)))
            elif tok == "&":
                out.append(" ")
            elif tok == "~":
                out.append("\u00a0")
            elif tok == "\\\\":
                out.append("<br>")
            elif tok.startswith("\\"):
                out.append(self.command(tok[1:], depth))
            elif tok.isspace():
                out.append(" ")
            else:
                out.append(html.escape(tok))
        return "".join(out)


def math_html(tex: str) -> str:
    """``tex`` (the inside of one math span) as HTML text with Unicode math; never raises."""
    try:
        out = _Reader(tex).seq(0)
    except Exception:  # noqa: BLE001 - a reader bug must not lose the math: shown as written
        return html.escape(tex)
    return re.sub(r" {2,}", " ", out).strip()
