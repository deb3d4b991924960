"""Remote-engine fixtures: Callisto's own API server on a free loopback port, serving scripted GGUFs
(``tests.server.conftest``): a model whose first reply is a call and whose reply after the tool
result is text, and one that reasons before its call. The tools run here, in the test process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.conftest import THOUGHT, write_loop_model, write_thinking_model

__all__ = ["THOUGHT", "make_tools"]


def make_tools():
    """(registry, dispatcher, ran): the two tools the scripted models call, and the calls they ran."""
    from app.tools import Dispatcher, ToolRegistry

    registry = ToolRegistry()
    ran: list[tuple[str, dict]] = []

    def get_weather(city: str) -> str:
        """Current weather in a city.

        Args:
            city: The city name.
        """
        ran.append(("get_weather", {"city": city}))
        return f"Sunny, 21 C in {city}"

    def get_time(zone: str) -> str:
        """Current time in a time zone.

        Args:
            zone: The IANA zone name.
        """
        ran.append(("get_time", {"zone": zone}))
        return "12:00"

    registry.register_function(get_weather)
    registry.register_function(get_time)
    return registry, Dispatcher(registry), ran


@pytest.fixture(scope="session")
def remote_models(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("remote-models")
    return {"loop": write_loop_model(folder), "think": write_thinking_model(folder)}


@pytest.fixture(scope="session")
def callisto_server(remote_models) -> Iterator[object]:
    from app.server import ApiServer, ServerConfig

    server = ApiServer(
        ServerConfig(
            port=0,
            models=[str(p) for p in remote_models.values()],
            use_library=False,
            n_ctx=2048,
            n_threads=1,
            queue_size=8,
        )
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()
