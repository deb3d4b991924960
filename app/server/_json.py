"""The server's one JSON encoder: every body, stream event and call's arguments goes through it.

A model may write a lone surrogate (``"\\ud800"`` in a call's arguments decodes to a code point
UTF-8 cannot encode, and that is no character at all). Each lone surrogate is replaced by U+FFFD
(the replacement character), and two halves that form a pair become the character they encode:
the reply is valid UTF-8 and valid JSON for every client (strict parsers such as the Rust ones
the SDKs use refuse an escaped lone surrogate), the same streamed and not. Every other character
is written as itself (``ensure_ascii=False``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["clean_text", "json_bytes", "json_response", "json_text"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (pairs joined into their character)."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def json_text(data: Any) -> str:
    """``data`` as JSON text that always encodes to UTF-8 (lone surrogates replaced by U+FFFD)."""
    return clean_text(json.dumps(data, ensure_ascii=False))


def json_bytes(data: Any) -> bytes:
    return json_text(data).encode("utf-8")


def json_response(data: Any, status_code: int = 200, headers: Mapping[str, str] | None = None) -> Any:
    """A Starlette JSON response whose body is :func:`json_bytes` (never fails to encode)."""
    from starlette.responses import Response

    return Response(
        json_bytes(data), status_code=status_code, media_type="application/json", headers=dict(headers or {})
    )
