"""A stored reply shown as it looked live: what the turn recorder saved (``app.engine.recorder``)
read back into an :class:`~app.ui.chat.messages.AssistantMessage` (banners, reasoning, text, calls
with how each was decoded, the cut-off mark with Continue, stopped or failed, the statistics line).

The live end of a reply (:class:`~app.ui.window_chat.ChatController`) and a reopened one go
through :func:`end_reply`, so the two read the same."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from app.storage.export import reply_author
from app.ui.call_view import CallView
from app.ui.chat.messages import stats_text
from app.ui.chat.turn_settings import TurnSettings

if TYPE_CHECKING:
    from app.storage.history import MessageRecord
    from app.ui.chat.messages import AssistantMessage

__all__ = [
    "FAILED_CALL_NOTE",
    "LIVE_STATUS",
    "end_reply",
    "fill_reply",
    "reply_author",
    "stored_stats_text",
    "stored_turn_settings",
]

#: A turn's finish reason -> the status its reply shows.
LIVE_STATUS = {"cancelled": "cancelled", "error": "error", "length": "length"}
FAILED_CALL_NOTE = "A tool call in this reply did not run (marked ✗ above): the text may say otherwise."


def end_reply(reply: AssistantMessage, finish_reason: str, stats: str) -> None:
    """What every ended reply shows: its status, the cut-off mark with Continue, the note that a
    call did not run, the statistics line (not for a failed turn)."""
    reply.finish_reason = finish_reason
    reply.set_status(LIVE_STATUS.get(finish_reason, "done"))
    if finish_reason == "length":
        reply.offer_continue()
    elif finish_reason not in ("cancelled", "error") and any(c.failed() for c in reply.cards.values()):
        reply.set_error(FAILED_CALL_NOTE, kind="info")  # the words may claim what the call did not do
    reply.set_stats(stats if finish_reason != "error" else "")


def stored_stats_text(stats: Any) -> str:
    """The statistics line of a stored reply (its extra JSON's ``stats``)."""
    if not isinstance(stats, dict):
        return ""

    def num(key: str) -> Any:
        v = stats.get(key)
        return v if isinstance(v, int | float) and not isinstance(v, bool) else None

    return stats_text(
        num("generated_tokens"),
        num("tokens_per_s"),
        num("elapsed_s"),
        num("ttft_s"),
        draft_tokens=num("draft_tokens"),
        draft_accepted=num("draft_accepted"),
    )


def stored_turn_settings(user: MessageRecord, reply: Sequence[MessageRecord]) -> TurnSettings:
    """The settings a stored turn was sent with (U3): its user message's record; for a turn sent
    before those were kept, the ``settings`` its reply was made with (no thinking choice), if any."""
    if user.turn_settings is not None:
        return TurnSettings.from_record(user.turn_settings)
    last = next((m for m in reversed(reply) if m.role == "assistant"), None)
    return TurnSettings.from_record(last.extra.get("settings") if last is not None else None)


def fill_reply(
    reply: AssistantMessage,
    records: Sequence[MessageRecord],
    *,
    add_notice: Callable[[str, str, str | None], object],
) -> list[CallView]:
    """Show the stored messages of one reply (its assistant and tool messages) in ``reply``;
    ``add_notice`` shows a banner above it. Returns the calls shown."""
    views: list[CallView] = []
    last = None
    for m in records:
        if m.role != "assistant":
            continue
        last = m
        for n in m.shown_notices:
            add_notice(n.code, n.message, n.setting)
        if m.reasoning:
            reply.append_reasoning(m.reasoning)
        if m.content:
            reply.append_text(m.content)
        for inc in m.incomplete_calls:  # cut off or undeclared, not run
            reply.add_incomplete(inc)
        for tc in m.tool_calls:
            view = CallView.from_stored(tc, m.extra)
            reply.add_card(view)
            views.append(view)
        reply.flush()
    if last is None:
        reply.set_status("done")
        return views
    first = next(m for m in records if m.role == "assistant")
    reply.set_author(*reply_author(last.extra), written_at=first.created or None)
    stats = next((m.extra.get("stats") for m in reversed(records) if m.extra.get("stats")), None)
    finish = stats.get("finish_reason") if isinstance(stats, dict) else None
    if last.status == "error":
        end_reply(reply, "error", "")
        reply.set_error(f"The reply failed: {last.error or 'unknown error'}")
    elif last.status == "interrupted":
        # stopped by the user reads "(stopped)" as it did; a reply the app never finished
        # (it was closed or killed) reads "(interrupted)"
        if finish == "cancelled":
            end_reply(reply, "cancelled", stored_stats_text(stats))
        else:
            reply.set_status("interrupted")
    else:
        end_reply(reply, finish if isinstance(finish, str) else "stop", stored_stats_text(stats))
    return views
