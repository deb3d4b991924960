"""The options more than one command of ``python -m app`` takes (``chat``, ``serve``, ``check``):
written once, so that they keep one name, one default and one meaning."""

from __future__ import annotations

import argparse

__all__ = ["add_kind_option", "add_load_options", "add_tool_format_option"]

KINDS = ["openai", "anthropic", "ollama"]  # the APIs a remote endpoint may speak


def add_kind_option(parser: argparse.ArgumentParser, *, help: str) -> None:
    parser.add_argument("--kind", default="openai", choices=KINDS, help=help)


def add_tool_format_option(parser: argparse.ArgumentParser, choices: list[str], *, help: str) -> None:
    parser.add_argument("--tool-format", default="auto", choices=choices, help=help)


def add_load_options(parser: argparse.ArgumentParser) -> None:
    """How a local GGUF is loaded: its context length, the layers on the GPU, the CPU threads."""
    parser.add_argument("--n-ctx", type=int, default=4096, help="context length (rounded to 256)")
    parser.add_argument("--gpu-layers", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None)
