"""Headless command line on the same engine as the window (no Qt is imported).

    python -m app chat --model PATH [--tool-format F] [--tools builtin|none] [--max-tokens N]
                       [--json] [--n-ctx N] [--gpu-layers N] [--threads N] [--system TEXT]
                       [--workspace DIR] [--yes] [--temperature T] [--seed N]
                       [--grammar-file FILE] [--save] [--tool-choice auto|none|required|NAME]
                       [--no-parallel-tool-calls] [--response-format json|SCHEMA.json]
                       [--think | --no-think] [--reasoning-budget N] [--reasoning-effort LEVEL]
                       [--ngram-draft on|off] [--draft-model PATH] [--image FILE]... [--mmproj PATH|none]
                       [--file FILE]... [--chat-template-file FILE] "prompt"
    python -m app chat --endpoint URL --model NAME [--api-key-env VAR] [--kind openai|anthropic|ollama]
                       [--parser auto|api|callisto] [--template GGUF|TOKENIZER_CONFIG|ORG/NAME] "prompt"
    python -m app inspect PATH [--json] [--lint]
    python -m app check --model PATH [--tool-format F] [--scenarios DIR] [--category C] [--out FILE] [--json]
    python -m app check --endpoint URL --model NAME [--api-key KEY] [--out FILE] [--json]
    python -m app serve [--model PATH_OR_NAME] [--tool-format F] [--host 127.0.0.1] [--port 8453]
                        [--api-key KEY] [--cors ORIGIN] [--kv-type f16|q8_0|q4_0] [--flash-attn on|off]
                        [--parallel N] [--idle-ttl SECONDS] [--ngram-draft on|off] [--draft-model PATH]
                        [--chat-template-file FILE]

``chat`` streams the reply to stdout; notices, tool calls and the summary go to stderr;
``--save`` stores the conversation in the same history the window reads. ``--ngram-draft`` and
``--draft-model`` set speculative decoding up for a local model (``chat``) or the models served
(``serve``); ``chat``'s summary says how many drafted tokens the model accepted.
``--chat-template-file FILE`` renders the prompts with that Jinja template in place of the
model's own (``serve``: the ``--model`` file's), its tool-call format read from it; a file that
cannot be read as one is refused before anything loads.
``--image FILE`` (repeatable) sends the files' images with the prompt, for a model with a vision
projector (``--mmproj``: its file; default the ``*mmproj*.gguf`` beside the model; ``none``: no
projector); each file is read and its header checked before the model loads.
``--file FILE`` (repeatable) attaches a text file: its text goes in the message after the prompt,
labelled and fenced, as the window's paperclip does (a binary or too large file is refused first).
With ``--json`` every event is one JSON object per line on stdout; with ``--image`` or ``--file``
the first is ``{"type": "user", "content": ..., "images": [{"file", "bytes", "sha256", "format",
"width", "height"}], "files": [{"name", "bytes"}]}`` (``files`` with ``--file``). ``inspect`` prints the
GGUF's metadata and the tool-call format detected from its template.

Exit status: 0 done, 1 the model or the reply failed, 2 bad arguments, 3 the engine process
died or stopped answering, 130 interrupted (Ctrl-C), 143 stopped by SIGTERM.

What reaches the terminal is made safe first (:func:`terminal_text`): a model, a remote engine, a
tool result or a file name cannot move the cursor, clear the screen, set the window title, hide
text behind ``\r`` or reorder it with bidirectional controls; each such character is shown as an
escape (``\x1b``, ``\u202e``). ``--json`` lines are JSON (every control character escaped).
Errors are one line; ``CALLISTO_DEBUG=1`` adds the traceback of an unexpected one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from typing import Any, NamedTuple

from app.cli_options import (
    add_chat_template_option,
    add_draft_options,
    add_kind_option,
    add_load_options,
    add_tool_format_option,
    chat_template_option,
    draft_options,
)
from app.engine.errors import ConstraintError, EngineCrashedError, EngineError, ModelLoadError, ToolSetupError
from app.terminal import terminal_text

__all__ = ["build_parser", "main", "terminal_text"]


def _tool_format_choices() -> list[str]:
    try:
        from app.engine.formats import tool_format_choices

        return [value for value, _label in tool_format_choices()]
    except ImportError:  # pragma: no cover - formats are part of the app
        return ["auto", "none"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m app", description="Callisto, headless.")
    sub = parser.add_subparsers(dest="command", required=True)

    chat = sub.add_parser("chat", help="send one prompt to a local GGUF model and stream the reply")
    chat.add_argument("prompt", help="the user message")
    chat.add_argument(
        "--model", required=True, help="path of a .gguf file (with --endpoint: the remote model's name)"
    )
    chat.add_argument(
        "--endpoint",
        default=None,
        metavar="URL",
        help="chat with a model served there (llama-server, vLLM, SGLang, Ollama, LM Studio...)",
    )
    add_kind_option(chat, help="the API the endpoint speaks (with --endpoint)")
    chat.add_argument(
        "--api-key-env",
        default=None,
        metavar="VAR",
        help="read the endpoint's API key from this environment variable",
    )
    chat.add_argument(
        "--parser",
        default="auto",
        choices=["auto", "api", "callisto"],
        help="api: the endpoint's function calling; callisto: raw text rendered and parsed by Callisto",
    )
    chat.add_argument(
        "--template",
        default=None,
        metavar="FILE_OR_REPO",
        help=(
            "Callisto parsing: the model's GGUF, its tokenizer_config.json or a Hugging Face repository id "
            "(org/name; HF_ENDPOINT and HF_TOKEN are honoured) (default: the server's /props)"
        ),
    )
    add_tool_format_option(
        chat, _tool_format_choices(), help="chat.tool_format: auto (from the template), a family, or none"
    )
    chat.add_argument(
        "--tools",
        default="builtin",
        choices=["builtin", "none"],
        help="built-in tools (calculator, clock, workspace files with --workspace) or none",
    )
    chat.add_argument("--workspace", default=None, help="folder the file tools may use")
    chat.add_argument("--yes", action="store_true", help="allow side-effecting tools without asking")
    chat.add_argument("--max-tokens", type=int, default=1024)
    chat.add_argument("--max-rounds", type=int, default=8)
    add_load_options(chat)
    add_draft_options(chat)
    add_chat_template_option(chat, "the model's own (a local model)")
    chat.add_argument("--system", default=None, help="system prompt")
    chat.add_argument("--temperature", type=float, default=None)
    chat.add_argument("--seed", type=int, default=None)
    chat.add_argument("--grammar-file", default=None, help="GBNF grammar constraining the reply")
    chat.add_argument(
        "--tool-choice",
        default="auto",
        metavar="auto|none|required|NAME",
        help="auto (default), none (no tools in the prompt), required (the reply is a call) "
        "or a tool's name (the reply calls it); calls are held to their schemas",
    )
    chat.add_argument("--no-parallel-tool-calls", action="store_true", help="at most one call per reply")
    think = chat.add_mutually_exclusive_group()
    think.add_argument(
        "--think", dest="think", action="store_const", const="on", help="turn the model's thinking on"
    )
    think.add_argument(
        "--no-think",
        dest="think",
        action="store_const",
        const="off",
        help="turn the model's thinking off (the switch its template reads)",
    )
    chat.add_argument(
        "--reasoning-budget",
        type=int,
        default=None,
        metavar="N",
        help="at most N tokens of reasoning, then the reasoning is closed and the model answers",
    )
    chat.add_argument(
        "--reasoning-effort",
        default=None,
        metavar="LEVEL",
        help="the effort level, for templates with levels (low, medium, high...)",
    )
    chat.add_argument(
        "--response-format",
        default=None,
        metavar="json|SCHEMA.json",
        help="hold a plain reply to JSON, or to the JSON Schema in this file",
    )
    chat.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="FILE",
        help="send this image with the prompt (repeatable; PNG, JPEG, GIF or BMP): the model needs "
        "a vision projector (--mmproj)",
    )
    chat.add_argument(
        "--file",
        action="append",
        default=[],
        metavar="FILE",
        help="attach this text file (repeatable; UTF-8 or UTF-16, up to 1 MB): its text goes in the "
        "message after the prompt, labelled and fenced",
    )
    chat.add_argument(
        "--mmproj",
        default=None,
        metavar="PATH|none",
        help="the vision projector (mmproj .gguf) loaded with the model (default: the one beside "
        "the model file; none: no projector)",
    )
    chat.add_argument("--json", action="store_true", help="one JSON event per line")
    chat.add_argument(
        "--save", action="store_true", help="save the conversation in the history the window shows"
    )

    inspect = sub.add_parser("inspect", help="print a GGUF's metadata and detected tool format")
    inspect.add_argument("path")
    inspect.add_argument("--json", action="store_true")
    inspect.add_argument(
        "--lint", action="store_true", help="template forensics: known tool-calling breakages"
    )

    from app.check.cli import add_check_parser

    add_check_parser(sub, _tool_format_choices())

    from app.storage.cli import add_history_parser

    add_history_parser(sub)

    serve = sub.add_parser(
        "serve", help="serve the OpenAI, Anthropic, Ollama and llama-server APIs on a local port"
    )
    serve.add_argument(
        "--model", default=None, help="a .gguf file or a library model's name (loaded at start)"
    )
    add_tool_format_option(
        serve,
        _tool_format_choices(),
        help="chat.tool_format for every model: auto (from the template), a family, or none",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    serve.add_argument("--port", type=_port, default=8453, help="0-65535 (0: any free port)")
    serve.add_argument("--api-key", default=None, help="require this key (Authorization: Bearer / x-api-key)")
    serve.add_argument(
        "--cors",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="allow this web origin (repeatable); CORS is off without it",
    )
    add_load_options(serve)
    serve.add_argument(
        "--kv-type",
        "--cache-type",
        dest="kv_type",
        choices=("f16", "q8_0", "q4_0"),
        default="f16",
        help="the KV cache's type for K and V (q8_0: about half the memory; needs flash attention)",
    )
    serve.add_argument(
        "--flash-attn",
        choices=("on", "off"),
        default="on",
        help="flash attention (default on; a q8_0 / q4_0 KV cache needs it)",
    )
    serve.add_argument(
        "--parallel",
        type=int,
        default=4,
        metavar="N",
        help="slots: requests a model serves at once, batched (each with the whole --n-ctx; default 4)",
    )
    add_draft_options(serve)
    add_chat_template_option(serve, "the --model files' own")
    serve.add_argument("--queue", type=int, default=16, help="requests that may wait (past it: 429)")
    serve.add_argument(
        "--max-loaded-models",
        type=int,
        default=1,
        metavar="N",
        help="models kept loaded at a time; a request for another closes the least recently used",
    )
    serve.add_argument(
        "--idle-ttl",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="unload a model idle this long; the next request loads it again (default 0: never; "
        "a request's keep_alive or ttl wins)",
    )
    return parser


def _port(value: str) -> int:
    """``--port``: an integer from 0 to 65535 (argparse says so in one line otherwise)."""
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {value!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, got {port}")
    return port


class _TerminalStream:
    """Streamed text made safe piece by piece (:func:`terminal_text`); a ``\\r`` that ends a
    piece waits for the next one, which may begin with the ``\\n`` that makes it a newline."""

    def __init__(self, stream: Any):
        self.stream = stream
        self.cr = False

    def write(self, text: str) -> None:
        if self.cr:
            text = "\r" + text
        self.cr = text.endswith("\r")
        if self.cr:
            text = text[:-1]
        if text:
            self.stream.write(terminal_text(text))
            self.stream.flush()

    def end(self) -> None:
        if self.cr:
            self.cr = False
            self.stream.write(terminal_text("\r"))
            self.stream.flush()


def _err(text: str) -> None:
    print(terminal_text(text), file=sys.stderr, flush=True)


def _inspect(args: argparse.Namespace) -> int:
    if args.lint:
        from app.check.cli import inspect_lint

        return inspect_lint(args)
    from app.engine.detection import detect_tool_format
    from app.engine.llm import FALLBACK_TEMPLATE
    from app.engine.models.metadata import GGUFMetadataError, read_metadata

    try:
        meta = read_metadata(args.path)
    except GGUFMetadataError as exc:
        _err(f"error: {exc}")
        return 1
    detected = detect_tool_format(
        meta.chat_template, meta.tool_use_template, bos_token=meta.bos_token, eos_token=meta.eos_token
    )
    info: dict[str, Any] = {
        "path": meta.path,
        "name": meta.name,
        "architecture": meta.architecture,
        "parameters": meta.parameter_count,
        "parameter_label": meta.parameter_label,
        "quantization": meta.quantization,
        "context_length": meta.context_length,
        "file_size": meta.file_size,
        "vocab_size": meta.vocab_size,
        "bos_token": meta.bos_token,
        "eos_token": meta.eos_token,
        "chat_template": "yes" if meta.chat_template else "none (fallback ChatML is used)",
        "named_templates": sorted(meta.named_templates),
        "sampling": meta.sampling,
        "tool_format": detected or "none",
    }
    from app.engine.models._gguf import template_problem

    problem = template_problem(meta)
    if problem is not None:  # "tool_format none" alone would hide that the template never renders
        info["template_error"] = problem
        _err(f"warning: the chat template does not render: {problem}")
    if args.json:
        full = dict(
            info,
            chat_template=meta.chat_template,
            fallback_template=None if meta.chat_template else FALLBACK_TEMPLATE,
        )
        print(json.dumps(full, ensure_ascii=False))
        return 0
    for key, value in info.items():
        if isinstance(value, (list, dict)):
            value = (
                ", ".join(f"{k}={v}" for k, v in value.items())
                if isinstance(value, dict)
                else ", ".join(value)
            )
            value = value or "-"
        print(terminal_text(f"{key:16} {value}"))
    return 0


def _approval_hook(allow_all: bool):
    from app.calls import ApprovalDecision  # the one vocabulary of approvals

    typed: dict[str, ApprovalDecision] = {
        "y": "allow_once",
        "yes": "allow_once",
        "a": "always",
        "always": "always",
    }

    def hook(request) -> ApprovalDecision:
        if allow_all:
            return "allow_once"
        if not sys.stdin.isatty():
            _err(f"[approval] {request.tool_name} denied (no terminal to ask; use --yes to allow)")
            return "deny"
        _err(f"[approval] {request.tool_name} wants to run with {request.arguments_text}")
        answer = input("Allow? [y/N/a(lways)] ").strip().lower()
        return typed.get(answer, "deny")

    return hook


def _chat(args: argparse.Namespace) -> int:
    from app.engine.llm import load_model

    if args.max_tokens < 1:
        _err("error: --max-tokens must be at least 1")
        return 2
    if args.temperature is not None and not 0.0 <= args.temperature < float("inf"):
        _err(f"error: --temperature must be a finite number of 0 or more, got {args.temperature}")
        return 2
    grammar = None
    if args.grammar_file:
        try:
            grammar = _read_grammar(args.grammar_file)
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            _err(f"error: cannot read the grammar file {args.grammar_file}: {reason}")
            return 2
    try:
        tool_choice, response_format = _choices(args)
        thinking = _thinking(args)
        args.images = _read_images(args.image, save=args.save)  # before anything loads
        args.files = _read_files(args.file)
        if args.files:
            from app.storage.attached_files import message_with_files

            args.typed = args.prompt  # (the conversation's title, with --save)
            args.prompt = message_with_files(args.prompt, args.files)
        mmproj = _mmproj(args.mmproj)
    except ValueError as exc:
        _err(f"error: {exc}")
        return 2
    if args.endpoint:
        if args.mmproj is not None or args.images or args.chat_template_file is not None:
            flag = (
                "--mmproj"
                if args.mmproj is not None
                else "--image"
                if args.images
                else "--chat-template-file (a remote model's template: --template)"
            )
            _err(f"error: {flag} is for local models")
            return 2
        return _remote_chat(args, tool_choice, response_format, thinking)
    drafts, problem = draft_options(args)
    template, template_problem = chat_template_option(args)
    if problem is not None or template_problem is not None:
        _err(f"error: {problem or template_problem}")
        return 2
    from app.engine.llm import LoadSettings

    settings = LoadSettings(
        n_ctx=args.n_ctx,
        n_gpu_layers=args.gpu_layers,
        n_threads=args.threads,
        mmproj=mmproj,
        chat_template=template,
        **drafts,
    )
    try:
        model = load_model(args.model, settings=settings)
    except ModelLoadError as exc:
        if args.json:
            print(json.dumps({"type": "done", "finish_reason": "error", "error": str(exc)}))
        _err(f"error: {exc}")
        return exit_code_for(exc)

    from app.engine.session import build_session

    try:
        tools = _chat_tools(args) or _no_tools()
        session = build_session(model, tools=tools, grammar=grammar, **_session_options(args, thinking))
        from app.engine.constraints import resolve_tool_choice

        if tool_choice not in ("auto", "none"):  # a forced choice must name a declared tool
            resolve_tool_choice(tool_choice, session.registry.openai_tools() if session.registry else [])
    except (ToolSetupError, ValueError) as exc:
        _err(f"error: {exc}")
        model.close()
        return exit_code_for(exc, default=2)
    recorder = _recorder(args, session) if args.save else None
    if args.save and recorder is None:
        model.close()
        return 1

    try:
        return _print_events(args, session, recorder, tool_choice, response_format)
    finally:
        model.close()


class ImageFile(NamedTuple):
    """An image given with ``--image``: its file, its bytes and what its header says
    (``app.engine.vision.ImageInfo``: format, width, height)."""

    path: str
    data: bytes
    info: Any

    def describe(self) -> dict[str, Any]:
        """The image in ``--json``'s user event: what it is, never its bytes."""
        return {
            "file": self.path,
            "bytes": len(self.data),
            "sha256": hashlib.sha256(self.data).hexdigest(),
            "format": self.info.format,
            "width": self.info.width,
            "height": self.info.height,
        }


def _read_files(paths: list[str]) -> list[Any]:
    """The text files of ``--file``, read (``app.storage.attached_files``): ValueError names the
    file and why it cannot be attached."""
    from app.storage.attached_files import read_text_file

    files = []
    for path in paths:
        try:
            files.append(read_text_file(path))
        except ValueError as exc:
            raise ValueError(f"--file {path}: {exc}") from None
        except OSError as exc:
            raise ValueError(f"--file {path}: cannot read the file: {exc.strerror or exc}") from None
    return files


def _read_images(paths: list[str], *, save: bool = False) -> list[ImageFile]:
    """The files of ``--image``, read and their headers checked (``app.engine.vision.check_image``:
    no decoding, that is the engine process's); ValueError names the file and what is wrong with
    it. With ``--save``, an image the history would refuse (``images.max_bytes``) is refused here,
    before the model loads."""
    if not paths:
        return []
    from app.engine.vision import DEFAULT_LIMITS, ImageError, check_image

    out = []
    for path in paths:
        try:
            data = _read_file(path, DEFAULT_LIMITS.max_bytes)
        except OSError as exc:
            raise ValueError(f"--image {path}: cannot read the file: {exc.strerror or exc}") from None
        try:
            info = check_image(data)
        except ImageError as exc:
            raise ValueError(f"--image {path}: {exc}") from None
        out.append(ImageFile(path, data, info))
    if save:
        from app.storage.history import check_image_sizes
        from app.storage.settings import load_settings

        try:
            check_image_sizes([i.data for i in out], load_settings()[0].images.max_bytes)
        except ValueError as exc:
            raise ValueError(f"--save: {exc}") from None
    return out


def _mmproj(value: str | None) -> str | None:
    """``--mmproj`` for ``LoadSettings.mmproj``: None (look beside the model), "none", or the
    absolute path of a regular file (ValueError otherwise)."""
    if value is None or value.strip().lower() == "none":
        return None if value is None else "none"
    from pathlib import Path

    path = Path(value).expanduser()
    if not path.is_file():
        raise ValueError(
            f"--mmproj {value}: no such file" if not path.exists() else f"--mmproj {value}: not a file"
        )
    return str(path.resolve())


def _session_options(args: argparse.Namespace, thinking: Any) -> dict[str, Any]:
    """What a chat session, local or remote, takes from the command line as it is."""
    return {
        "tool_format": args.tool_format,
        "system_prompt": args.system,
        "sampling": _sampling(args),
        "max_rounds": args.max_rounds,
        "max_tokens": args.max_tokens,
        "thinking": thinking,
    }


def _sampling(args: argparse.Namespace) -> dict[str, Any]:
    """The sampler settings given on the command line (the model's defaults for the others)."""
    return {k: v for k, v in (("temperature", args.temperature), ("seed", args.seed)) if v is not None}


def _chat_tools(args: argparse.Namespace) -> Any:
    """The built-in tools (``--tools builtin``) or None; raises ToolSetupError for a bad workspace."""
    from app.engine.session import build_tools

    if args.tools != "builtin":
        return None
    return build_tools(workspace=args.workspace, approval=_approval_hook(args.yes), strict=True)


def _no_tools() -> Any:
    """``--tools none`` for a local model: no tool in the prompt, and a dispatcher over no tools, so
    a call the model writes anyway (its template's format is still read) is refused as an unknown
    tool, shown, and the turn goes on; never run, never handed back unrun (N1)."""
    from app.engine.session import build_tools

    return build_tools(builtin=False)


def _remote_chat(args: argparse.Namespace, tool_choice: Any, response_format: Any, thinking: Any) -> int:
    """``chat --endpoint``: the same events, printed the same way, from a remote engine."""
    import os

    from app.engine.remote import Provider, RemoteChatSession

    key = None
    if args.api_key_env:
        key = os.environ.get(args.api_key_env)
        if not key:
            _err(f"error: the environment variable {args.api_key_env} (--api-key-env) is not set")
            return 2
    if args.grammar_file:
        _err("error: --grammar-file is for local models; a remote endpoint takes --response-format")
        return 2
    for given, flag in ((args.draft_model, "--draft-model"), (args.ngram_draft, "--ngram-draft")):
        if given is not None:
            _err(f"error: {flag} is for local models; a remote endpoint decodes as its server is set up")
            return 2
    try:
        tools = _chat_tools(args)
        provider = Provider(args.endpoint, kind=args.kind, api_key=key, mode=args.parser)
        session = RemoteChatSession(
            provider,
            args.model,
            parser=args.parser,
            template=args.template,
            registry=tools.registry if tools else None,
            dispatcher=tools.dispatcher if tools else None,
            **_session_options(args, thinking),
        )
    except (EngineError, ValueError, OSError) as exc:  # a template from /props that cannot render...
        _err(f"error: {exc}")
        return exit_code_for(exc, default=2)
    recorder = _recorder(args, session) if args.save else None
    if args.save and recorder is None:
        return 1
    return _print_events(args, session, recorder, tool_choice, response_format)


#: ``chat``'s exit status when the model's engine process died (a native crash, out of memory, killed)
EXIT_ENGINE_CRASHED = 3

#: the engine's errors as exit statuses, first match wins (1: it failed, 2: the request cannot be
#: honoured as given, EXIT_ENGINE_CRASHED: the engine process died)
ENGINE_EXIT_CODES: tuple[tuple[type[EngineError], int], ...] = (
    (EngineCrashedError, EXIT_ENGINE_CRASHED),
    (ModelLoadError, 1),
    (ToolSetupError, 2),
    (ConstraintError, 2),
    (EngineError, 1),
)


def exit_code_for(exc: BaseException, default: int = 1) -> int:
    """The exit status for ``exc`` (:data:`ENGINE_EXIT_CODES`; ``default`` for any other error)."""
    for kind, code in ENGINE_EXIT_CODES:
        if isinstance(exc, kind):
            return code
    return default


def _print_events(
    args: argparse.Namespace, session: Any, recorder: Any, tool_choice: Any, response_format: Any
) -> int:
    from app.engine.events import (
        DoneEvent,
        NoticeEvent,
        ReasoningEvent,
        TextEvent,
        ToolCallFinishedEvent,
        ToolCallIncomplete,
        ToolCallStartedEvent,
        event_to_dict,
    )

    status = 0
    in_reasoning = False
    out_text = _TerminalStream(sys.stdout)
    reasoning_text = _TerminalStream(sys.stderr)
    images: list[ImageFile] = getattr(args, "images", [])
    events = session.send(
        args.prompt,
        tool_choice=tool_choice,
        parallel_tool_calls=not args.no_parallel_tool_calls,
        response_format=response_format,
        **({"images": [i.data for i in images]} if images else {}),
    )
    files = getattr(args, "files", [])
    if (
        images or files
    ) and args.json:  # what was sent, before the reply: the images described, not their bytes
        user: dict[str, Any] = {
            "type": "user",
            "content": args.prompt,
            "images": [i.describe() for i in images],
        }
        if files:
            user["files"] = [{"name": f.name, "bytes": f.size} for f in files]
        print(json.dumps(_printable(user), ensure_ascii=False), flush=True)
    if recorder is not None:
        recorder.user_message(args.prompt, [i.data for i in images])
        recorder.begin()
    done_event = None
    try:
        for ev in events:
            if recorder is not None:
                recorder.observe(ev)
            if isinstance(ev, DoneEvent):
                done_event = ev
            if args.json:
                print(json.dumps(_printable(event_to_dict(ev)), ensure_ascii=False, default=str), flush=True)
                if isinstance(ev, DoneEvent) and ev.finish_reason == "error":
                    status = EXIT_ENGINE_CRASHED if ev.engine_crashed else 1
                continue
            if isinstance(ev, ReasoningEvent):
                if not in_reasoning:
                    sys.stderr.write("[thinking] ")
                    in_reasoning = True
                reasoning_text.write(ev.text)
                continue
            if in_reasoning:
                reasoning_text.end()
                sys.stderr.write("\n")
                in_reasoning = False
            if isinstance(ev, TextEvent):
                out_text.write(ev.text)
            elif isinstance(ev, ToolCallIncomplete):
                inc = ev.call
                why = "cut off" if inc.reason == "truncated" else "to an undeclared tool"
                _err(f"[tool] a call {why}, not run: {inc.raw[:500]}")
            elif isinstance(ev, NoticeEvent):
                setting = f" (setting: {ev.setting})" if ev.setting else ""
                _err(f"[notice] {ev.message}{setting}")
            elif isinstance(ev, ToolCallStartedEvent):
                args_text = json.dumps(_printable(ev.call.arguments), ensure_ascii=False, default=str)
                _err(f"[tool] {ev.call.name} {args_text}")
            elif isinstance(ev, ToolCallFinishedEvent):
                out = ev.outcome
                outcome = f"error: {out.error}" if out.error is not None else (out.content or "")
                _err(f"[tool] {ev.call.name} -> {outcome[:500]} ({out.duration_s:.2f}s)")
            elif isinstance(ev, DoneEvent):
                out_text.end()
                sys.stdout.write("\n")
                sys.stdout.flush()
                if ev.finish_reason == "error":
                    _err(f"error: {ev.error}")
                    status = EXIT_ENGINE_CRASHED if ev.engine_crashed else 1
                else:
                    tps = f", {ev.tokens_per_s:.1f} tok/s" if ev.tokens_per_s else ""
                    if ev.draft_tokens:
                        tps += f", {ev.draft_accepted} of {ev.draft_tokens} drafted tokens accepted"
                    _err(
                        f"[done] {ev.finish_reason}: {ev.generated_tokens} tokens, "
                        f"{ev.prompt_tokens} prompt tokens, {ev.rounds} round(s){tps}"
                    )
    except KeyboardInterrupt:
        _err("\n[cancelled]")
        status = 130
        # Ctrl-C landed outside the engine's wait (printing, parsing): the turn's generator is
        # closed when this returns, and its engine gets a short grace to stop, not an open wait
        engine = getattr(getattr(session, "model", None), "engine", None)
        if engine is not None:
            engine.interrupt()
    finally:
        if recorder is not None:
            if done_event is None:
                done_event = DoneEvent(finish_reason="cancelled")
            if recorder.finish(done_event, session.messages) and not args.json:
                _err(f"[saved] conversation {recorder.conversation_id} in {recorder.history.path}")
            recorder.history.close()
    return status


def _recorder(args: argparse.Namespace, session: Any) -> Any:
    """A recorder saving this chat as a new conversation in the window's history (``--save``)."""
    from pathlib import Path

    from app.engine.recorder import TurnRecorder
    from app.storage.history import History, HistoryError

    try:
        history = History()
        if getattr(args, "images", None):
            from app.storage.settings import load_settings

            history.max_image_bytes = load_settings()[0].images.max_bytes
        typed = getattr(args, "typed", args.prompt)
        title = " ".join(typed.split())[:60] or " ".join(f.name for f in getattr(args, "files", [])) or "Chat"
        where = (
            f"{args.endpoint.rstrip('/')}#{args.model}" if args.endpoint else str(Path(args.model).resolve())
        )
        conv = history.create_conversation(title, model_path=where)
    except (HistoryError, OSError, ValueError) as exc:
        _err(f"error: cannot open the conversation history: {exc}")
        return None
    return TurnRecorder(
        history,
        conv.id,
        model=str(args.model),
        settings={"tool_format": args.tool_format, "max_tokens": args.max_tokens},
        on_error=lambda msg: _err(f"error: {msg}"),
    )


MAX_GRAMMAR_BYTES = 1024 * 1024


def _choices(args: argparse.Namespace) -> tuple[Any, Any]:
    """(tool_choice, response_format) from --tool-choice and --response-format; ValueError says
    what is wrong with them."""
    value = (args.tool_choice or "auto").strip()
    tool_choice: Any = (
        value if value in ("auto", "none", "required") else {"type": "function", "function": {"name": value}}
    )
    rf = args.response_format
    if rf is None:
        return tool_choice, None
    if rf == "json":
        return tool_choice, {"type": "json_object"}
    try:
        schema = json.loads(_read_grammar(rf))  # a regular file of at most MAX_GRAMMAR_BYTES
    except OSError as exc:
        raise ValueError(f"cannot read the response format file {rf}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"the response format file {rf} is not JSON: {exc}") from None
    if not isinstance(schema, dict):
        raise ValueError(f"the response format file {rf} does not hold a JSON Schema object")
    return tool_choice, {"type": "json_schema", "json_schema": {"name": "response", "schema": schema}}


def _thinking(args: argparse.Namespace) -> Any:
    """The thinking choice of --think / --no-think / --reasoning-budget / --reasoning-effort (an
    ``app.engine.thinking.Thinking``; None: the template's default); ValueError says what is wrong."""
    from app.engine.thinking import Thinking, parse_thinking

    mode, effort, budget = args.think, args.reasoning_effort, args.reasoning_budget
    if mode is None and effort is None and budget is None:
        return None
    choice = parse_thinking(mode)
    if effort is not None:
        level = parse_thinking(effort.strip().lower())
        if level.effort is None and level.mode != "off":
            raise ValueError(f"--reasoning-effort takes a level (low, medium, high...), not {effort!r}")
        if mode == "off" and level.mode != "off":
            raise ValueError("--no-think and --reasoning-effort contradict each other")
        choice = level if mode != "off" else choice
    if budget is not None and budget < 0:
        raise ValueError(f"--reasoning-budget must be 0 or more tokens, got {budget}")
    return Thinking(choice.mode, effort=choice.effort, budget=budget)


def _read_grammar(path: str) -> str:
    """A grammar file's text; OSError for a pipe, device or folder (``/dev/zero`` would never end,
    a FIFO would block) or a file over :data:`MAX_GRAMMAR_BYTES`."""
    return _read_file(path, MAX_GRAMMAR_BYTES).decode("utf-8")


def _read_file(path: str, limit: int) -> bytes:
    """A regular file's bytes; OSError for a pipe, device or folder (``/dev/zero`` would never end,
    a FIFO would block) or a file over ``limit`` bytes."""
    import os
    import stat

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(0, "not a regular file (a pipe, device or folder)")
        if st.st_size > limit:
            raise OSError(0, f"it is {st.st_size} bytes, over the {limit}-byte limit")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew while it was read
        raise OSError(0, f"it is over the {limit}-byte limit")
    return data


def _printable(value: Any) -> Any:
    """A copy any encoder takes: model-made lone surrogates and huge integers made printable."""
    from app.tools.validation import scrub_value

    return scrub_value(value)


#: exit statuses of a command interrupted by Ctrl-C and stopped by SIGTERM (128 + the signal)
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


def _exit_on_sigterm() -> None:
    """SIGTERM ends ``chat``, ``inspect`` and ``check`` as Ctrl-C does, through every ``finally``:
    the engine process is stopped and what was saved stays saved (``serve`` sets its own)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGTERM"):
        return

    def terminate(signum: int, frame: Any) -> None:
        raise SystemExit(EXIT_TERMINATED)

    signal.signal(signal.SIGTERM, terminate)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.command != "serve":
        _exit_on_sigterm()
    try:
        return _run(args)
    except KeyboardInterrupt:  # Ctrl-C while a model loads, or anywhere a command does not catch it
        _err("\n[cancelled]")
        return EXIT_INTERRUPTED
    except EngineError as exc:
        _err(f"error: {exc}")
        return exit_code_for(exc)
    except Exception as exc:  # noqa: BLE001 - one line, not a traceback (CALLISTO_DEBUG=1 shows it)
        import os

        if os.environ.get("CALLISTO_DEBUG"):
            raise
        _err(f"error: {type(exc).__name__}: {exc} (CALLISTO_DEBUG=1 shows where)")
        return 1


def _run(args: argparse.Namespace) -> int:
    try:
        if args.command == "inspect":
            return _inspect(args)
        if args.command == "serve":
            return _serve(args)
        if args.command == "check":
            from app.check.cli import run_check_command

            return run_check_command(args)
        if args.command == "history":
            from app.storage.cli import run_history_command

            return run_history_command(args)
        return _chat(args)
    except BrokenPipeError:
        # The reader went away (``callisto inspect m.gguf | head``): stop quietly, as Unix tools do.
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


def _serve(args: argparse.Namespace) -> int:
    from app.server import ApiError, ApiServer, ServerConfig
    from app.server._app import resolve_model_arg, serve_option_errors, serve_warnings

    problems = serve_option_errors(
        api_key=args.api_key,
        max_loaded=args.max_loaded_models,
        queue=args.queue,
        idle_ttl=args.idle_ttl,
        parallel=args.parallel,
    )
    if args.kv_type != "f16" and args.flash_attn == "off":
        problems = [*problems, f"--kv-type {args.kv_type} needs flash attention: drop --flash-attn off"]
    drafts, problem = draft_options(args)
    if problem is not None:
        problems = [*problems, problem]
    template, problem = chat_template_option(args)
    if problem is not None:
        problems = [*problems, problem]
    if template is not None and not (args.model and resolve_model_arg(args.model)[0]):
        problems = [*problems, "--chat-template-file is for a --model file: name its .gguf path"]
    for problem in problems:
        _err(f"error: {problem}")
    if problems:
        return 2
    for warning in serve_warnings(args.host, args.api_key, args.port):
        _err(warning)
    files, preload = resolve_model_arg(args.model) if args.model else ([], None)
    from app.server._state import template_key

    config = ServerConfig(
        chat_templates={template_key(f): template for f in files} if template is not None else {},
        host=args.host,
        port=args.port,
        api_key=args.api_key,
        cors_origins=list(args.cors),
        tool_format=args.tool_format,
        models=files,
        preload=preload,
        n_ctx=args.n_ctx,
        n_gpu_layers=args.gpu_layers,
        n_threads=args.threads,
        queue_size=max(1, args.queue),
        max_loaded=max(1, args.max_loaded_models),
        parallel=args.parallel,
        idle_ttl_s=args.idle_ttl,
        kv_type=args.kv_type,
        flash_attn=args.flash_attn == "on",
        **drafts,
    )
    server = ApiServer(
        config,
        on_request=lambda e: _err(
            f"{e.method} {e.path} {e.status} {e.model} {e.prompt_tokens}+{e.completion_tokens} tokens "
            f"{e.tool_calls} call(s) {e.duration_s:.2f}s" + (f": {e.error}" if e.error else "")
        ),
    )
    try:
        server.serve_forever(
            on_started=lambda: _err(
                f"Callisto API server on {server.url} (OpenAI: {server.url}/v1, Anthropic: {server.url}, "
                f"Ollama: {server.url}); Ctrl-C stops it"
            )
        )
    except (OSError, ApiError) as exc:
        _err(f"error: {exc}")
        return 1
    return 0
