"""Conversation messages as the engine stores them (and the history stores their dicts).

A :class:`Message` keeps what every template needs: ``role`` (system, user, assistant,
tool), string ``content``, the assistant's ``reasoning`` (handed back to templates that
read it), its ``tool_calls``, and for a tool result the ``tool_call_id`` and ``name``.
A user message may carry ``images``: the bytes of each image, in order, placed before the
message's text (untrusted bytes: checked and decoded only in the engine process,
``app.engine.vision``). Their dict form is base64 text.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from app.calls import IncompleteCall, ToolCall

__all__ = ["ROLES", "Message", "ToolCall", "is_valid_call_id", "local_call_id"]

ROLES = ("system", "user", "assistant", "tool")
_CALL_ID = re.compile(r"^[A-Za-z0-9]{9}$")


def is_valid_call_id(value: Any) -> TypeGuard[str]:
    """Call ids every supported template accepts: exactly 9 ASCII letters or digits."""
    return isinstance(value, str) and bool(_CALL_ID.match(value))


def local_call_id(n: int, prefix: str = "call") -> str:
    """``call00000``, ``call00001``... (``hist00001`` for replayed history)."""
    digits = 9 - len(prefix)
    return f"{prefix}{n % 10**digits:0{digits}d}"


def _call_from_dict(data: Any) -> ToolCall:
    """A stored or client-sent call: the stored shape (``id``, ``name``, ``arguments``, ``raw``) or
    OpenAI's (``function: {name, arguments}``, arguments as JSON text, kept as text when it is not
    JSON: the dispatcher then tells the model its JSON was bad)."""
    if not isinstance(data, dict):
        raise ValueError(f"not a tool call: {data!r:.80}")
    fn = data.get("function")
    if isinstance(fn, dict):
        args = fn.get("arguments")
        if isinstance(args, str):
            try:
                parsed = json.loads(args, strict=False) if args.strip() else {}  # raw newlines too
            except ValueError:
                parsed = None
            args = parsed if isinstance(parsed, dict) else args
        return ToolCall(
            id=str(data.get("id", "")),
            name=str(fn.get("name", "")),
            arguments=args if isinstance(args, dict | str) else {},
        )
    return ToolCall.from_dict(data)


@dataclass
class Message:
    role: str
    content: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    # Calls the model wrote that are not calls to run (cut off by the token limit, or to an
    # undeclared tool): kept with the reply so nothing is lost; never sent back to the model.
    incomplete_calls: list[IncompleteCall] = field(default_factory=list)
    # The images of a user message, as the bytes of each file (PNG, JPEG...), in order.
    images: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"unknown message role {self.role!r} (expected one of {', '.join(ROLES)})")
        if self.content is None:
            self.content = ""
        if not isinstance(self.content, str):
            raise TypeError(f"message content must be a string, got {type(self.content).__name__}")
        self.reasoning = self.reasoning or ""
        self.images = [_image_bytes(i) for i in self.images or []]
        if self.images and self.role != "user":
            raise ValueError(f"only a user message carries images, not a {self.role} message")

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.reasoning:
            data["reasoning"] = self.reasoning
        if self.tool_calls:
            data["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            data["name"] = self.name
        if self.incomplete_calls:
            data["incomplete_calls"] = [c.to_dict() for c in self.incomplete_calls]
        if self.images:
            data["images"] = [base64.b64encode(i).decode("ascii") for i in self.images]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        if not isinstance(data, dict) or "role" not in data:
            raise ValueError(f"not a message: {data!r:.80}")
        return cls(
            role=str(data["role"]),
            content=data.get("content") or "",
            reasoning=data.get("reasoning") or data.get("reasoning_content") or "",
            tool_calls=[_call_from_dict(c) for c in data.get("tool_calls") or []],
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
            incomplete_calls=[
                IncompleteCall.from_dict(c) for c in data.get("incomplete_calls") or [] if isinstance(c, dict)
            ],
            images=list(data.get("images") or []),
        )


def _image_bytes(value: Any) -> bytes:
    """An image as bytes: bytes as they are, a string as base64 (the dict form)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("an image is neither bytes nor base64 text") from None
    raise TypeError(f"an image must be bytes or base64 text, got {type(value).__name__}")
