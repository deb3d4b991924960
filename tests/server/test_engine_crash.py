"""The engine process dies while the server answers (SIGKILL, what the out-of-memory killer sends):
the request gets a clear 500 naming the crash, the server stays up, and the next request runs on
a fresh engine. Real server on a free loopback port, the official openai client, real llama.cpp."""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading

import pytest

from tests.ui.scripted_gguf import CHATML, streaming_script, write_scripted_gguf

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _engine_pids() -> list[int]:
    import psutil

    me = psutil.Process()
    return [c.pid for c in me.children(recursive=True) if "--engine-child" in " ".join(c.cmdline())]


def test_a_crash_mid_request_is_a_clear_500_and_the_next_request_gets_a_fresh_engine(tmp_path):
    import openai

    from app.server import ApiServer, ServerConfig

    model = write_scripted_gguf(
        tmp_path / "stream.gguf", chat_template=CHATML, script=streaming_script(), default_next="a"
    )
    before = set(_engine_pids())
    server = ApiServer(
        ServerConfig(
            port=0, models=[str(model)], use_library=False, n_ctx=4096, n_threads=1, max_tokens_limit=100_000
        )
    )
    server.start()
    try:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=120)
        errors: list[BaseException] = []

        def long_request() -> None:
            try:
                client.chat.completions.create(
                    model="stream", messages=[{"role": "user", "content": "go on"}], max_tokens=100_000
                )
            except openai.APIError as exc:
                errors.append(exc)

        # The host tells its listeners when a model has loaded, from inside the request's job: from
        # then on the request is in the engine and a crash is one "while generating" (a kill
        # before it, while the model loads, is a load failure: a different error).
        loaded = threading.Event()
        server.host.add_listener(lambda change: loaded.set())
        t = threading.Thread(target=long_request)
        t.start()
        assert loaded.wait(120), "the model did not load"
        (pid,) = set(_engine_pids()) - before
        os.kill(pid, signal.SIGKILL)
        t.join(120)
        assert not t.is_alive(), "the request did not end after its engine was killed"
        assert len(errors) == 1
        err = errors[0]
        assert isinstance(err, openai.InternalServerError) and err.status_code == 500
        assert "crashed while generating" in str(err) and "killed" in str(err)
        assert err.code == "engine_crashed", err.body
        # the server is up, and the same model answers from a fresh engine
        reply = client.chat.completions.create(
            model="stream", messages=[{"role": "user", "content": "hi"}], max_tokens=5
        )
        assert reply.choices[0].finish_reason == "length" and reply.choices[0].message.content
        assert set(_engine_pids()) - before - {pid}
    finally:
        server.stop()


def test_a_crash_mid_stream_ends_the_stream_with_the_error_and_the_log_says_why(tmp_path):
    """A stream's 200 has gone out when its engine dies: the stream ends with an error event, and
    the server's log (the window's Server page, ``serve``'s console) has the request as failed,
    with the message its client got and the model it was for."""
    import openai

    from app.server import ApiServer, ServerConfig

    model = write_scripted_gguf(
        tmp_path / "stream.gguf", chat_template=CHATML, script=streaming_script(), default_next="a"
    )
    before = set(_engine_pids())
    logged: queue.Queue = queue.Queue()
    server = ApiServer(
        ServerConfig(
            port=0, models=[str(model)], use_library=False, n_ctx=4096, n_threads=1, max_tokens_limit=100_000
        ),
        on_request=logged.put,
    )
    server.start()
    try:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=120)
        stream = client.chat.completions.create(
            model="stream", messages=[{"role": "user", "content": "go on"}], max_tokens=100_000, stream=True
        )
        chunks = iter(stream)
        next(chunks)  # the stream has begun: its status went out as 200
        (pid,) = set(_engine_pids()) - before
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(openai.APIError) as caught:
            for _ in chunks:
                pass
        told = caught.value.message
        assert "crashed while generating" in told
        entry = logged.get(timeout=120)
        assert (entry.method, entry.path, entry.model) == ("POST", "/v1/chat/completions", "stream")
        assert entry.status == 500 and entry.error == told
    finally:
        server.stop()
