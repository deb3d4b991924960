"""The window's status bar: time to first token, tokens/s, the context meter and the downloads
running on the Models page (a part of the main window)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QLabel, QProgressBar, QPushButton

from app.ui.chat.live import elapsed_text

if TYPE_CHECKING:
    from PySide6.QtWidgets import QStatusBar

    from app.engine.context import ContextUsage
    from app.engine.events import DoneEvent

__all__ = ["StatusController"]


class StatusController:
    """Owns the status bar's figures (TTFT, tokens/s, context), the context meter, the last
    :class:`ContextUsage` and the download indicator (a click shows the Models page)."""

    def __init__(self, status_bar: QStatusBar, *, show_models_page: Callable[[], None]) -> None:
        self.context_usage: ContextUsage | None = None
        sb = status_bar
        self.stat_ttft = QLabel("TTFT —")
        self.stat_tps = QLabel("— tok/s")
        self.stat_ctx = QLabel("context —")
        self.context_meter = QProgressBar()
        self.context_meter.setObjectName("contextMeter")
        self.context_meter.setRange(0, 100)
        self.context_meter.setValue(0)
        self.context_meter.setFormat("Context —")
        self.context_meter.setTextVisible(True)
        self.context_meter.setMaximumWidth(150)
        self.stat_ttft.setToolTip("Time to the first token of the last reply")
        self.stat_tps.setToolTip("Tokens per second of the last reply (live while one is written)")
        for w in (self.stat_ttft, self.stat_tps, self.stat_ctx):
            w.setObjectName("statLabel")
            sb.addPermanentWidget(w)
        sb.addPermanentWidget(self.context_meter)
        self.download_indicator = QPushButton("")
        self.download_indicator.setObjectName("downloadIndicator")
        self.download_indicator.setFlat(True)
        self.download_indicator.setVisible(False)
        self.download_indicator.clicked.connect(show_models_page)
        sb.insertPermanentWidget(0, self.download_indicator)

    def begin_turn(self) -> None:
        """A reply being written: the previous one's figures go. Its tok/s follows the reply
        (:meth:`show_rate`); its TTFT and final tok/s come when it ends."""
        self.stat_ttft.setText("TTFT …")
        self.stat_tps.setText("… tok/s")

    def show_rate(self, tokens_per_s: float) -> None:
        """The live tok/s of the reply being written (the same figure its message shows)."""
        self.stat_tps.setText(f"{tokens_per_s:.1f} tok/s")

    def show_turn_stats(self, ev: DoneEvent) -> None:
        """The figures of the turn that ended ("—" where it has none: stopped before a token)."""
        self.stat_ttft.setText("TTFT —" if ev.ttft_s is None else f"TTFT {elapsed_text(ev.ttft_s)}")
        self.stat_tps.setText("— tok/s" if ev.tokens_per_s is None else f"{ev.tokens_per_s:.1f} tok/s")

    def reset_stats(self) -> None:
        """A new or another conversation: no figures of the previous one stay."""
        self.stat_ttft.setText("TTFT —")
        self.stat_tps.setText("— tok/s")

    def show_context(self, usage: ContextUsage) -> None:
        """The context meter: how much of the model's context the next prompt takes."""
        self.context_usage = usage
        pct = min(100, round(100 * usage.fraction))
        self.context_meter.setRange(0, 100)
        self.context_meter.setValue(pct)
        self.context_meter.setFormat(f"Context {pct}%")
        self.context_meter.setProperty("level", "full" if not usage.fits else "high" if pct >= 75 else "ok")
        self.context_meter.style().unpolish(self.context_meter)
        self.context_meter.style().polish(self.context_meter)
        shares = [f"{usage.tool_tokens:,} of them tool descriptions"] if usage.tool_tokens else []
        if usage.draft_tokens:
            shares.append(f"{usage.draft_tokens:,} the message being written")
        tail = "" if usage.fits or not usage.draft_tokens else " The message being written does not fit."
        self.context_meter.setToolTip(
            f"The next prompt takes {usage.prompt_tokens:,} of {usage.n_ctx:,} tokens"
            f"{', ' if shares else ''}{', '.join(shares)}; {usage.reserve:,} are kept for the reply.{tail}"
        )
        self.stat_ctx.setText(f"context {usage.prompt_tokens:,} / {usage.n_ctx:,}")

    def clear_context_meter(self) -> None:
        """A remote engine keeps its context: the meter shows no figure of the local model's."""
        meter = self.context_meter
        meter.setValue(0)
        meter.setFormat("Context —")
        meter.setToolTip("A remote engine's context is not measured here.")
        self.stat_ctx.setText("context —")
        self.context_usage = None

    def show_downloads(self, running: int, fraction: float) -> None:
        """The download indicator, seen from every page."""
        b = self.download_indicator
        b.setVisible(running > 0)
        pct = f" {fraction * 100:.0f}%" if fraction >= 0 else ""
        b.setText(f"⬇ {running} download{'s' if running != 1 else ''}{pct}")
        b.setToolTip("Downloading on the Models page (click to open it)")
