"""The settings a turn was sent with (issue 28, U3): its tool choice, thinking choice, sampling
and max_tokens. Regenerate and Continue send them again, not the settings changed since.

The worker takes them when it sends a turn (``EngineWorker.turn_settings``) and records them with
it: history keeps them with the turn's user message (``MessageRecord.turn_settings``) and with each
reply it made (its extra JSON's ``settings``). The window keeps them with the user message it
shows (``UserMessage.turn_settings``). Qt-free."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from app.engine.sampling import SamplingParams
from app.engine.thinking import Thinking

__all__ = ["TurnSettings"]

_SAMPLING_KEYS = frozenset(f.name for f in fields(SamplingParams))
_THINKING_KEYS = frozenset(f.name for f in fields(Thinking))


@dataclass(frozen=True)
class TurnSettings:
    """What a turn was sent with. A field that is None was not recorded (a turn sent before they
    were kept, or a record not understood): the current setting stands in for it (:meth:`over`)."""

    tool_choice: Any = None  # auto | none | required | {"type": "function", ...}
    thinking: Thinking | None = None  # Thinking() is Auto
    sampling: Mapping[str, Any] | None = None  # the sampling overrides; {}: the model's recommended values
    max_tokens: int | None = None

    def over(self, current: TurnSettings) -> TurnSettings:
        """These settings, with ``current``'s where they recorded none."""
        return TurnSettings(
            tool_choice=self.tool_choice if self.tool_choice is not None else current.tool_choice,
            thinking=self.thinking if self.thinking is not None else current.thinking,
            sampling=self.sampling if self.sampling is not None else current.sampling,
            max_tokens=self.max_tokens if self.max_tokens is not None else current.max_tokens,
        )

    def options(self) -> dict[str, Any]:
        """What a session's ``regenerate`` / ``continue_reply`` take (``app.engine.loop.TurnOptions``);
        a field not recorded is left out (the session's)."""
        values = {
            "tool_choice": self.tool_choice,
            "thinking": self.thinking,
            "sampling": dict(self.sampling) if self.sampling is not None else None,
            "max_tokens": self.max_tokens,
        }
        return {k: v for k, v in values.items() if v is not None}

    def to_record(self) -> dict[str, Any]:
        """The JSON object history keeps (the keys of a reply's ``settings`` too)."""
        record = self.options()
        if self.thinking is not None:
            record["thinking"] = asdict(self.thinking)
        return record

    @classmethod
    def from_record(cls, data: Any) -> TurnSettings:
        """The settings a stored record names: a user message's ``turn_settings``, or a reply's
        ``settings`` (one made before the thinking choice was kept names none). What it lacks, or
        holds in a shape not understood, is not recorded."""
        if not isinstance(data, Mapping):
            return cls()
        choice, sampling, max_tokens = data.get("tool_choice"), data.get("sampling"), data.get("max_tokens")
        return cls(
            tool_choice=choice if isinstance(choice, str | dict) else None,
            thinking=_thinking(data.get("thinking")),
            sampling=dict(sampling)
            if isinstance(sampling, Mapping) and set(sampling) <= _SAMPLING_KEYS
            else None,
            max_tokens=max_tokens
            if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > 0
            else None,
        )


def _thinking(data: Any) -> Thinking | None:
    """A stored thinking choice (``asdict`` of a :class:`Thinking`); None when it is not one."""
    if not isinstance(data, Mapping) or not set(data) <= _THINKING_KEYS:
        return None
    try:
        return Thinking(**data)
    except (TypeError, ValueError):
        return None
