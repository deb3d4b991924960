"""Where the check's scenarios run: the loaded model in process, or an OpenAI-compatible endpoint.

:class:`InProcessTarget` drives the model through :class:`app.engine.chat.ChatSession`, the chat
loop the window uses, with the scenario's tools in a registry and a dispatcher that runs nothing:
it hands back the results the scenario supplies and ends the turn after the last expected round.

:class:`EndpointTarget` speaks ``POST {base}/chat/completions`` (Callisto's own server,
llama-server, Ollama, LM Studio, vLLM...) over ``httpx``; streaming scenarios are sent both streamed
(the reply scored) and not streamed (the reference the reassembled deltas must equal).

Both are greedy by default (temperature 0, a fixed seed) and return, per scenario, one
:class:`~app.check.scorer.Observation` per turn and a transcript (requests and responses in full,
credentials redacted).
"""

from __future__ import annotations

import hashlib
import inspect
import json
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
    "EndpointTarget",
    "InProcessTarget",
    "ScenarioRun",
    "Target",
    "TargetError",
    "file_identity",
    "redact_headers",
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
            out[k] = _scrub(v, secrets)
    return out


def redact_url(url: str) -> str:
    parts = urlsplit(url)
    query = [(k, "[redacted]" if _SECRET_QUERY.search(k) else v) for k, v in parse_qsl(parts.query, True)]
    netloc = parts.netloc
    if "@" in netloc:  # user:password@host
        netloc = "[redacted]@" + netloc.split("@", 1)[1]
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query), parts.fragment))


def _scrub(text: str, secrets: tuple[str, ...]) -> str:
    for s in secrets:
        if s:
            text = text.replace(s, "[redacted]")
    return text


def file_identity(path: str | Path) -> dict[str, Any]:
    """File name, size, sha256, quantisation, template hash and detected format of a GGUF."""
    from app.engine.detection import detect_tool_format
    from app.engine.models.metadata import read_metadata

    p = Path(path)
    h = hashlib.sha256()
    with p.open("rb") as fh:
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
        return kwargs, notes

    def stop(self) -> None:
        if self._current is not None:
            self._current.set()

    def _new_session(
        self, scenario: Scenario, registry: Any, dispatcher: Any, history: list[Any], kwargs: dict[str, Any]
    ) -> Any:
        """The chat session one scenario runs in (a remote target gives a remote one)."""
        from app.engine.chat import ChatSession

        return ChatSession(
            self.model,
            tool_format=self.tool_format,
            registry=registry,
            dispatcher=dispatcher,
            system_prompt=scenario.system,
            sampling={"temperature": self.temperature, "seed": self.seed},
            max_rounds=len(scenario.turns) + 1,
            max_tokens=self.max_tokens,
            messages=history,
            grammar=self.grammar,
            **kwargs,
        )

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
                    seg["calls"].append((ev.name, ev.arguments))
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


# -- OpenAI-compatible endpoint ------------------------------------------------------------------------


def _normalise_base(url: str) -> str:
    url = url.rstrip("/")
    if url.endswith("/chat/completions"):
        url = url[: -len("/chat/completions")]
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an http(s) endpoint URL: {url!r}")
    if parts.path in ("", "/"):
        url += "/v1"
    return url


def _openai_messages(scenario: Scenario) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if scenario.system:
        out.append({"role": "system", "content": scenario.system})
    for m in scenario.history:
        d: dict[str, Any] = {"role": m["role"], "content": m.get("content", "")}
        if m.get("tool_calls"):
            d["tool_calls"] = [
                {
                    "id": c.get("id") or f"call_{i}",
                    "type": "function",
                    "function": {
                        "name": c["name"],
                        "arguments": json.dumps(c.get("arguments", {}), ensure_ascii=False),
                    },
                }
                for i, c in enumerate(m["tool_calls"])
            ]
            if not d["content"]:
                d["content"] = None
        if m.get("reasoning"):
            d["reasoning_content"] = m["reasoning"]
        if m["role"] == "tool":
            d["tool_call_id"] = m.get("tool_call_id", "")
            if m.get("name"):
                d["name"] = m["name"]
        out.append(d)
    out.append({"role": "user", "content": scenario.prompt})
    return out


def _parse_arguments(text: Any) -> dict[str, Any] | str:
    if isinstance(text, dict):
        return text
    if text is None or (isinstance(text, str) and not text.strip()):
        return {}
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return str(text)
    return value if isinstance(value, dict) else str(text)


def _observation_from_message(msg: dict[str, Any], finish: str | None) -> Observation:
    calls = []
    for i, c in enumerate(msg.get("tool_calls") or []):
        fn = c.get("function") or {}
        calls.append(
            ObservedCall(
                name=str(fn.get("name") or ""),
                arguments=_parse_arguments(fn.get("arguments")),
                id=str(c.get("id") or f"call_{i}"),
            )
        )
    reasoning = msg.get("reasoning_content") or msg.get("reasoning") or ""
    return Observation(
        content=msg.get("content") or "",
        reasoning=reasoning if isinstance(reasoning, str) else "",
        calls=calls,
        finish_reason=finish,
    )


class EndpointTarget(Target):
    """Any OpenAI-compatible ``/chat/completions`` endpoint."""

    kind = "endpoint"

    def __init__(
        self,
        endpoint: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = 0.0,
        seed: int = DEFAULT_SEED,
        model_file: str | Path | None = None,
        stack_name: str | None = None,
    ):
        import httpx

        self.base = _normalise_base(endpoint)
        self.model = model
        self.api_key = api_key
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.model_file = model_file
        self.stack_name = stack_name
        headers = {"Content-Type": "application/json", "User-Agent": "callisto-check"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._headers = headers
        self._client = httpx.Client(timeout=timeout_s, headers=headers)
        self._cancel: threading.Event | None = None

    def close(self) -> None:
        self._client.close()

    def _secrets(self) -> tuple[str, ...]:
        return (self.api_key,) if self.api_key else ()

    def identity(self) -> dict[str, Any]:
        model: dict[str, Any] = {"name": self.model}
        if self.model_file:
            try:
                model.update(file_identity(self.model_file))
            except (OSError, ValueError) as exc:
                model["file_error"] = str(exc)
        stack: dict[str, Any] = {
            "name": self.stack_name or "openai-compatible",
            "endpoint": redact_url(self.base),
            "version": None,
            "server_header": None,
            "decode": "unknown (the endpoint's own decoding)",
        }
        try:
            r = self._client.get(f"{self.base}/models")
            stack["server_header"] = r.headers.get("server")
            if r.status_code == 200:
                data = r.json()
                ids = [m.get("id") for m in data.get("data", []) if isinstance(m, dict)]
                stack["models_listed"] = ids[:20]
                entry = next(
                    (m for m in data.get("data", []) if isinstance(m, dict) and m.get("id") == self.model),
                    None,
                )
                if entry:
                    stack["owned_by"] = entry.get("owned_by")
                    for key in ("version", "callisto_version", "server_version"):
                        if entry.get(key):
                            stack["version"] = entry[key]
        except Exception as exc:  # noqa: BLE001 - identity is best effort; scenarios report errors
            stack["models_error"] = str(exc)
        if stack["version"] is None:
            stack["version"] = self._server_version()
        return {"model": model, "stack": stack}

    def _server_version(self) -> str | None:
        """What the server says its version is, where it says it: llama-server's ``/props``
        (``build_info``), Ollama's ``/api/version``. None when neither answers."""
        root = self.base[: -len("/v1")] if self.base.endswith("/v1") else self.base
        for path, key in (("/props", "build_info"), ("/api/version", "version")):
            try:
                r = self._client.get(root + path, timeout=5)
                if r.status_code == 200:
                    value = r.json().get(key)
                    if isinstance(value, str) and value:
                        return value
            except Exception:  # noqa: BLE001 - a server without the endpoint
                continue
        return None

    def _body(self, scenario: Scenario, messages: list[dict[str, Any]], stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "tools": list(scenario.tools),
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "stream": stream,
        }
        if scenario.tool_choice != "auto":
            body["tool_choice"] = scenario.openai_tool_choice()
        return body

    def _exchange(
        self, body: dict[str, Any], log: list[dict[str, Any]]
    ) -> tuple[Observation, dict[str, Any]]:
        """One request; returns the observation and the assistant message to continue with."""
        import httpx

        url = f"{self.base}/chat/completions"
        entry: dict[str, Any] = {
            "request": {
                "method": "POST",
                "url": redact_url(url),
                "headers": redact_headers(self._headers, self._secrets()),
                "body": body,
            }
        }
        log.append(entry)
        t0 = time.monotonic()
        try:
            if body.get("stream"):
                obs, msg, resp = self._streamed(url, body)
            else:
                r = self._client.post(url, json=body)
                resp = {
                    "status": r.status_code,
                    "headers": redact_headers(dict(r.headers), self._secrets()),
                    "body": _scrub(r.text, self._secrets()),
                }
                if r.status_code != 200:
                    raise _HTTPFailure(f"HTTP {r.status_code}: {r.text[:300]}", resp)
                data = r.json()
                choice = (data.get("choices") or [{}])[0]
                msg = choice.get("message") or {}
                obs = _observation_from_message(msg, choice.get("finish_reason"))
        except _HTTPFailure as exc:
            entry["response"] = exc.resp
            entry["elapsed_s"] = round(time.monotonic() - t0, 4)
            return Observation(error=str(exc)), {}
        except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
            entry["response"] = {"error": f"{type(exc).__name__}: {exc}"}
            entry["elapsed_s"] = round(time.monotonic() - t0, 4)
            return Observation(error=f"{type(exc).__name__}: {exc}"), {}
        entry["response"] = resp
        entry["elapsed_s"] = round(time.monotonic() - t0, 4)
        return obs, msg

    def _streamed(self, url: str, body: dict[str, Any]) -> tuple[Observation, dict[str, Any], dict[str, Any]]:
        lines: list[str] = []
        content: list[str] = []
        reasoning: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        finish = None
        problems: list[str] = []
        with self._client.stream("POST", url, json=body) as r:
            if r.status_code != 200:
                text = r.read().decode("utf-8", "replace")
                raise _HTTPFailure(
                    f"HTTP {r.status_code}: {text[:300]}",
                    {"status": r.status_code, "body": _scrub(text, self._secrets())},
                )
            headers = redact_headers(dict(r.headers), self._secrets())
            for line in r.iter_lines():
                if self._cancel is not None and self._cancel.is_set():
                    break
                lines.append(_scrub(line, self._secrets()))
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    break
                chunk = json.loads(payload)
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta") or {}
                    if delta.get("content"):
                        content.append(delta["content"])
                    r_text = delta.get("reasoning_content") or delta.get("reasoning")
                    if isinstance(r_text, str):
                        reasoning.append(r_text)
                    for tc in delta.get("tool_calls") or []:
                        idx = tc.get("index")
                        if not isinstance(idx, int):
                            problems.append("a tool-call delta without an index")
                            idx = len(calls)
                        slot = calls.setdefault(idx, {"id": "", "name": "", "arguments": ""})
                        if tc.get("id"):
                            slot["id"] = tc["id"]
                        fn = tc.get("function") or {}
                        if fn.get("name"):
                            slot["name"] += fn["name"]
                        if fn.get("arguments"):
                            args = fn["arguments"]
                            slot["arguments"] += args if isinstance(args, str) else json.dumps(args)
                    if choice.get("finish_reason"):
                        finish = choice["finish_reason"]
        msg = {
            "role": "assistant",
            "content": "".join(content) or None,
            "tool_calls": [
                {
                    "id": c["id"] or f"call_{i}",
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for i, c in sorted(calls.items())
            ],
        }
        if reasoning:
            msg["reasoning_content"] = "".join(reasoning)
        obs = _observation_from_message(msg, finish)
        if problems:
            obs.stream_problem = problems[0]
        return obs, msg, {"status": 200, "headers": headers, "sse": lines}

    def run(self, scenario: Scenario, *, cancel: threading.Event | None = None) -> ScenarioRun:
        start = time.monotonic()
        self._cancel = cancel
        log: list[dict[str, Any]] = []
        messages = _openai_messages(scenario)
        observations: list[Observation] = []
        for k, turn in enumerate(scenario.turns):
            if cancel is not None and cancel.is_set():
                break
            obs, msg = self._exchange(self._body(scenario, messages, scenario.stream), log)
            if scenario.stream and obs.error is None:
                ref, _ = self._exchange(self._body(scenario, messages, False), log)
                if ref.error is None and obs.stream_problem is None:
                    obs.stream_problem = _stream_difference(obs, ref)
            observations.append(obs)
            if obs.error is not None or k == len(scenario.turns) - 1 or not obs.calls:
                break
            assistant = {
                "role": "assistant",
                "content": msg.get("content") or None,
                "tool_calls": [
                    {
                        "id": c.id or f"call_{k}_{i}",
                        "type": "function",
                        "function": {
                            "name": c.name,
                            "arguments": c.arguments
                            if isinstance(c.arguments, str)
                            else json.dumps(c.arguments, ensure_ascii=False),
                        },
                    }
                    for i, c in enumerate(obs.calls)
                ],
            }
            messages = messages + [assistant]
            for i, c in enumerate(obs.calls):
                spec = next((r for r in turn.results if r.name == c.name), None)
                content = spec.content if spec is not None else f"Error: no result for {c.name}"
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": assistant["tool_calls"][i]["id"],
                        "name": c.name,
                        "content": content,
                    }
                )
        transcript = {"target": "endpoint", "scenario": scenario.id, "exchanges": log}
        return ScenarioRun(
            observations or [Observation(error="not run (stopped)")], transcript, time.monotonic() - start
        )


class _HTTPFailure(Exception):
    def __init__(self, message: str, resp: dict[str, Any]):
        super().__init__(message)
        self.resp = resp


def _stream_difference(streamed: Observation, reference: Observation) -> str | None:
    def calls(o: Observation) -> list[tuple[str, str]]:
        return [
            (
                c.name,
                json.dumps(c.arguments, sort_keys=True, ensure_ascii=False)
                if isinstance(c.arguments, dict)
                else c.arguments,
            )
            for c in o.calls
        ]

    # Only the calls count: free text may drift between two greedy requests on a stack that reuses its
    # KV cache (different batch shapes, different rounding), and a text difference is no streaming bug.
    if calls(streamed) != calls(reference):
        return (
            f"the streamed calls {calls(streamed)!r:.200} differ from the same request without streaming "
            f"{calls(reference)!r:.200}"
        )
    return None


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
