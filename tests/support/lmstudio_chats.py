"""LM Studio's chats written as LM Studio keeps them (``<home>/conversations/[folder/]<ms>.conversation.json``),
made for the tests that bring them in: a user's message, a reply's steps, a chat, a file."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["MADE", "WEATHER", "lms_chat", "lms_reply", "lms_text", "lms_user", "write_lms_chat"]

MADE = 1_764_000_000_000  # when the chat was made, in LM Studio's milliseconds


def lms_user(*texts: str, files: tuple[str, ...] = (), selected: int | None = None) -> dict:
    """A user's message; several texts are versions (edits), the last shown unless ``selected``."""
    versions = [
        {
            "type": "singleStep",
            "role": "user",
            "content": [{"type": "text", "text": t}]
            + [{"type": "file", "fileIdentifier": f, "name": f} for f in files],
        }
        for t in texts
    ]
    return {"versions": versions, "currentlySelected": len(texts) - 1 if selected is None else selected}


def lms_text(text: str, *, thinking: bool = False) -> dict:
    step = {"type": "contentBlock", "content": [{"type": "text", "text": text}]}
    if thinking:
        step["style"] = {"type": "thinking", "ended": True}
    return step


def lms_reply(*versions: list[dict], sender: str = "qwen3-4b", selected: int = 0) -> dict:
    return {
        "versions": [
            {"type": "multiStep", "role": "assistant", "senderInfo": {"senderName": sender}, "steps": steps}
            for steps in versions
        ],
        "currentlySelected": selected,
    }


def lms_chat(name: str, *messages: dict, made: int = MADE, **more) -> dict:
    return {"name": name, "createdAt": made, "systemPrompt": "", "messages": list(messages), **more}


WEATHER = lms_chat(
    "Weather in Lyon",
    lms_user("What is the weather in Lyon?"),
    lms_reply(
        [
            lms_text("The user wants the weather.", thinking=True),
            {"type": "toolStatus", "statusState": {}},
            {
                "type": "contentBlock",
                "content": [
                    {"type": "text", "text": "Let me look."},
                    {
                        "type": "toolCallRequest",
                        "id": "call-1",
                        "name": "get_weather",
                        "arguments": {"city": "Lyon"},
                    },
                ],
            },
            {
                "type": "contentBlock",
                "content": [{"type": "toolCallResult", "toolCallId": "call-1", "content": "12 °C, rain"}],
            },
            lms_text("It is 12 °C and raining in Lyon."),
            {"type": "debugInfoBlock"},
        ]
    ),
    lms_user("and Paris?", "And in Paris tomorrow?"),  # edited: the second is shown
    lms_reply([lms_text("An older answer.")], [lms_text("Tomorrow, Paris: sunny.")], selected=1),
    systemPrompt="Answer briefly.",
    pinned=True,
)


def write_lms_chat(home: Path, chat: dict, name: str, folder: str | None = None) -> Path:
    where = home / "conversations" / (folder or "")
    where.mkdir(parents=True, exist_ok=True)
    path = where / name
    path.write_text(json.dumps(chat), encoding="utf-8")
    return path
