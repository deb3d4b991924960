"""The check on a remote engine through Callisto's remote client (:mod:`app.engine.remote`).

:class:`RemoteTarget` runs each scenario in a :class:`~app.engine.remote.RemoteChatSession`, the
session the window and ``chat --endpoint`` use, with either tool mode: ``api`` (the engine's own
function calling) or ``callisto`` (the engine completes raw text; Callisto renders the template and
parses). Run with both, one model on one server gives two rows to compare: the engine's parsing
against Callisto's. The scenario loop is the in-process target's (the same dispatcher that runs no
tool), so the rows differ only in who read the calls.

The remote client always streams. For a streaming scenario read by the engine's parsing, each reply
is asked for once more without streaming, on the provider's client with the same request, and the
streamed calls must equal that reference (else ``stream_mismatch``): the check of an engine's
streamed tool-call deltas. A reference that fails is written in the transcript and scores nothing.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from app.check.corpus import Scenario
from app.check.scorer import Observation
from app.check.targets import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_SEED,
    InProcessTarget,
    ScenarioRun,
    file_identity,
    redact_headers,
    redact_text,
    redact_url,
)
from app.terminal import terminal_text

__all__ = ["PARSER_WORDS", "RemoteTarget", "run_remote_check", "side_by_side"]

PARSER_WORDS = {"api": "engine's parsing (API tools)", "callisto": "Callisto parsing"}


class RemoteTarget(InProcessTarget):
    """``model`` served at ``provider`` (an :class:`app.engine.remote.Provider`), read by ``parser``."""

    kind = "remote"

    def __init__(
        self,
        provider: Any,
        model: str,
        *,
        parser: str = "api",
        template: Any = None,
        model_file: str | None = None,
        stack_name: str | None = None,
        tool_format: str = "auto",
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = 0.0,
        seed: int = DEFAULT_SEED,
    ):
        if parser not in PARSER_WORDS:
            raise ValueError(f"unknown parser {parser!r} for a remote check (choices: api, callisto)")
        if parser == "callisto" and provider.kind == "anthropic":
            raise ValueError(
                "Callisto parsing needs an endpoint that completes raw text; the Anthropic API does not "
                "(use --kind openai or ollama, or --parser api)"
            )
        # Callisto parsing: the family to read (auto: from the template; a model whose template shows
        # no tool format is then sent no tools, as in process)
        super().__init__(
            None, tool_format=tool_format, max_tokens=max_tokens, temperature=temperature, seed=seed
        )
        self.provider = provider
        self.model_name = model
        self.parser = parser
        template = template if template is not None else (model_file if parser == "callisto" else None)
        if isinstance(template, str | Path):  # read once, not once a scenario
            from app.engine.remote import load_template

            template = load_template(template)
        self.template = template
        self.model_file = model_file
        self.stack_name = stack_name
        self._resolved: dict[str, Any] = {}
        self._session: Any = None  # the scenario's session while it runs

    def identity(self) -> dict[str, Any]:
        model: dict[str, Any] = {"name": self.model_name}
        if self.parser == "callisto":
            model["tool_format_setting"] = self.tool_format
        if self.model_file:
            try:
                model.update(file_identity(self.model_file))
            except (OSError, ValueError) as exc:
                model["file_error"] = str(exc)
        base = self.stack_name or {"openai": "openai-compatible"}.get(self.provider.kind, self.provider.kind)
        stack = {
            "name": f"{base} · {PARSER_WORDS[self.parser]}",
            "endpoint": redact_url(self.provider.base),
            "api": self.provider.kind,
            "parser": self.parser,
            "decode": (
                "raw text from the engine, parsed by Callisto's family parser"
                if self.parser == "callisto"
                else "the engine's own tool-call parsing"
            ),
        }
        return {"model": model, "stack": stack}

    def close(self) -> None:
        pass

    def _secrets(self) -> tuple[str, ...]:
        key = self.provider.api_key
        return (key,) if key else ()

    def run(self, scenario: Scenario, *, cancel: threading.Event | None = None) -> ScenarioRun:
        self._session = None
        result = super().run(scenario, cancel=cancel)
        session, self._session = self._session, None
        request = result.transcript.get("request")
        if session is not None and isinstance(request, dict):
            # where the replies were asked for, and with which headers (credentials redacted)
            request["url"] = redact_url(self.provider.base + _request_path(session))
            request["headers"] = redact_headers(self.provider.headers(), self._secrets())
            request["parser"] = session.parser
        if scenario.stream and session is not None and session.parser == "api":
            self._check_stream(scenario, session, result, cancel)
        return result

    def _check_stream(
        self, scenario: Scenario, session: Any, result: ScenarioRun, cancel: threading.Event | None
    ) -> None:
        """Each streamed reply against the same request without streaming (see the module's doc)."""
        from app.engine.messages import Message

        system = [Message(role="system", content=scenario.system)] if scenario.system else []
        at = [
            j for j, m in enumerate(session.messages) if j > len(scenario.history) and m.role == "assistant"
        ]
        log: list[dict[str, Any]] = []
        for i, (obs, j) in enumerate(zip(result.observations, at, strict=False)):
            if cancel is not None and cancel.is_set():
                break
            if obs.error is not None or obs.stream_problem is not None:
                continue
            choice = scenario.openai_tool_choice() if i == 0 else "auto"
            calls, entry = self._reference(session, system + session.messages[:j], choice)
            log.append(entry)
            if calls is not None:
                obs.stream_problem = _stream_difference(obs, calls)
        result.transcript["reference"] = log

    def _reference(
        self, session: Any, history: list[Any], tool_choice: Any
    ) -> tuple[list[tuple[str, str]] | None, dict[str, Any]]:
        """One request without streaming on the provider's client: its calls (None when it failed)
        and its transcript entry."""
        import httpx

        from app.engine.remote import RemoteError, _wire
        from app.engine.remote._client import MAX_REPLY_BYTES, read_body, status_error, transport_error

        kind = self.provider.kind
        path, body = _wire.chat_request(
            kind,
            self.model_name,
            history,
            tools=None if tool_choice == "none" else session.tools,
            tool_choice=tool_choice,
            max_tokens=self.max_tokens,
            sampling=session.sampling,
        )
        body["stream"] = False
        body.pop("stream_options", None)
        url = self.provider.base + path
        entry: dict[str, Any] = {"request": {"method": "POST", "url": redact_url(url), "body": body}}
        t0 = time.monotonic()
        try:
            with self.provider.client() as client:
                try:  # streamed, so that the answer is read bounded (bytes and time) like every other
                    resp = client.send(client.build_request("POST", url, json=body), stream=True)
                except httpx.HTTPError as exc:
                    raise transport_error(self.provider, exc) from exc
                entry["response"] = {"status": resp.status_code}
                read_body(self.provider, resp, MAX_REPLY_BYTES)
                entry["response"]["body"] = redact_text(resp.text, self._secrets())
                if resp.status_code >= 400:
                    raise status_error(self.provider, resp)
                calls = _reference_calls(kind, resp.json())
        except (
            RemoteError,
            ValueError,
            TypeError,
            AttributeError,
            KeyError,
            IndexError,
            RecursionError,
        ) as exc:
            entry["error"] = redact_text(str(exc), self._secrets())
            calls = None
        entry["elapsed_s"] = round(time.monotonic() - t0, 4)
        return calls, entry

    def _session_type(self) -> Any:
        from app.engine.remote import RemoteChatSession

        return RemoteChatSession

    def _new_session(
        self, scenario: Scenario, registry: Any, dispatcher: Any, history: list[Any], kwargs: dict[str, Any]
    ) -> Any:
        from app.engine.remote import RemoteChatSession

        options = self._session_options(scenario, registry, dispatcher, history)
        session = RemoteChatSession(
            self.provider, self.model_name, parser=self.parser, template=self.template, **options, **kwargs
        )
        self._session = session
        return session


def _request_path(session: Any) -> str:
    """The path the session's replies were asked from (its parser resolved, or as chosen)."""
    from app.engine.remote import _wire

    kind = session.provider.kind
    if (session.parser or session.parser_choice) != "callisto":
        return _wire.chat_request(
            kind, session.model, [], tools=None, tool_choice="auto", max_tokens=1, sampling={}
        )[0]
    t = session.template
    llama_server = bool(t is not None and t.extra.get("llama_server"))
    return _wire.raw_request(kind, session.model, "", max_tokens=1, sampling={}, llama_server=llama_server)[0]


def _canonical(arguments: Any) -> str:
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return arguments
        if not isinstance(value, dict):
            return arguments
        arguments = value
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False)


def _reference_calls(kind: str, data: Any) -> list[tuple[str, str]]:
    """(name, canonical arguments) of each call in a reply without streaming, in ``kind``'s API."""
    if kind == "anthropic":
        return [
            (str(b.get("name") or ""), _canonical(b.get("input") or {}))
            for b in data.get("content") or []
            if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
    msg = data.get("message") if kind == "ollama" else (data.get("choices") or [{}])[0].get("message")
    out = []
    for c in (msg or {}).get("tool_calls") or []:
        fn = c.get("function") or {}
        out.append((str(fn.get("name") or ""), _canonical(fn.get("arguments") or {})))
    return out


def _stream_difference(streamed: Observation, reference: list[tuple[str, str]]) -> str | None:
    # Only the calls count: free text may drift between two greedy requests on a stack that reuses its
    # KV cache (different batch shapes, different rounding), and a text difference is no streaming bug.
    calls = [(c.name, _canonical(c.arguments)) for c in streamed.calls]
    if calls == reference:
        return None
    return (
        f"the streamed calls {calls!r:.200} differ from the same request without streaming {reference!r:.200}"
    )


def side_by_side(results: list[dict[str, Any]]) -> str:
    """The rows' summaries as columns: one line per category, then ``all``."""
    heads = [r["stack"].get("name", "?") for r in results]
    cats: list[str] = []
    for r in results:
        cats += [c for c in r["summary"]["by_category"] if c not in cats]
    width = max([14, *(len(h) + 2 for h in heads)])

    def cell(c: dict[str, Any] | None) -> str:
        return f"{c['passed']}/{c['total']} {c['score']:.0%}" if c and c.get("total") else "–"

    lines = [" " * 14 + "".join(h.ljust(width) for h in heads)]
    for cat in cats:
        lines.append(
            f"  {cat:12}" + "".join(cell(r["summary"]["by_category"].get(cat)).ljust(width) for r in results)
        )
    lines.append(f"  {'all':12}" + "".join(cell(r["summary"]).ljust(width) for r in results))
    return "\n".join(line.rstrip() for line in lines)


def _out_path(out: str, parser: str, several: bool) -> str:
    if not several:
        return out
    p = Path(out)
    return str(p.with_name(f"{p.stem}-{parser}{p.suffix or '.json'}"))


def run_remote_check(args: Any, corpus: Any, scenarios: list[Scenario]) -> int:
    """``check --endpoint URL --model NAME [--parser api|callisto|both] [--kind K]``: the check through
    the remote client (without ``--parser``: API tools), once per parser; with ``both`` two result files (``OUT-api.json``, ``OUT-callisto.json``)
    and their summaries side by side. Exit status as ``check``'s."""
    import json
    import os

    from app.check.console import err, gguf_findings, progress_printer, run_interruptible, sampling_options
    from app.check.runner import write_result
    from app.engine.remote import Provider

    parsers = ["api", "callisto"] if args.parser == "both" else [args.parser]
    try:
        provider = Provider(
            args.endpoint,
            kind=args.kind,
            api_key=args.api_key or os.environ.get("CALLISTO_CHECK_API_KEY"),
            timeout_s=args.timeout,
        )
        targets = [
            RemoteTarget(
                provider,
                args.model,
                parser=p,
                model_file=args.model_file,
                stack_name=args.stack,
                tool_format=args.tool_format,
                **sampling_options(args),
            )
            for p in parsers
        ]
    except ValueError as exc:
        err(f"error: {exc}")
        return 2
    # the GGUF the engine serves: its template's known tool-calling breakages
    forensics = gguf_findings(args.model_file) if args.model_file else []
    results = []
    for target in targets:
        settings = {
            **sampling_options(args),
            "parser": target.parser,
            "kind": args.kind,
            "categories": args.category,
            "scenario_ids": args.scenario,
        }
        result = run_interruptible(
            target,
            scenarios,
            corpus,
            progress=progress_printer(args.json, target.parser),
            forensics=forensics,
            settings=settings,
        )
        if result is None:
            return 130
        if args.out:
            write_result(result, _out_path(args.out, target.parser, len(targets) > 1))
        else:
            result.pop("_transcripts", None)
        results.append(result)
    if args.json:
        for r in results:
            print(
                json.dumps(
                    {"type": "summary", "parser": r["stack"]["parser"], **r["summary"]}, ensure_ascii=False
                ),
                flush=True,
            )
    else:
        print()
        print(terminal_text(side_by_side(results)))
        if args.out:
            paths = ", ".join(_out_path(args.out, t.parser, len(targets) > 1) for t in targets)
            print(terminal_text("results in " + paths))
    if any(r["summary"]["errors"] for r in results):
        return 4
    return 0 if all(r["summary"]["passed"] == r["summary"]["total"] for r in results) else 1
