"""Entry point: ``python -m app`` opens the window; ``chat``, ``inspect``, ``serve``, ``check`` and ``history`` run headless."""

from __future__ import annotations

import sys

__all__ = ["main"]

_HEADLESS_COMMANDS = {"chat", "inspect", "serve", "check", "history"}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) == 2 and argv[0] == "--engine-child":  # a model's engine process (app.engine.engine_process)
        from app.engine.engine_child import main as engine_main

        return engine_main(argv[1])
    if len(argv) == 2 and argv[0] == "--mcp-guard" and argv[1].isdigit():  # a frozen bundle's MCP guard
        from app.tools.mcp_stdio import _guard_main

        _guard_main(int(argv[1]))
        return 0
    if argv and argv[0] in ("--version", "-V"):
        from app import __version__

        print(f"Callisto {__version__}")
        return 0
    if argv and argv[0] == "--self-test":  # check an installed bundle, then exit
        from app.selftest import main as selftest_main

        return selftest_main(argv[1:])
    if argv and argv[0] in _HEADLESS_COMMANDS:
        from app.cli import main as cli_main  # Qt-free

        return cli_main(argv)
    from app.ui.application import main as ui_main  # the only path that imports Qt

    return ui_main(argv)


if __name__ == "__main__":
    sys.exit(main())
