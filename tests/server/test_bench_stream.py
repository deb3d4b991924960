"""Figure 8's client (bench.api_server.stream_chat) reads a real stream from the server: tokens from
the usage chunk, the first and last content chunks, and a failure is counted, not raised. No timing
is asserted."""

from __future__ import annotations

from bench.api_server import stream_chat


def test_stream_chat_reads_a_real_stream(family_server):
    run = stream_chat(family_server.url, "hello", max_tokens=4, model="call-llama3")
    assert run.error is None and run.tokens >= 1 and run.wall_s >= run.ttft_s >= 0


def test_stream_chat_counts_a_failure(family_server):
    run = stream_chat(family_server.url, "hello", max_tokens=4, model="no-such-model")
    assert run.error is not None and "404" in run.error and run.tokens == 0
