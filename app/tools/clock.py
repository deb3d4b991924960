"""The current date and time, in the machine's time zone or a named IANA zone."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field

from app.tools.types import ToolError

__all__ = ["current_datetime"]


def current_datetime(timezone: Annotated[str | None, Field(max_length=64)] = None) -> str:
    """Get the current date and time.

    Args:
        timezone: An IANA time zone name such as "Europe/Paris" or "UTC". Leave it out for the
            user's local time zone.
    """
    if timezone is None or not timezone.strip():
        now = datetime.now().astimezone()
        zone_name = now.tzname() or "local time"
    else:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        name = timezone.strip()
        try:
            zone = ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            raise ToolError(
                f"Unknown time zone '{name}'. Use an IANA name such as 'Europe/Paris' or 'UTC'."
            ) from None
        now = datetime.now(zone)
        zone_name = name
    return f"{now.strftime('%A')}, {now.isoformat(timespec='seconds')} ({zone_name})"
