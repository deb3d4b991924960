"""The options more than one command of ``python -m app`` takes (``chat``, ``serve``, ``check``):
written once, so that they keep one name, one default and one meaning."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = [
    "add_chat_template_option",
    "add_draft_options",
    "chat_template_option",
    "add_kind_option",
    "add_load_options",
    "add_tool_format_option",
    "at_least",
    "draft_options",
]

KINDS = ["openai", "anthropic", "ollama"]  # the APIs a remote endpoint may speak


def add_kind_option(parser: argparse.ArgumentParser, *, help: str) -> None:
    parser.add_argument("--kind", default="openai", choices=KINDS, help=help)


def add_tool_format_option(parser: argparse.ArgumentParser, choices: list[str], *, help: str) -> None:
    parser.add_argument("--tool-format", default="auto", choices=choices, help=help)


def at_least(lowest: int) -> Any:
    """An argparse type: a whole number of ``lowest`` or more (argparse says so in one line, and
    the command exits with 2, rather than start and fail every load later)."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
        if number < lowest:
            raise argparse.ArgumentTypeError(f"must be {lowest} or more, got {number}")
        return number

    return parse


def add_load_options(parser: argparse.ArgumentParser) -> None:
    """How a local GGUF is loaded: its context length, the layers on the GPU, the CPU threads."""
    parser.add_argument("--n-ctx", type=at_least(1), default=4096, help="context length (rounded to 256)")
    parser.add_argument("--gpu-layers", type=at_least(-1), default=0, help="layers on the GPU (-1: all)")
    parser.add_argument(
        "--threads",
        type=_threads,
        default=None,
        help="CPU threads (default, or -1 as llama.cpp takes it: automatic)",
    )


def _threads(value: str) -> int | None:
    """``--threads``: 1 or more, or -1 (llama.cpp's word for automatic: None here)."""
    number = at_least(-1)(value)
    if number == 0:
        raise argparse.ArgumentTypeError("must be 1 or more (or -1: automatic), got 0")
    return None if number == -1 else number


def add_draft_options(parser: argparse.ArgumentParser) -> None:
    """Speculative decoding (``app.engine.speculative``): draftless n-gram drafting and a draft model."""
    parser.add_argument(
        "--ngram-draft",
        choices=("on", "off"),
        default=None,
        help="speculative decoding by n-gram lookup in the prompt and the reply so far (default on; "
        "it turns itself off where it does not pay)",
    )
    parser.add_argument(
        "--draft-model",
        default=None,
        metavar="PATH",
        help="a small .gguf with the model's vocabulary that drafts tokens for it (default: none)",
    )


def add_chat_template_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--chat-template-file``: a Jinja chat template used in place of the model's own (llama-server's
    flag; ``app.engine.llm.LoadSettings.chat_template``)."""
    parser.add_argument(
        "--chat-template-file",
        default=None,
        metavar="FILE",
        help=f"a Jinja chat template to use in place of {what} (the tool-call format is read from it)",
    )


def chat_template_option(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """(the template ``--chat-template-file`` names, or None; the problem with it, or None): the
    file must be UTF-8 text that compiles as a chat template."""
    name = args.chat_template_file
    if name is None:
        return None, None
    from app.engine.errors import TemplateRenderError
    from app.engine.templates import MAX_TEMPLATE_CHARS, compile_template

    path = Path(name).expanduser()
    try:
        if not path.is_file():
            return None, f"--chat-template-file: {name} is not a file"
        if path.stat().st_size > 4 * MAX_TEMPLATE_CHARS:
            return None, f"--chat-template-file: {name} is larger than a chat template can be"
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"--chat-template-file: {name} cannot be read: {exc}"
    try:
        compile_template(source)
    except TemplateRenderError as exc:
        return None, f"--chat-template-file: {name} is not a chat template Callisto can read: {exc}"
    return source, None


def draft_options(args: argparse.Namespace) -> tuple[dict[str, Any], str | None]:
    """(``ngram_draft`` and ``draft_model`` for ``LoadSettings``, the problem with them or None):
    the draft model must be a regular, readable .gguf file whose metadata reads (its absolute path
    is passed on)."""
    from app.storage.settings import draft_model_problem

    path, ngram = args.draft_model, args.ngram_draft != "off"
    if path is None:
        return {"ngram_draft": ngram, "draft_model": None}, None
    problem = draft_model_problem(path)
    if problem is not None:
        return {}, f"--draft-model: {problem}"
    from app.engine.models.metadata import GGUFMetadataError, read_metadata

    try:  # a file that begins as a GGUF and is not one would fail every load, not the start
        read_metadata(Path(path).expanduser())
    except GGUFMetadataError as exc:
        return {}, f"--draft-model: the draft model {path} cannot be read: {exc.problem}"
    return {"ngram_draft": ngram, "draft_model": str(Path(path).expanduser().resolve())}, None
