"""llama-server's monitoring endpoints: ``GET /metrics`` (Prometheus) and ``GET /slots``.

``/metrics`` counts every reply this server has written since it started (each model's, on every
API), under llama-server's names, so a Grafana board or a scraper made for llama-server reads it
as it is. The counters: prompt tokens read (``prompt_tokens_total``) and reused from the KV cache
(``prompt_tokens_cached_total``), the seconds they took (``prompt_seconds_total``: each reply's
time to its first token), tokens written (``tokens_predicted_total``) and their seconds, the
longest sequence (``n_tokens_max``), and the drafted tokens verified and accepted
(``spec_decode_num_draft_tokens_total``, ``..._accepted_tokens_total``). The gauges: the average
prompt and generation rates since the start (llama-server's since its last scrape), and
``requests_processing`` / ``requests_deferred``: the engine's jobs running and queued now (the
window's too, as they share the engine). ``n_decode_total`` and ``n_busy_slots_per_decode`` are
the engines' own: the ``llama_decode`` calls of every model this server generated with (each
engine process counts its own, the window's turns on it included, and says its counts as each
generation ends), and how many generations a decode held on average (above 1 where a model's
slots batch requests into one decode). llama-server serves these with ``--metrics``; Callisto
always does (a loopback server's counts say nothing a request could not).

``/slots`` shows a model's slots as llama-server does (``?model=``; else the model loaded last,
else the first offered): each one's ``id``, ``n_ctx``, ``speculative`` and ``is_processing``, and
for a busy one its request, prompt and progress (``app.engine.scheduler.Scheduler.slot_states``).
A model that is not loaded shows its slots idle (nothing is loaded to answer);
``?fail_on_no_slot=1`` makes a model without an idle slot a 503, as llama-server's.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.requests import Request

    from app.server._engine import TurnEnd
    from app.server._state import ServerState

__all__ = ["ServerMetrics", "metrics", "slots"]

#: (name, kind, help) of each line, in llama-server's order and words
_LINES = (
    ("prompt_tokens_total", "counter", "Number of prompt tokens processed, excluding cached tokens"),
    ("prompt_tokens_cached_total", "counter", "Number of prompt tokens reused from the cache"),
    ("prompt_seconds_total", "counter", "Total time spent processing prompts"),
    ("tokens_predicted_total", "counter", "Number of generation tokens processed"),
    ("tokens_predicted_seconds_total", "counter", "Total time spent generating tokens"),
    ("n_tokens_max", "counter", "Largest observed sequence length (prompt + generation)"),
    ("n_decode_total", "counter", "Total number of llama_decode() calls"),
    ("n_busy_slots_per_decode", "counter", "Average number of busy slots per llama_decode() call"),
    ("spec_decode_num_draft_tokens_total", "counter", "Speculative: Total draft tokens generated"),
    (
        "spec_decode_num_accepted_tokens_total",
        "counter",
        "Speculative: Total draft tokens accepted by the target model",
    ),
    ("prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s"),
    ("predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s"),
    ("requests_processing", "gauge", "Number of requests processing"),
    ("requests_deferred", "gauge", "Number of requests deferred"),
)


class ServerMetrics:
    """The counters of ``/metrics``, added to as each reply ends (on the engine's threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.prompt_tokens = 0  # read (not reused)
        self.cached_tokens = 0
        self.prompt_s = 0.0
        self.predicted_tokens = 0
        self.predicted_s = 0.0
        self.tokens_max = 0
        self.draft_tokens = 0
        self.draft_accepted = 0
        #: the backends of the loaded models this server generated with, by id; a closed one's
        #: last counts (final: its engine is gone) move to ``_retired`` (decodes, busy slots)
        self._backends: dict[int, Any] = {}
        self._retired = (0, 0)

    def saw(self, backend: Any) -> None:
        """A server job runs on ``backend``'s model: its decodes count from now on."""
        with self._lock:
            self._fold()
            self._backends.setdefault(id(backend), backend)

    def _fold(self) -> None:
        """Keep only the counts of the closed backends (under the lock)."""
        decodes, busy = self._retired
        for key, b in list(self._backends.items()):
            if getattr(b, "closed", False):
                decodes += int(getattr(b, "decode_calls", 0) or 0)
                busy += int(getattr(b, "busy_slots_total", 0) or 0)
                del self._backends[key]
        self._retired = (decodes, busy)

    def record(self, end: TurnEnd) -> None:
        """Count one reply that ended (how it ended: its usage and times)."""
        prompt_s = max(0.0, end.ttft_s or 0.0)
        with self._lock:
            self.prompt_tokens += max(0, end.prompt_tokens - end.cached_tokens)
            self.cached_tokens += end.cached_tokens
            self.prompt_s += prompt_s
            self.predicted_tokens += end.completion_tokens
            self.predicted_s += max(0.0, end.elapsed_s - prompt_s)
            self.tokens_max = max(self.tokens_max, end.prompt_tokens + end.completion_tokens)
            self.draft_tokens += end.draft_tokens
            self.draft_accepted += end.draft_accepted

    def values(self, *, processing: int, deferred: int) -> dict[str, float]:
        """Every line's value, by name (``processing``, ``deferred``: the engine's jobs now)."""
        with self._lock:
            self._fold()
            decodes = self._retired[0] + sum(int(b.decode_calls or 0) for b in self._backends.values())
            busy = self._retired[1] + sum(int(b.busy_slots_total or 0) for b in self._backends.values())
            return {
                "prompt_tokens_total": self.prompt_tokens,
                "prompt_tokens_cached_total": self.cached_tokens,
                "prompt_seconds_total": self.prompt_s,
                "tokens_predicted_total": self.predicted_tokens,
                "tokens_predicted_seconds_total": self.predicted_s,
                "n_tokens_max": self.tokens_max,
                "n_decode_total": decodes,
                "n_busy_slots_per_decode": busy / decodes if decodes else 0.0,
                "spec_decode_num_draft_tokens_total": self.draft_tokens,
                "spec_decode_num_accepted_tokens_total": self.draft_accepted,
                "prompt_tokens_seconds": self.prompt_tokens / self.prompt_s if self.prompt_s > 0 else 0.0,
                "predicted_tokens_seconds": self.predicted_tokens / self.predicted_s
                if self.predicted_s > 0
                else 0.0,
                "requests_processing": processing,
                "requests_deferred": deferred,
            }

    def prometheus(self, *, processing: int, deferred: int) -> str:
        """The Prometheus text exposition (format 0.0.4) of :meth:`values`."""
        values = self.values(processing=processing, deferred=deferred)
        out: list[str] = []
        for name, kind, text in _LINES:
            full = f"llamacpp:{name}"
            value = values[name]
            shown = str(value) if isinstance(value, int) else f"{value:.6g}"
            out += [f"# HELP {full} {text}", f"# TYPE {full} {kind}", f"{full} {shown}"]
        return "\n".join(out) + "\n"


async def metrics(request: Request):
    """``GET /metrics``: the counters in Prometheus's text format."""
    from starlette.responses import Response

    state: ServerState = request.app.state.callisto
    host = state.host
    processing = host.slots_busy + (1 if host.running_owner is not None else 0)
    body = state.metrics.prometheus(processing=processing, deferred=host.pending)
    return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")


async def slots(request: Request):
    """``GET /slots``: the slots of the model the request names (see the module docstring)."""
    from starlette.concurrency import run_in_threadpool

    from app.server._errors import ApiError
    from app.server._json import json_response

    state: ServerState = request.app.state.callisto
    name = request.query_params.get("model")
    fail = _flag(request.query_params.get("fail_on_no_slot"))

    def read() -> list[dict[str, Any]]:
        entry = state.catalog.resolve(name, state.loaded_entry())
        return slot_states(state, entry)

    states = await run_in_threadpool(read)
    if fail and all(s["is_processing"] for s in states):
        raise ApiError(503, "no slot available", code="unavailable_error")
    return json_response(states)


def _flag(value: str | None) -> bool:
    """A query parameter's truth: absent, ``0``, ``false``, ``no`` or empty is False; else True."""
    return value is not None and value.strip().lower() not in ("", "0", "false", "no")


def slot_states(state: ServerState, entry: Any) -> list[dict[str, Any]]:
    """``entry``'s slots: from its engine process's scheduler where it has slots; a one-slot
    model's from the engine's job; a model not loaded, idle (what it would be loaded with)."""
    host = state.host
    model = host.model(entry.path)
    card = state.slot_card(entry)
    settings = state.load_settings  # (slots draft by n-gram lookup only: no draft model)
    drafts = bool(settings.ngram_draft or (settings.draft_model and card["parallel"] == 1))
    if model is not None:
        read = getattr(model.backend, "slot_states", None)
        states = read() if read is not None else None
        if states is not None:
            return list(states)
        drafts = bool(getattr(model.backend, "drafts", False))
    busy = model is not None and host.running_owner is not None and host.current == entry.path
    return [{"id": 0, "n_ctx": card["n_ctx"], "speculative": drafts, "is_processing": busy}] + [
        {"id": i, "n_ctx": card["n_ctx"], "speculative": drafts, "is_processing": False}
        for i in range(1, card["parallel"])
    ]
