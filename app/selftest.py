"""``callisto --self-test``: prove that an installed bundle works, without a network or a model.

Three checks, each a real path through the app:

1. **engine** (Qt-free): write a tiny random-weight GGUF (``app.engine.models.tiny``) with the
   Qwen2.5 chat template (Hermes tool-call family), load it with the bundled llama.cpp, and run
   one :class:`~app.engine.chat.ChatSession` turn with the built-in tools. A random-weight model
   cannot decide to call a tool, so a GBNF grammar fixes what llama.cpp may sample in each round:
   round 1 is ``<tool_call>{"name": "calculator", ...}</tool_call>`` (the call markers are the
   model's own special tokens), round 2 a short answer. Everything else is the app's real code:
   template rendering, the Hermes stream parser, the schema-checked dispatcher and the calculator,
   whose result (``42``) must come back into the conversation.
2. **server** (Qt-free): serve that model with the local API server on a free loopback port and
   send it one ``/v1/chat/completions`` request.
3. **window** (``app.ui``): build the main window offscreen, render it to an image and check that
   the image is not blank.

A short report goes to stdout (and to ``--report PATH``: a Windows GUI executable has no
stdout). Exit status 0 when both checks pass, 1 with a message naming the failed step otherwise.
The checks run in a throw-away ``CALLISTO_HOME`` so the user's settings and history are never
touched.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "EXPECTED_RESULT",
    "SELFTEST_EXPRESSION",
    "SELFTEST_TEMPLATE",
    "CheckResult",
    "SelfTestError",
    "build_parser",
    "check_engine",
    "check_server",
    "check_window",
    "main",
    "run_self_test",
]

#: Qwen2.5-7B-Instruct's chat template (Hermes family), as shipped in its GGUF.
SELFTEST_TEMPLATE = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"""

SELFTEST_FAMILY = "hermes"
SELFTEST_EXPRESSION = "6*7"
EXPECTED_RESULT = "42"
SELFTEST_ANSWER = "6*7 is 42."
_CONTROL = ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]
_USER = ["<tool_call>", "</tool_call>"]


class SelfTestError(RuntimeError):
    """A self-test step failed; the message names the step and what was seen."""


@dataclass
class CheckResult:
    name: str
    ok: bool
    detail: str
    seconds: float
    facts: dict[str, Any] = field(default_factory=dict)


def _gbnf_literal(text: str) -> str:
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{out}"'


def _forced_grammars(spec: Any) -> list[str]:
    """One GBNF grammar per round of the chat loop: the call, then the answer."""
    call_json = json.dumps({"name": "calculator", "arguments": {"expression": SELFTEST_EXPRESSION}})
    call_json = f"\n{call_json}\n"
    open_id, close_id = spec.id_of("<tool_call>"), spec.id_of("</tool_call>")
    return [
        f"root ::= <[{open_id}]> {_gbnf_literal(call_json)} <[{close_id}]>",
        f"root ::= {_gbnf_literal(SELFTEST_ANSWER)}",
    ]


def _grammar_per_round(grammars: list[str]) -> tuple[Any, list[int]]:
    """A ``ChatSession.grammar`` that makes llama.cpp sample round ``i`` of the chat loop under
    ``grammars[i]`` (llama.cpp's own grammar sampler, in the model's engine process). Returns the
    callable and the list that counts the rounds."""
    rounds: list[int] = []

    def grammar(round_no: int) -> str:
        i = round_no - 1
        rounds.append(i)
        if i >= len(grammars):
            raise SelfTestError(
                f"the chat loop asked for round {i + 1}; the self-test expects {len(grammars)}"
            )
        return grammars[i]

    return grammar, rounds


def check_engine(workdir: Path) -> CheckResult:
    """Load a tiny GGUF through the bundled llama.cpp and run one chat turn with a tool call."""
    start = time.monotonic()
    from app.engine.events import (
        DoneEvent,
        NoticeEvent,
        TextEvent,
        ToolCallFinishedEvent,
        ToolCallStartedEvent,
    )
    from app.engine.llm import load_model
    from app.engine.models.tiny import TinySpec, write_tiny_gguf
    from app.engine.session import build_session, build_tools

    path = write_tiny_gguf(
        workdir / "selftest-tiny.gguf",
        chat_template=SELFTEST_TEMPLATE,
        control_tokens=_CONTROL,
        user_tokens=_USER,
        bos=None,
        eos="<|im_end|>",
        eot="<|im_end|>",
        name="callisto-selftest",
        context_length=2048,
    )
    spec = TinySpec([*_CONTROL], _USER)
    import llama_cpp

    model = load_model(path, n_ctx=2048, n_threads=2)
    try:
        grammar, rounds = _grammar_per_round(_forced_grammars(spec))
        session = build_session(
            model,
            tools=build_tools(),
            tool_format=SELFTEST_FAMILY,
            max_tokens=128,
            max_rounds=4,
            sampling={"seed": 1},
            grammar=grammar,
        )
        events = list(session.send(f"What is {SELFTEST_EXPRESSION}? Use the calculator."))
    finally:
        model.close()

    started = [e for e in events if isinstance(e, ToolCallStartedEvent)]
    finished = [e for e in events if isinstance(e, ToolCallFinishedEvent)]
    done = [e for e in events if isinstance(e, DoneEvent)]
    text = "".join(e.text for e in events if isinstance(e, TextEvent))
    notices = [e.code for e in events if isinstance(e, NoticeEvent)]
    if not done:
        raise SelfTestError("engine: the chat turn ended without a Done event")
    if done[-1].finish_reason != "stop":
        raise SelfTestError(f"engine: the chat turn ended with {done[-1].finish_reason!r}: {done[-1].error}")
    if (
        len(started) != 1
        or started[0].call.name != "calculator"
        or started[0].call.arguments != {"expression": SELFTEST_EXPRESSION}
    ):
        seen = [(e.call.name, e.call.arguments) for e in started]
        raise SelfTestError(
            f"engine: expected one calculator call with {SELFTEST_EXPRESSION!r}, saw {seen}; text {text!r}"
        )
    outcomes = [e.outcome for e in finished]
    if len(outcomes) != 1 or outcomes[0].error is not None or outcomes[0].content != EXPECTED_RESULT:
        got = [(o.content, o.error) for o in outcomes]
        raise SelfTestError(f"engine: the calculator should return {EXPECTED_RESULT!r}, got {got}")
    if text.strip() != SELFTEST_ANSWER:
        raise SelfTestError(f"engine: the final answer should be {SELFTEST_ANSWER!r}, got {text!r}")
    tool_msgs = [m for m in session.messages if m.role == "tool"]
    if len(tool_msgs) != 1 or EXPECTED_RESULT not in tool_msgs[0].content:
        raise SelfTestError("engine: the tool result did not come back into the conversation")
    return CheckResult(
        "engine",
        True,
        f"llama.cpp {getattr(llama_cpp, '__version__', '?')} loaded a tiny GGUF; {SELFTEST_FAMILY} call "
        f"calculator({SELFTEST_EXPRESSION!r}) -> {outcomes[0].content}; answer {text.strip()!r}",
        time.monotonic() - start,
        {
            "rounds": len(rounds),
            "detected_format": session.detected_format,
            "notices": notices,
            "llama_cpp": getattr(llama_cpp, "__version__", "?"),
        },
    )


def check_server(workdir: Path) -> CheckResult:
    """Serve the tiny GGUF of the engine check on a free loopback port; one chat request to it."""
    start = time.monotonic()
    import urllib.request

    from app.server import ApiServer, ServerConfig

    path = workdir / "selftest-tiny.gguf"
    if not path.is_file():
        raise SelfTestError("server: the engine check's model is missing (the engine check failed)")
    server = ApiServer(ServerConfig(port=0, models=[str(path)], use_library=False, n_ctx=2048, n_threads=2))
    server.start()
    try:
        body = json.dumps(
            {"model": path.stem, "max_tokens": 4, "messages": [{"role": "user", "content": "Hello"}]}
        ).encode()
        req = urllib.request.Request(
            server.url + "/v1/chat/completions", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=60) as resp:  # noqa: S310 - our own loopback server
            status, reply = resp.status, json.loads(resp.read())
    finally:
        server.stop()
    if status != 200 or reply.get("object") != "chat.completion" or not reply.get("choices"):
        raise SelfTestError(f"server: /v1/chat/completions answered {status}: {str(reply)[:200]}")
    usage = reply.get("usage") or {}
    return CheckResult(
        "server",
        True,
        f"API server on {server.url} answered /v1/chat/completions "
        f"({usage.get('completion_tokens', 0)} tokens)",
        time.monotonic() - start,
        {},
    )


def check_window(workdir: Path, screenshot: Path | None = None) -> CheckResult:
    """Build the main window (offscreen unless a platform is chosen), render it, check the image."""
    start = time.monotonic()
    from app.ui.selftest_window import WindowCheckError, render_main_window  # the Qt half

    try:
        shot = render_main_window(screenshot)
    except WindowCheckError as exc:
        raise SelfTestError(str(exc)) from exc
    return CheckResult(
        "window",
        True,
        f"main window rendered {shot['width']}x{shot['height']} on Qt platform {shot['platform']!r}",
        time.monotonic() - start,
        {"colours_sampled": shot["colours_sampled"]},
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="callisto --self-test", description="Check that this Callisto installation works, then exit."
    )
    p.add_argument("--report", metavar="PATH", help="also write the report to PATH")
    p.add_argument("--screenshot", metavar="PATH", help="save the rendered window as a PNG")
    p.add_argument("--skip-window", action="store_true", help="run only the Qt-free engine check")
    return p


def run_self_test(
    *, report: Callable[[str], None], screenshot: Path | None = None, window: bool = True
) -> int:
    """Run the checks, reporting each line through ``report``; return the exit status."""
    from app import __version__

    frozen = getattr(sys, "frozen", False)
    report(
        f"Callisto {__version__} self-test ({'bundle' if frozen else 'source'}; Python "
        f"{platform.python_version()}; {platform.system()} {platform.machine()})"
    )
    previous_home = os.environ.get("CALLISTO_HOME")
    failed = 0
    with tempfile.TemporaryDirectory(prefix="callisto-selftest-") as tmp:
        workdir = Path(tmp)
        os.environ["CALLISTO_HOME"] = str(workdir / "home")
        try:
            # (name, check, needs the engine): the server answers with the engine, so it is not
            # tried when the engine failed (one cause, one failure).
            checks: list[tuple[str, Callable[[], CheckResult], bool]] = [
                ("engine", lambda: check_engine(workdir), False),
                ("server", lambda: check_server(workdir), True),
            ]
            if window:
                checks.append(("window", lambda: check_window(workdir, screenshot), False))
            engine_ok = True
            for name, check, needs_engine in checks:
                if needs_engine and not engine_ok:
                    report(f"skip {name}: it needs the engine, which failed")
                    continue
                try:
                    res = check()
                except Exception as exc:  # noqa: BLE001 - every failure becomes a clear report line
                    failed += 1
                    engine_ok = engine_ok and name != "engine"
                    msg = str(exc) if isinstance(exc, SelfTestError) else f"{type(exc).__name__}: {exc}"
                    report(f"FAIL {msg}")
                    report(traceback.format_exc().rstrip())
                    continue
                report(f"ok   {res.name}: {res.detail} ({res.seconds:.1f} s)")
        finally:
            if previous_home is None:
                os.environ.pop("CALLISTO_HOME", None)
            else:
                os.environ["CALLISTO_HOME"] = previous_home
    report("self-test passed" if not failed else f"self-test FAILED ({failed} check(s))")
    return 0 if not failed else 1


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    lines: list[str] = []

    def report(line: str) -> None:
        lines.append(line)
        if sys.stdout is not None:  # a windowed Windows executable has none
            print(line, flush=True)

    code = run_self_test(
        report=report,
        screenshot=Path(args.screenshot) if args.screenshot else None,
        window=not args.skip_window,
    )
    if args.report:
        path = Path(args.report)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return code
