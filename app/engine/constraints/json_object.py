"""``json_object``: any JSON object, held so that the reply closes within its token limit.

Two things make a ``json_object`` reply end as JSON:

* the schema (:func:`bounded_json_object`) bounds nesting, width, string length and the size of
  integers, so a small model that goes on nesting or repeating is made to close;
* near the end of the reply's token budget the run closes the object itself
  (:func:`json_closer`): it finishes the value being written (a string's closing quote, a
  number's last digit, ``null`` for a value not begun) and closes every open array and object, in
  the compact style the grammar holds (``", "`` between items, ``": "`` after a key). A number
  can carry ten fraction digits (every held number is bounded:
  :func:`app.engine.grammar.lark.bound_numbers`) and a string 400 characters, so the bounds alone
  do not fit a reply into a small ``max_tokens``; the closer does.

The closer reads the bytes written so far in one pass (it runs only in the last few dozen tokens
of a budget); it returns ``None`` for text it does not understand, and the run then leaves the
reply to the grammar (and to ``length``).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "JSON_INTEGER",
    "JSON_KEY",
    "JSON_OBJECT_DEPTH",
    "JSON_OBJECT_WIDTH",
    "JSON_STRING_CHARS",
    "bounded_json_object",
    "json_closer",
]

JSON_OBJECT_DEPTH = 3  # objects and arrays nest at most this deep
JSON_OBJECT_WIDTH = 12  # properties of an object, items of an array
JSON_STRING_CHARS = 400  # characters of a string value
JSON_KEY = '^[^\\x00-\\x1f"]{1,48}$'  # a property name: 1 to 48 printable characters
JSON_INTEGER = 10**15  # integers within +- this


def bounded_json_object() -> dict[str, Any]:
    """The JSON Schema a ``json_object`` reply is held to: any object within the bounds above
    (every value JSON allows, nested at most ``JSON_OBJECT_DEPTH`` deep)."""

    def value(depth: int) -> dict[str, Any]:
        kinds: list[dict[str, Any]] = [
            {"type": "string", "maxLength": JSON_STRING_CHARS},
            {"type": "integer", "minimum": -JSON_INTEGER, "maximum": JSON_INTEGER},
            {"type": "number", "minimum": -JSON_INTEGER, "maximum": JSON_INTEGER},
            {"type": "boolean"},
            {"type": "null"},
        ]
        if depth > 1:
            kinds.append(obj(depth - 1))
            kinds.append({"type": "array", "maxItems": JSON_OBJECT_WIDTH, "items": value(depth - 1)})
        return {"anyOf": kinds}

    def obj(depth: int) -> dict[str, Any]:
        return {
            "type": "object",
            "patternProperties": {JSON_KEY: value(depth)},
            "additionalProperties": False,
            "maxProperties": JSON_OBJECT_WIDTH,
        }

    return obj(JSON_OBJECT_DEPTH)


# What finishes a number, after its last character: a digit where one is owed.
_NUMBER_OWES_DIGIT = frozenset("-.eE+")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_PLACEHOLDER_KEY = b'"_": null'  # a property begun with ", " and no name yet


def json_closer(data: bytes) -> bytes | None:
    """The bytes that complete ``data`` (the start of one compact JSON object) as a whole object,
    or ``None`` when ``data`` is not such a start. ``json_closer(b'{"a": [1, "x')`` is
    ``b'"]}'``."""
    stack: list[int] = []  # b"{" or b"[" of each open container
    state = "start"  # see the branches below
    key_len = 0  # characters of the key being written
    u_left = 0  # hex digits a \\u escape still owes
    utf8_left = 0  # continuation bytes a character still owes
    utf8_lead = 0  # the first byte of that character
    word = b""  # the rest of true/false/null being written
    last = ""  # the number's last character
    i, n = 0, len(data)
    while i < n:
        b = data[i]
        c = chr(b)
        i += 1
        if state in ("str", "key"):
            if utf8_left:
                if b & 0xC0 != 0x80:
                    return None
                utf8_left -= 1
                continue
            if u_left:
                if b not in _HEX:
                    return None
                u_left -= 1
                continue
            if c == "\\":
                state += "_esc"
                continue
            if c == '"':
                if state == "key":
                    if key_len == 0:
                        return None
                    state = "colon"
                else:
                    state = "after"
                continue
            if b < 0x20:
                return None
            key_len += 1
            utf8_left = 3 if b >= 0xF0 else 2 if b >= 0xE0 else 1 if b >= 0xC0 else 0
            utf8_lead = b
            continue
        if state in ("str_esc", "key_esc"):
            state = state[:-4]
            key_len += 1
            if c == "u":
                u_left = 4
            elif c not in '"\\/bfnrt':
                return None
            continue
        if state == "word":
            if not word or b != word[0]:
                return None
            word = word[1:]
            if not word:
                state = "after"
            continue
        if state == "num":
            if c.isdigit() or c in _NUMBER_OWES_DIGIT:
                last = c
                continue
            state = "after"  # the number ended; read this byte as what follows a value
        if state == "start":
            if c != "{":
                return None
            stack.append(b)
            state = "open"
        elif state in ("open", "key_next"):
            if c == "}" and state == "open":
                stack.pop()
                state = "after"
            elif c == '"':
                state, key_len = "key", 0
            else:
                return None
        elif state == "colon":
            if c != ":":
                return None
            state = "colon_sp"
        elif state == "colon_sp":
            if c != " ":
                return None
            state = "value"
        elif state in ("value", "first_item"):
            if c == "]" and state == "first_item":
                stack.pop()
                state = "after"
            elif c in "{[":
                stack.append(b)
                state = "open" if c == "{" else "first_item"
            elif c == '"':
                state = "str"
            elif c == "-" or c.isdigit():
                state, last = "num", c
            elif c in "tfn":
                word = {"t": b"rue", "f": b"alse", "n": b"ull"}[c]
                state = "word"
            else:
                return None
        elif state == "after":
            if not stack:
                return None  # the object is already whole: nothing may follow
            if c == ",":
                state = "comma"
            elif c in "}]" and stack[-1] == (ord("{") if c == "}" else ord("[")):
                stack.pop()
            else:
                return None
        elif state == "comma":
            if c != " ":
                return None
            state = "key_next" if stack[-1] == ord("{") else "value"
        else:
            return None
    if state == "after" and not stack:
        return b""
    tail = _utf8_tail(utf8_lead, utf8_left)
    return _finish(state, stack, key_len=key_len, u_left=u_left, char_tail=tail, word=word, last=last)


def _utf8_tail(lead: int, left: int) -> bytes:
    """The continuation bytes that finish a character begun with ``lead``, ``left`` of them owed:
    the smallest valid ones (after E0 and F0 the first must be at least A0 and 90)."""
    if not left:
        return b""
    owed = 3 if lead >= 0xF0 else 2 if lead >= 0xE0 else 1
    first = {0xE0: 0xA0, 0xF0: 0x90}.get(lead, 0x80) if left == owed else 0x80
    return bytes([first]) + b"\x80" * (left - 1)


def _finish(
    state: str, stack: list[int], *, key_len: int, u_left: int, char_tail: bytes, word: bytes, last: str
) -> bytes | None:
    """The bytes that end the value or key in ``state``, then every open container."""
    if state == "start":
        return b"{}"
    head = b""
    if state in ("str", "key", "str_esc", "key_esc"):
        if state.endswith("_esc"):
            head, state = b"n", state[:-4]  # a newline escape
        head = char_tail + b"0" * u_left + head  # finish the character being written
        if state == "key":
            head += (b"_" if key_len == 0 else b"") + b'": null'
        else:
            head += b'"'
    elif state == "num":
        head = b"0" if last in _NUMBER_OWES_DIGIT else b""
    elif state == "word":
        head = word
    elif state == "colon":
        head = b": null"
    elif state == "colon_sp":
        head = b" null"
    elif state == "value":
        head = b"null"
    elif state == "comma":
        head = b" " + (_PLACEHOLDER_KEY if stack[-1] == ord("{") else b"null")
    elif state == "key_next":
        head = _PLACEHOLDER_KEY
    elif state not in ("open", "first_item", "after"):
        return None
    return head + bytes(ord("}") if b == ord("{") else ord("]") for b in reversed(stack))
