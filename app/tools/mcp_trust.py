"""What Callisto checks in a tool from outside (an MCP server) before the model or the person sees it.

* :func:`check_text` removes the characters a person cannot see but a model reads (invisible,
  format and bidirectional control characters, Unicode tag characters, variation selectors,
  private-use characters) and counts them; and it flags text aimed at the model rather than at
  the person: "ignore previous instructions", ``<IMPORTANT>``-style tags and chat-template
  markers, requests to read or send secrets, orders to call other tools or to keep something
  from the user. A finding is a flag (the window shows it); it never decides on its own whether a
  tool runs: every MCP tool asks first until the person allowed it as it is now.
* :func:`tool_definition` is what a tool is (name, description, input schema, annotations, as the
  server sent them); :func:`app.calls.definition_sha256` pins it; :func:`definition_diff` shows a
  person what changed since they allowed it, with hidden characters made visible.

Qt-free and SDK-free: it reads plain values and duck-typed SDK objects.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "SCAN_CHARS",
    "TextCheck",
    "annotation_hints",
    "check_text",
    "check_value",
    "definition_diff",
    "reveal",
    "tool_definition",
]

#: A tool description longer than this reaches the model cut (with a note); the Settings page
#: and the approval dialog show it whole.
MAX_DESCRIPTION_CHARS = 4000
#: How much of a text is read for instructions aimed at the model (hidden characters are removed
#: from all of it): a model reads only the beginning of a long result.
SCAN_CHARS = 200_000

_KEEP_CONTROLS = {0x09, 0x0A, 0x0D}  # tab, newline, carriage return
_INVISIBLE_CATEGORIES = {"Cf", "Co", "Cs", "Zl", "Zp"}  # format, private use, surrogates, separators
# Letters and marks that render as nothing: variation selectors and the Hangul fillers.
_INVISIBLE_EXTRA = [
    (0xFE00, 0xFE0F),
    (0xE0100, 0xE01EF),
    (0x115F, 0x1160),
    (0x3164, 0x3164),
    (0xFFA0, 0xFFA0),
]


@functools.cache
def _invisible_re() -> re.Pattern[str]:
    """One character class of every invisible character (built once, from this Python's Unicode
    tables: planes 0, 1 and 14 are scanned; planes 15 and 16 are private use as a whole)."""
    ranges: list[tuple[int, int]] = []
    start: int | None = None
    for lo, hi in ((0, 0x1FFFF), (0xE0000, 0xE0FFF)):
        for cp in range(lo, hi + 2):
            if cp <= hi:
                cat = unicodedata.category(chr(cp))
                hidden = cat in _INVISIBLE_CATEGORIES or (cat == "Cc" and cp not in _KEEP_CONTROLS)
            else:
                hidden = False
            if hidden and start is None:
                start = cp
            elif not hidden and start is not None:
                ranges.append((start, cp - 1))
                start = None
    ranges += _INVISIBLE_EXTRA + [(0xF0000, 0x10FFFF)]
    parts = "".join(f"\\U{a:08x}-\\U{b:08x}" if a != b else f"\\U{a:08x}" for a, b in ranges)
    return re.compile(f"[{parts}]")


# Text aimed at the model, not at the person who reads a tool's description or result. Each entry:
# (what the window says, pattern). Patterns look for the shape of an order, not for one phrase.
_IMPERATIVE = r"(?:ignore|disregard|forget|override|bypass|skip)"
_EARLIER = r"(?:previous|prior|above|earlier|preceding|all|any|other|your|the\s+system|system)"
_RULES = r"(?:instructions?|prompts?|rules|directions|guidelines|messages|context|polic(?:y|ies))"
_SECRET_THING = (
    r"(?:~?/?\.ssh\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|\.aws/credentials|\.netrc\b|\.npmrc\b|\.pgpass\b|"
    r"(?<![\w.])\.env\b|/etc/(?:passwd|shadow)\b|private[\s_-]*keys?\b|api[\s_-]*keys?\b|access[\s_-]*tokens?\b|"
    r"secret[\s_-]*keys?\b|\bpasswords?\b|\bcredentials?\b|\bsecrets?\b|\bmnemonic\b|seed\s+phrase|"
    r"\bcookies?\b|session\s+tokens?\b|bearer\s+tokens?\b|\.kube/config|\.docker/config\.json|\.git-credentials)"
)
_REQUEST = r"(?:read|cat|open|send|include|pass|provide|upload|post|share|attach|print|return|copy|leak|fetch|get|collect|extract|forward|append|add)"
_TAGS = re.compile("[\U000e0020-\U000e007e]")
_ASCII_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# words one of which a request for secrets contains: the slow pattern runs only where one is
_SECRET_WORDS = (
    "ssh",
    "id_",
    "credential",
    "passw",
    "secret",
    "key",
    "token",
    ".env",
    "/etc/",
    "cookie",
    "mnemonic",
    "seed",
    "netrc",
    "npmrc",
    "pgpass",
    "kube",
    "docker",
    "git-credentials",
)
_SECRETS_LABEL = "asks for secrets (keys, passwords, ~/.ssh and the like)"
_FINDINGS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "tells the model to ignore its instructions",
        re.compile(
            rf"\b{_IMPERATIVE}\b[^.\n]{{0,40}}?\b{_EARLIER}\b[^.\n]{{0,30}}?\b{_RULES}\b"
            rf"|\bnew\s+(?:system\s+)?instructions?\s*:|\byou\s+are\s+now\s+(?:a|an|in)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "has tags or markers aimed at the model (<IMPORTANT>, <system>, chat-template tokens)",
        re.compile(
            r"<\s*/?\s*(?:important|system|instructions?|secret|hidden|admin|override|critical|note_to_(?:ai|assistant|model)"
            r"|assistant|user|tool_call|im_start|im_end)\b[^>]{0,40}>"
            r"|<\|[a-z_]{2,30}\|>|\[/?(?:INST|SYS)\]|<<\s*/?SYS\s*>>",
            re.IGNORECASE,
        ),
    ),
    (
        _SECRETS_LABEL,
        re.compile(
            rf"\b{_REQUEST}\b[^.\n]{{0,60}}?{_SECRET_THING}|{_SECRET_THING}[^.\n]{{0,40}}?\b(?:and|then)\s+{_REQUEST}\b"
            r"|~/\.ssh/|\bid_(?:rsa|ed25519)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "tells the model to call other tools",
        re.compile(
            r"\b(?:before|after|instead\s+of)\s+(?:using|calling|running|invoking)\s+(?:this|any|the|other|another)\b"
            r"|\b(?:you\s+must|always|first|also|then|must)\s+(?:call|invoke|run|use|execute)\s+(?:the\s+)?[`'\"]?\w+[`'\"]?\s+(?:tool|function)\b"
            r"|\b(?:call|invoke|use|run)\s+(?:every|all|any|the\s+other|other|another)\s+(?:tools?|functions?)\b"
            r"|\bwhen\s+(?:the\s+)?(?:user|anyone)\s+(?:calls?|uses?|asks?)\b[^.\n]{0,60}\b(?:call|use|send|read)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "tells the model to keep something from you",
        re.compile(
            r"\b(?:do\s+not|don'?t|never)\s+(?:tell|mention|inform|reveal|show|alert|notify|say)\b[^.\n]{0,30}\b(?:user|human|person|anyone)\b"
            r"|\bwithout\s+(?:telling|informing|notifying|asking|alerting)\s+(?:the\s+)?(?:user|human|person|anyone)\b"
            r"|\b(?:the\s+)?user\s+(?:must|should)\s+(?:not|never)\s+(?:know|see|find\s+out)\b",
            re.IGNORECASE,
        ),
    ),
)


@dataclass(frozen=True)
class TextCheck:
    """``text`` with the invisible characters removed (``removed`` of them) and what it is flagged for."""

    text: str
    removed: int = 0
    findings: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        return not self.removed and not self.findings

    def warnings(self, what: str) -> tuple[str, ...]:
        """The findings as sentences about ``what`` ("its description", "its result")."""
        out = []
        if self.removed:
            n = self.removed
            out.append(
                f"{n} invisible or direction-changing character{'s' if n != 1 else ''} removed from {what}"
            )
        out += [f"{what} {f}" for f in self.findings]
        return tuple(out)


def check_text(text: str) -> TextCheck:
    """Remove and count the invisible characters of ``text``, and flag what is aimed at the model.

    The findings are read on the cleaned text with each removed character read as a space too (so
    an order split by zero-width characters is found either way)."""
    if not isinstance(text, str):
        text = str(text)
    # ASCII text can hide only control characters: a small class, quick on a long result
    pattern = _ASCII_CONTROLS if text.isascii() else _invisible_re()
    cleaned, removed = pattern.subn("", text)
    head = text[:SCAN_CHARS]  # what a model reads of a long result is its beginning
    findings = _findings(cleaned[:SCAN_CHARS])
    if removed:
        # an order split by invisible characters, and Unicode tag characters that spell ASCII no one sees
        hidden = _TAGS.sub(lambda m: chr(ord(m.group()) - 0xE0000), head)
        findings |= _findings(pattern.sub(" ", head)) | _findings(pattern.sub("", hidden))
    ordered = tuple(label for label, _ in _FINDINGS if label in findings)
    return TextCheck(cleaned, removed, ordered)


def _findings(text: str) -> set[str]:
    normalised = unicodedata.normalize("NFKC", text) if not text.isascii() else text
    lowered = normalised.lower()
    secrets = any(w in lowered for w in _SECRET_WORDS)
    return {
        label for label, rx in _FINDINGS if (secrets or label != _SECRETS_LABEL) and rx.search(normalised)
    }


def check_value(value: Any) -> tuple[Any, int, set[str]]:
    """Every string inside a JSON-like ``value`` (keys too) checked: (cleaned copy, removed, findings)."""
    removed = 0
    findings: set[str] = set()

    def walk(v: Any, depth: int) -> Any:
        nonlocal removed
        if depth > 64:
            return v
        if isinstance(v, str):
            c = check_text(v)
            removed += c.removed
            findings.update(c.findings)
            return c.text
        if isinstance(v, Mapping):
            return {walk(k, depth + 1) if isinstance(k, str) else k: walk(x, depth + 1) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [walk(x, depth + 1) for x in v]
        return v

    return walk(value, 0), removed, findings


def _plain(value: Any) -> Any:
    """An SDK object (pydantic) as plain JSON values; plain values as they are."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return dump(mode="json", by_alias=True, exclude_none=True)
        except Exception:  # noqa: BLE001 - an odd object: its text
            return str(value)
    return value


def tool_definition(mcp_tool: Any) -> dict[str, Any]:
    """What a tool is, as its server sent it: the four things a pin covers."""
    schema = _plain(getattr(mcp_tool, "input_schema", None)) or {}
    annotations = _plain(getattr(mcp_tool, "annotations", None))
    return {
        "name": str(getattr(mcp_tool, "name", "")),
        "description": str(getattr(mcp_tool, "description", None) or getattr(mcp_tool, "title", None) or ""),
        "input_schema": schema if isinstance(schema, dict) else {"unreadable": str(schema)},
        "annotations": annotations if isinstance(annotations, dict) else {},
    }


_HINT_WORDS = {
    "readOnlyHint": ("only reads", None),
    "destructiveHint": ("may delete or overwrite", "does not delete or overwrite"),
    "idempotentHint": ("does nothing more when called twice", None),
    "openWorldHint": ("reaches outside services", "stays local"),
}


def annotation_hints(annotations: Mapping[str, Any]) -> tuple[str, ...]:
    """The server's annotations in plain words ("only reads"): claims to show, never permissions."""
    out = []
    for key, (yes, no) in _HINT_WORDS.items():
        value = annotations.get(key)
        if value is True:
            out.append(yes)
        elif value is False and no:
            out.append(no)
    return tuple(out)


def reveal(text: str) -> str:
    """``text`` with each invisible character written as ``<U+XXXX>`` (a person can see it then)."""
    return _invisible_re().sub(lambda m: f"<U+{ord(m.group()):04X}>", text)


def _lines(definition: Mapping[str, Any] | None) -> list[str]:
    if not definition:
        return []
    text = json.dumps(definition, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    # a description is one JSON string: show its lines as lines, so the diff points at the words
    text = text.replace("\\n", "\n    ")
    lines = reveal(text[:_DIFF_CHARS]).splitlines()
    return lines[:_DIFF_LINES] + (
        [f"... ({len(text):,} characters in all)"] if len(text) > _DIFF_CHARS else []
    )


_DIFF_CHARS = 200_000  # of each definition's text, what the diff compares
_DIFF_LINES = 4000


def definition_diff(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> str:
    """What changed between the definition a person allowed and the one offered now (unified diff,
    hidden characters shown as ``<U+XXXX>``)."""
    diff = difflib.unified_diff(_lines(old), _lines(new), "allowed before", "offered now", n=2, lineterm="")
    return "\n".join(diff)
