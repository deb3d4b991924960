"""Where the check's scenarios run: the loaded model in process (here), or a remote engine
(:class:`app.check.remote_target.RemoteTarget`, on Callisto's remote client).

:class:`InProcessTarget` drives the model through :class:`app.engine.chat.ChatSession`, the chat
loop the window uses, with the scenario's tools in a registry and a dispatcher that runs nothing:
it hands back the results the scenario supplies and ends the turn after the last expected round.
The remote target runs the same loop in a :class:`app.engine.remote.RemoteChatSession`.

Both are greedy by default (temperature 0, a fixed seed) and return, per scenario, one
:class:`~app.check.scorer.Observation` per turn and a transcript (requests and responses in full,
credentials redacted).
"""

from __future__ import annotations

import hashlib
import inspect
import platform
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from app.check.corpus import Scenario
from app.check.scorer import Observation, ObservedCall

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "InProcessTarget",
    "ScenarioRun",
    "Target",
    "TargetError",
    "file_identity",
    "redact_headers",
    "redact_text",
    "redact_url",
]

DEFAULT_MAX_TOKENS = 256
DEFAULT_SEED = 0
_SECRET_HEADERS = {"authorization", "proxy-authorization", "api-key", "x-api-key", "cookie", "set-cookie"}
_SECRET_QUERY = re.compile(r"(key|token|secret|password|auth|sig)", re.IGNORECASE)


class TargetError(RuntimeError):
    """The target cannot run at all (the endpoint is unreachable before the first scenario...)."""


@dataclass
class ScenarioRun:
    observations: list[Observation]
    transcript: dict[str, Any]
    duration_s: float = 0.0
    notes: list[str] = field(default_factory=list)


class Target:
    """What every target provides."""

    kind = "target"

    def identity(self) -> dict[str, Any]:  # pragma: no cover - interface
        """``{"model": {...}, "stack": {...}}`` for the result file."""
        raise NotImplementedError

    def run(
        self, scenario: Scenario, *, cancel: threading.Event | None = None
    ) -> ScenarioRun:  # pragma: no cover
        raise NotImplementedError

    def close(self) -> None:
        pass


def redact_headers(headers: dict[str, str], secrets: tuple[str, ...] = ()) -> dict[str, str]:
    out = {}
    for k, v in headers.items():
        if k.lower() in _SECRET_HEADERS:
            out[k] = "[redacted]"
        else:
            out[k] = redact_text(v, secrets)
    return out


def redact_url(url: str) -> str:
    parts = urlsplit(url)
    query = [(k, "[redacted]" if _SECRET_QUERY.search(k) else v) for k, v in parse_qsl(parts.query, True)]
    netloc = parts.netloc
    if "@" in netloc:  # user:password@host
        netloc = "[redacted]@" + netloc.split("@", 1)[1]
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query), parts.fragment))


def redact_text(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with each secret (an API key) replaced by ``[redacted]``."""
    for s in secrets:
        if s:
            text = text.replace(s, "[redacted]")
    return text


def file_identity(path: str | Path) -> dict[str, Any]:
    """File name, size, sha256, quantisation, template hash and detected format of a GGUF."""
    from app.engine.detection import detect_tool_format
    from app.engine.models.metadata import read_metadata
    from app.files import open_regular_file

    p = Path(path)
    h = hashlib.sha256()
    with open_regular_file(p) as fh:  # a FIFO or a device is refused, never read for ever
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    meta = read_metadata(p)
    source = meta.tool_use_template or meta.chat_template
    return {
        "file_name": p.name,
        "file_size": p.stat().st_size,
        "sha256": h.hexdigest(),
        "name": meta.name,
        "architecture": meta.architecture,
        "quantization": meta.quantization,
        "template_sha256": hashlib.sha256(source.encode("utf-8")).hexdigest() if source else None,
        "detected_format": detect_tool_format(
            meta.chat_template, meta.tool_use_template, bos_token=meta.bos_token, eos_token=meta.eos_token
        ),
    }


# -- in process ------------------------------------------------------------------------------------


class _ScenarioDispatcher:
    """Runs no tool: answers each call with the result the scenario supplies for the current round and
    ends the turn (via ``stop``) once the scenario's last round has been answered."""

    def __init__(self, scenario: Scenario, session_ref: list[Any], stop: threading.Event, base: int):
        self.scenario = scenario
        self.session_ref = session_ref
        self.stop = stop
        self.base = base  # messages before this turn's user message
        self.prompts: list[str] = []

    def _round(self) -> int:
        msgs = self.session_ref[0].messages[self.base :]
        return sum(1 for m in msgs if m.role == "assistant") - 1

    def dispatch(self, call: Any) -> Any:
        from app.calls import ToolResult

        session = self.session_ref[0]
        if session.last_prompt is not None and (
            not self.prompts or self.prompts[-1] != session.last_prompt.text
        ):
            self.prompts.append(session.last_prompt.text)
        k = self._round()
        turns = self.scenario.turns
        if k >= len(turns) - 1:
            self.stop.set()  # the scenario's last reply: nothing more to run
            return ToolResult(call_id=call.id, name=call.name, content="(not run: the check ends here)")
        spec = next((r for r in turns[k].results if r.name == call.name), None)
        if spec is None:
            self.stop.set()
            return ToolResult(
                call_id=call.id, name=call.name, error=f"this scenario supplies no result for {call.name}"
            )
        return ToolResult(call_id=call.id, name=call.name, content=spec.content)


class InProcessTarget(Target):
    """The loaded model through Callisto's chat loop (``ChatSession``), tools never run."""

    kind = "in_process"

    def __init__(
        self,
        model: Any,
        *,
        tool_format: str = "auto",
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = 0.0,
        seed: int = DEFAULT_SEED,
        identity: dict[str, Any] | None = None,
        grammar: str | None = None,
    ):
        """``grammar``: a GBNF grammar for every reply instead of the chat loop's own constraints
        (the loop holds calls to their schemas by default; a grammar given here replaces that)."""
        self.model = model
        self.grammar = grammar
        self.tool_format = tool_format
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self._identity = identity
        self._current: threading.Event | None = None

    def identity(self) -> dict[str, Any]:
        import app
        from app.engine.chat import detect_model_format, resolve_tool_format
        from app.engine.render import choose_template

        if self._identity is None:
            try:
                self._identity = file_identity(self.model.path)
            except (OSError, ValueError) as exc:
                self._identity = {"file_name": Path(self.model.path).name, "error": str(exc)}
        detected = detect_model_format(self.model)
        effective, _ = resolve_tool_format(self.tool_format, detected)
        source = choose_template(self.model, tools_on=True)[0]
        model = dict(
            self._identity,
            detected_format=detected,
            tool_format=effective,
            tool_format_setting=self.tool_format,
            template_sha256=hashlib.sha256(source.encode("utf-8")).hexdigest(),
            template_is_fallback=bool(self.model.template_is_fallback),
        )
        try:
            from importlib.metadata import version

            llama_version = version("llama-cpp-python")
        except Exception:  # noqa: BLE001
            llama_version = None
        stack = {
            "name": "callisto-in-process",
            "version": getattr(app, "__version__", None),
            "engine": "llama-cpp-python",
            "engine_version": llama_version,
            "decode": "unconstrained, parsed by Callisto's family parser",
        }
        return {"model": model, "stack": stack}

    def _session_kwargs(self, scenario: Scenario) -> tuple[dict[str, Any], list[str]]:
        from app.engine.chat import ChatSession

        params = inspect.signature(ChatSession).parameters
        kwargs: dict[str, Any] = {}
        notes: list[str] = []
        if "tool_choice" in params:
            kwargs["tool_choice"] = scenario.openai_tool_choice()
        elif scenario.tool_choice != "auto":
            notes.append("this build's chat loop has no tool_choice: the scenario ran with auto")
        if scenario.thinking is not None:
            if "thinking" in inspect.signature(self._session_type()).parameters:
                kwargs["thinking"] = scenario.thinking
            else:
                notes.append(
                    f"this session has no thinking control: the scenario ran with the default, not {scenario.thinking}"
                )
        return kwargs, notes

    def _session_type(self) -> Any:
        """The class of the sessions this target runs scenarios in."""
        from app.engine.chat import ChatSession

        return ChatSession

    def stop(self) -> None:
        if self._current is not None:
            self._current.set()

    def _new_session(
        self, scenario: Scenario, registry: Any, dispatcher: Any, history: list[Any], kwargs: dict[str, Any]
    ) -> Any:
        """The chat session one scenario runs in (a remote target gives a remote one)."""
        from app.engine.chat import ChatSession

        options = self._session_options(scenario, registry, dispatcher, history)
        return ChatSession(self.model, grammar=self.grammar, **options, **kwargs)

    def _session_options(
        self, scenario: Scenario, registry: Any, dispatcher: Any, history: list[Any]
    ) -> dict[str, Any]:
        """What every target's chat session is given for one scenario: its tools (never run), its
        system prompt and history, the target's sampling and limits."""
        return {
            "tool_format": self.tool_format,
            "registry": registry,
            "dispatcher": dispatcher,
            "system_prompt": scenario.system,
            "sampling": {"temperature": self.temperature, "seed": self.seed},
            "max_rounds": len(scenario.turns) + 1,
            "max_tokens": self.max_tokens,
            "messages": history,
        }

    def run(self, scenario: Scenario, *, cancel: threading.Event | None = None) -> ScenarioRun:
        from app.engine.events import DoneEvent, event_to_dict
        from app.engine.messages import Message
        from app.tools.registry import ToolRegistry
        from app.tools.types import Tool

        start = time.monotonic()
        registry = ToolRegistry()
        for t in scenario.tools:
            fn = t["function"]
            registry.register(
                Tool(
                    name=fn["name"],
                    description=fn.get("description", ""),
                    parameters=fn.get("parameters") or {"type": "object", "properties": {}},
                )
            )
        history = [Message.from_dict(m) for m in scenario.history]
        stop = threading.Event()
        self._current = stop
        if cancel is not None and cancel.is_set():
            stop.set()
        ref: list[Any] = [None]
        dispatcher = _ScenarioDispatcher(scenario, ref, stop, base=len(history))
        kwargs, notes = self._session_kwargs(scenario)
        transcript: dict[str, Any] = {"target": self.kind, "scenario": scenario.id, "notes": notes}
        try:
            session = self._new_session(scenario, registry, dispatcher, history, kwargs)
        except (ValueError, TypeError) as exc:
            transcript["error"] = str(exc)
            return ScenarioRun([Observation(error=str(exc))], transcript, time.monotonic() - start, notes)
        ref[0] = session
        transcript["request"] = {
            "tool_format": self.tool_format,
            "effective_format": session.effective_format,
            "sampling": {"temperature": self.temperature, "seed": self.seed},
            "max_tokens": self.max_tokens,
            "tool_choice": scenario.tool_choice,
            "thinking": kwargs.get("thinking"),
            "system": scenario.system,
            "messages": [m.to_dict() for m in history] + [{"role": "user", "content": scenario.prompt}],
            "tools": list(scenario.tools),
        }
        events: list[dict[str, Any]] = []
        # what the stream showed, per reply: text and reasoning arrive before their reply is stored,
        # a call's start event after it (so the count of stored replies says which reply an event is of)
        segments: dict[int, dict[str, Any]] = {}
        base = len(history) + 1
        done = None
        try:
            for ev in session.send(scenario.prompt, cancel=stop):
                events.append(event_to_dict(ev))
                kind = type(ev).__name__
                stored = sum(1 for m in session.messages[base:] if m.role == "assistant")
                if kind in ("TextDelta", "TextEvent", "ReasoningDelta", "ReasoningEvent"):
                    seg = segments.setdefault(stored, {"text": "", "reasoning": "", "calls": []})
                    seg["text" if kind.startswith("Text") else "reasoning"] += ev.text
                elif kind == "ToolCallStartedEvent":
                    seg = segments.setdefault(stored - 1, {"text": "", "reasoning": "", "calls": []})
                    seg["calls"].append((ev.call.name, ev.call.arguments))
                elif isinstance(ev, DoneEvent):
                    done = ev
        except Exception as exc:  # noqa: BLE001 - a failure of the chat loop is this scenario's error
            transcript["events"] = events
            transcript["error"] = f"{type(exc).__name__}: {exc}"
            return ScenarioRun(
                [Observation(error=transcript["error"])], transcript, time.monotonic() - start, notes
            )
        finally:
            self._current = None
        if session.last_prompt is not None and (
            not dispatcher.prompts or dispatcher.prompts[-1] != session.last_prompt.text
        ):
            dispatcher.prompts.append(session.last_prompt.text)
        replies = [m for m in session.messages[len(history) + 1 :] if m.role == "assistant"]
        observations: list[Observation] = []
        for i, m in enumerate(replies):
            calls = [
                ObservedCall(
                    name=c.name,
                    arguments=c.arguments if isinstance(c.arguments, dict | str) else {},
                    id=c.id,
                    raw=c.raw,
                )
                for c in m.tool_calls
            ]
            obs = Observation(content=m.content, reasoning=m.reasoning, calls=calls, finish_reason="stop")
            if scenario.stream:
                seg = segments.get(i, {"text": "", "reasoning": "", "calls": []})
                streamed_calls = [(n, a) for n, a in seg["calls"]]
                final_calls = [(c.name, c.arguments) for c in calls]
                if seg["text"] != m.content:
                    obs.stream_problem = (
                        f"the streamed text ({seg['text'][:80]!r}) differs from the reply's text "
                        f"({m.content[:80]!r})"
                    )
                elif seg["reasoning"] != m.reasoning:
                    obs.stream_problem = "the streamed reasoning differs from the reply's reasoning"
                elif streamed_calls and streamed_calls != final_calls:
                    obs.stream_problem = "the streamed calls differ from the reply's calls"
            observations.append(obs)
        if done is not None and done.finish_reason == "error":
            if observations:
                observations[-1].error = done.error
            else:
                observations.append(Observation(error=done.error or "the chat loop failed"))
        elif done is not None and observations:
            observations[-1].finish_reason = done.finish_reason
        if not observations:
            observations.append(Observation(error="the chat loop produced no reply"))
        transcript["prompts"] = dispatcher.prompts
        transcript["events"] = events
        transcript["replies"] = [m.to_dict() for m in replies]
        return ScenarioRun(observations, transcript, time.monotonic() - start, notes)


def machine_info() -> dict[str, Any]:
    import os

    cpu = platform.processor() or platform.machine()
    try:  # Linux names the CPU model only in /proc/cpuinfo
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), cpu)
    except OSError:
        pass
    info: dict[str, Any] = {
        "os": platform.platform(),
        "python": platform.python_version(),
        "cpu": cpu,
        "cores": os.cpu_count(),
    }
    try:
        import psutil

        info["ram_gib"] = round(psutil.virtual_memory().total / 2**30, 1)
    except Exception:  # noqa: BLE001
        pass
    return info


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:8]
