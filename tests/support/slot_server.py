"""A real API server on a free loopback port over a tiny random-weight GGUF with a Hermes-style
chat template, loaded with N slots (``serve --parallel N``): what the server's slot tests share."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["HERMES_TEMPLATE", "hermes_tiny", "slot_servers", "until"]

HERMES_TEMPLATE = (
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"
)


def hermes_tiny(tiny_gguf: Callable[..., Path]) -> Path:
    """The tiny GGUF (the ``tiny_gguf`` fixture's maker) with the Hermes template and its tokens."""
    return tiny_gguf(
        chat_template=HERMES_TEMPLATE,
        control_tokens=["<s>", "</s>", "<|im_start|>", "<|im_end|>"],
        bos="<s>",
        eos="<|im_end|>",
        seed=3,
    )


def until(cond: Callable[[], Any], tries: int = 2400) -> bool:
    """Poll ``cond`` (a count bound, not a clock one)."""
    for _ in range(tries):
        if cond():
            return True
        time.sleep(0.05)
    return bool(cond())


@contextmanager
def slot_servers(model_path: Path) -> Iterator[Callable[..., Any]]:
    """``start(parallel, queue_size=16, preload=True)`` starts a server offering ``model_path``
    only (a 512-token context a slot, one thread), the model loaded first unless ``preload`` is
    False; every server started is stopped at the end."""
    from app.server import ApiServer, ServerConfig

    servers: list[Any] = []

    def start(parallel: int, queue_size: int = 16, *, preload: bool = True) -> Any:
        server = ApiServer(
            ServerConfig(
                port=0,
                models=[str(model_path)],
                use_library=False,
                n_ctx=512,
                n_threads=1,
                parallel=parallel,
                queue_size=queue_size,
                preload=str(model_path) if preload else None,
            )
        )
        server.start()
        servers.append(server)
        if preload:
            assert until(lambda: server.host.model(model_path) is not None)
        return server

    try:
        yield start
    finally:
        for s in servers:
            s.stop()
