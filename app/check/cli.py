"""The check's command line (``python -m app check`` and ``python -m app inspect PATH --lint``).

    python -m app check --model PATH [--tool-format F] [--scenarios DIR] [--category C] --out result.json
    python -m app check --endpoint URL --model NAME [--api-key KEY] [--model-file PATH] --out result.json
                        [--parser api|callisto|both] [--kind openai|anthropic|ollama]

``--endpoint`` runs through Callisto's remote client (:mod:`app.engine.remote`, what ``chat
--endpoint`` and the window use); without ``--parser`` the engine's own tool calling (API tools).

``--json`` prints one line per scenario (then a summary line). Exit status: 0 every scenario passed,
1 a scenario failed, 2 a usage or scenario-file error, 4 a request failed (or the model did not load).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import Any

from app.cli_options import add_kind_option, add_load_options, add_tool_format_option
from app.terminal import terminal_text

__all__ = [
    "EXIT_ERROR",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "add_check_parser",
    "inspect_lint",
    "run_check_command",
]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_ERROR = 0, 1, 2, 4
MAX_GRAMMAR_FILE_BYTES = 1024 * 1024  # as chat's --grammar-file


def add_check_parser(sub: Any, tool_format_choices: list[str]) -> argparse.ArgumentParser:
    from app.check.corpus import CATEGORIES

    p = sub.add_parser("check", help="the 'Will it call?' tool-calling check, in process or on an endpoint")
    p.add_argument(
        "--model", required=True, help="a .gguf file (in process), or the model name with --endpoint"
    )
    p.add_argument(
        "--endpoint", default=None, help="an OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1"
    )
    p.add_argument("--api-key", default=None, help="the endpoint's API key (or set CALLISTO_CHECK_API_KEY)")
    p.add_argument(
        "--model-file", default=None, help="with --endpoint: the GGUF it serves, for the model identity"
    )
    p.add_argument(
        "--stack", default=None, help="with --endpoint: a label for the server (llama-server, ollama...)"
    )
    p.add_argument(
        "--parser",
        default=None,
        choices=["api", "callisto", "both"],
        help="with --endpoint: run through Callisto's remote client, the calls read by the engine's "
        "API tools, by Callisto's parser (raw text), or both (two rows side by side)",
    )
    add_kind_option(p, help="with --parser: the API the endpoint speaks")
    add_tool_format_option(
        p, tool_format_choices, help="in process: chat.tool_format (auto, a family, or none)"
    )
    p.add_argument(
        "--scenarios", default=None, help="a folder of scenario files (default: the built-in corpus)"
    )
    p.add_argument(
        "--category",
        action="append",
        default=[],
        choices=list(CATEGORIES),
        help="run only this category (repeatable)",
    )
    p.add_argument(
        "--scenario", action="append", default=[], metavar="ID", help="run only this scenario (repeatable)"
    )
    p.add_argument("--out", default=None, help="write the result file here (transcripts beside it)")
    p.add_argument("--json", action="store_true", help="one JSON line per scenario")
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--grammar-file",
        default=None,
        help="in process: a GBNF grammar for every reply instead of the chat loop's call constraints",
    )
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per request to an endpoint")
    add_load_options(p)
    return p


def _err(text: str) -> None:
    print(terminal_text(text), file=sys.stderr, flush=True)


def run_check_command(args: argparse.Namespace) -> int:
    from app.check.corpus import CorpusError, load_corpus
    from app.check.runner import write_result

    if args.max_tokens < 1:
        _err("error: --max-tokens must be at least 1")
        return EXIT_USAGE
    if args.endpoint is None and (args.model_file or args.stack or args.api_key):
        _err("error: --api-key, --model-file and --stack go with --endpoint")
        return EXIT_USAGE
    if args.endpoint is not None and args.grammar_file:
        _err("error: --grammar-file is for in-process checks")
        return EXIT_USAGE
    try:
        corpus = load_corpus(args.scenarios)
        scenarios = corpus.select(args.category or None, args.scenario or None)
    except CorpusError as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE
    if not scenarios:
        _err("error: no scenario selected")
        return EXIT_USAGE
    if getattr(args, "parser", None) is not None and args.endpoint is None:
        _err("error: --parser goes with --endpoint")
        return EXIT_USAGE
    if args.endpoint is not None:
        # the remote client the window and ``chat --endpoint`` use; without --parser, the engine's
        # own tool calling (API tools)
        from app.check.remote_target import run_remote_check

        if getattr(args, "parser", None) is None:
            args.parser = "api"
        return run_remote_check(args, corpus, scenarios)

    model = None
    from app.check.console import gguf_findings, progress_printer, run_interruptible, sampling_options
    from app.check.targets import InProcessTarget
    from app.engine.errors import ModelLoadError
    from app.engine.llm import load_model

    grammar = None
    if args.grammar_file:
        from app.files import read_text_file

        try:
            grammar = read_text_file(args.grammar_file, max_bytes=MAX_GRAMMAR_FILE_BYTES)
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            _err(f"error: cannot read the grammar file {args.grammar_file}: {reason}")
            return EXIT_USAGE
    if not Path(args.model).is_file():
        _err(f"error: no model file {args.model} (use --endpoint URL for a served model)")
        return EXIT_USAGE
    try:
        model = load_model(args.model, n_ctx=args.n_ctx, n_gpu_layers=args.gpu_layers, n_threads=args.threads)
    except ModelLoadError as exc:
        _err(f"error: {exc}")
        return EXIT_ERROR
    target = InProcessTarget(model, tool_format=args.tool_format, grammar=grammar, **sampling_options(args))
    forensics = gguf_findings(args.model)
    stop = threading.Event()
    settings = {
        **sampling_options(args),
        "grammar_file": args.grammar_file,
        "tool_format": args.tool_format if args.endpoint is None else None,
        "categories": args.category,
        "scenario_ids": args.scenario,
    }
    try:
        result = run_interruptible(
            target,
            scenarios,
            corpus,
            progress=progress_printer(args.json),
            forensics=forensics,
            settings=settings,
            stop=stop,
        )
    finally:
        target.close()
        if model is not None:
            model.close()
    if result is None:
        return 130
    summary = result["summary"]
    if args.out:
        folder = write_result(result, args.out)
        where = f"; result in {args.out}, transcripts in {folder}"
    else:
        where = ""
    if args.json:
        print(json.dumps({"type": "summary", **summary, "out": args.out}, ensure_ascii=False), flush=True)
    else:
        print(
            terminal_text(f"\n{summary['passed']}/{summary['total']} passed ({summary['score']:.0%}){where}")
        )
        for cat, c in summary["by_category"].items():
            print(terminal_text(f"  {cat:12} {c['passed']:>3}/{c['total']:<3} {c['score']:.0%}"))
        for f in forensics:
            print(terminal_text(f"  [forensics] {f['severity']}: {f['id']} - {f['title']}"))
    if summary["errors"]:
        return EXIT_ERROR
    return EXIT_OK if summary["passed"] == summary["total"] else EXIT_FAILED


def _is_gguf(path: Path) -> bool:
    """Whether ``path`` starts like a GGUF; False for what cannot be read (a FIFO is not waited on)."""
    from app.files import open_regular_file

    try:
        with open_regular_file(path) as fh:
            return fh.read(4) == b"GGUF"
    except OSError:
        return False


def inspect_lint(args: argparse.Namespace) -> int:
    """``python -m app inspect PATH --lint``: the forensics report of a GGUF's templates (or of one
    template file). Exit 0 with a report (findings or not), 1 when the file cannot be read."""
    from app.check.forensics import MAX_TEMPLATE_FILE_BYTES, lint_gguf, lint_template
    from app.engine.models.metadata import GGUFMetadataError
    from app.files import read_text_file

    path = Path(args.path)
    try:
        if _is_gguf(path):
            report = lint_gguf(path)
        else:
            source = read_text_file(path, max_bytes=MAX_TEMPLATE_FILE_BYTES)
            t = lint_template(source, name=path.name)
            report = {
                "path": str(path),
                "file_name": path.name,
                "vocab_read": False,
                "templates": [t.to_dict()],
                "findings": [f.to_dict() for f in t.findings],
            }
    except OSError as exc:
        _err(f"error: cannot read {path}: {exc.strerror or exc}")
        return 1
    except (GGUFMetadataError, UnicodeDecodeError) as exc:
        _err(f"error: {exc}")
        return 1
    if getattr(args, "json", False):
        print(json.dumps(report, ensure_ascii=False))
        return 0
    print(
        terminal_text(
            f"{report['file_name']}: {len(report['findings'])} finding(s)"
            + ("" if report["vocab_read"] else " (template only: no vocabulary read)")
        )
    )
    for t in report["templates"]:
        official = (
            f"identical to the official {t['official_match']}"
            if t["official_match"]
            else f"closest official: {t['closest_official']}"
            if t["closest_official"]
            else "no official match"
        )
        print(
            terminal_text(
                f"\n{t['template']}: format {t['detected_format'] or 'none'}, tools {t['tools_mode']}, {official}"
            )
        )
        for f in t["findings"]:
            where = f" (line {f['line']})" if f["line"] else ""
            print(terminal_text(f"  [{f['severity']}] {f['id']}{where}: {f['title']}"))
            print(terminal_text(f"      {f['explanation']}"))
            if f["line_text"]:
                print(terminal_text(f"      > {f['line_text']}"))
            print(terminal_text(f"      Callisto: {f['callisto']}"))
    extra = [
        f for f in report["findings"] if f["template"] not in {t["template"] for t in report["templates"]}
    ]
    for f in extra:
        print(terminal_text(f"  [{f['severity']}] {f['id']}: {f['title']} - {f['callisto']}"))
    return 0
