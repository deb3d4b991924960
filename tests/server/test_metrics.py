"""llama-server's monitoring endpoints on Callisto's server (``app.server._metrics``): ``/metrics``
counts every reply under llama-server's names (checked against the usage the replies report,
never against a clock), and ``/slots`` shows a model's slots, a busy one with its request's
progress, as the engine process's scheduler sees it. A real server on a free loopback port, a
tiny random-weight GGUF, the official openai SDK."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from tests.support.host_hold import SlotHold
from tests.support.slot_server import until

openai = pytest.importorskip("openai")

FORCED = 'root ::= "abcdefghijklmnopqrstuvwxyz abcdefghijklmnopqrstuvwxyz"'  # it surely writes
LONG = 'root ::= "' + "abcdefghij " * 40 + '"'  # a long reply: two of them surely run together
_SAMPLE = re.compile(r"^(llamacpp:[a-z_]+) (\S+)$")


@pytest.fixture
def model_path(hermes_path) -> Path:
    return hermes_path


@pytest.fixture
def serve(slot_serve):
    return slot_serve


def _metrics(server) -> dict[str, float]:
    r = httpx.get(server.url + "/metrics", timeout=60)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain; version=0.0.4")
    values: dict[str, float] = {}
    lines = r.text.splitlines()
    for i, line in enumerate(lines):
        m = _SAMPLE.match(line)
        if m is None:
            assert line.startswith(("# HELP llamacpp:", "# TYPE llamacpp:")), line
            continue
        name = m.group(1)
        # each sample after its HELP and TYPE lines, as Prometheus's text format has them
        assert lines[i - 2].startswith(f"# HELP {name} ") and lines[i - 1] in (
            f"# TYPE {name} counter",
            f"# TYPE {name} gauge",
        )
        values[name.removeprefix("llamacpp:")] = float(m.group(2))
    return values


def test_metrics_count_every_reply_as_its_usage_says(serve, model_path):
    server = serve(2)
    before = _metrics(server)
    assert set(before) >= {
        "prompt_tokens_total",
        "prompt_tokens_cached_total",
        "prompt_seconds_total",
        "tokens_predicted_total",
        "tokens_predicted_seconds_total",
        "n_tokens_max",
        "n_decode_total",
        "n_busy_slots_per_decode",
        "spec_decode_num_draft_tokens_total",
        "spec_decode_num_accepted_tokens_total",
        "prompt_tokens_seconds",
        "predicted_tokens_seconds",
        "requests_processing",
        "requests_deferred",
    }
    assert all(v == 0 for v in before.values()), before
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=120)
    model = model_path.stem
    usages = []
    for prompt in ("hello there", "hello there, again", "a b c"):  # the second reuses a prefix
        r = client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": prompt}], max_tokens=12, temperature=0
        )
        usages.append(r.usage)
    r = client.completions.create(model=model, prompt="the quick brown fox", max_tokens=9, temperature=0)
    usages.append(r.usage)
    after = _metrics(server)
    prompt = sum(u.prompt_tokens for u in usages)
    written = sum(u.completion_tokens for u in usages)
    assert after["prompt_tokens_total"] + after["prompt_tokens_cached_total"] == prompt
    assert after["prompt_tokens_cached_total"] > 0  # the shared start of the first two prompts
    assert after["tokens_predicted_total"] == written > 0
    assert after["n_tokens_max"] == max(u.prompt_tokens + u.completion_tokens for u in usages)
    assert after["prompt_seconds_total"] > 0 and after["tokens_predicted_seconds_total"] > 0
    assert after["prompt_tokens_seconds"] > 0 and after["predicted_tokens_seconds"] > 0
    assert after["requests_processing"] == 0 and after["requests_deferred"] == 0
    # every llama_decode of the engine, as its scheduler counted them; one reply at a time: one a decode
    stats = server.host.model(model_path).backend.scheduler_stats()
    assert after["n_decode_total"] == stats["decode_calls"] >= len(usages)
    assert after["n_busy_slots_per_decode"] == 1.0
    # a model unloaded keeps its counts (its engine's decodes happened), and is let go
    assert server.host.unload(model_path)
    assert until(lambda: server.host.model(model_path) is None)
    unloaded = _metrics(server)
    assert (
        unloaded["n_decode_total"] == after["n_decode_total"] and unloaded["n_busy_slots_per_decode"] == 1.0
    )
    assert server.state.metrics._backends == {}


def test_decodes_that_batch_requests_hold_more_than_one_slot_each(serve, model_path):
    """llama-server's batching gauge: requests that run together share decodes, so a decode holds
    more than one of them on average; a one-slot engine's decodes each hold one."""
    import threading

    from tests.support.host_hold import hold

    server = serve(2)
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=120)
    model = model_path.stem
    replies: list[int] = []

    def ask(prompt: str) -> None:
        r = client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": prompt}],
            max_tokens=600,
            extra_body={"grammar": LONG},
        )
        replies.append(r.usage.completion_tokens)

    release = hold(server.host)  # both wait together, then start together
    threads = [threading.Thread(target=ask, args=(p,), daemon=True) for p in ("hello there", "a b c")]
    for t in threads:
        t.start()
    assert until(lambda: server.host.pending == 2)
    release.set()
    for t in threads:
        t.join(120)
    assert len(replies) == 2 and all(replies)
    after = _metrics(server)
    stats = server.host.model(model_path).backend.scheduler_stats()
    assert stats["max_seqs_in_batch"] == 2 and after["n_decode_total"] == stats["decode_calls"]
    shared = stats["busy_slots"] / stats["decode_calls"]  # (the exposition writes 6 digits)
    assert after["n_busy_slots_per_decode"] == pytest.approx(shared, rel=1e-5) and shared > 1.0

    one = serve(1)  # no scheduler: the engine's own decodes, one generation each
    one_client = openai.OpenAI(base_url=one.url + "/v1", api_key="none", max_retries=0, timeout=120)
    one_client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "hi"}],
        max_tokens=8,
        extra_body={"grammar": FORCED},
    )
    counted = _metrics(one)
    assert counted["n_decode_total"] >= 2 and counted["n_busy_slots_per_decode"] == 1.0


def test_slots_show_each_slot_and_a_busy_ones_request(serve, model_path):
    server = serve(2)
    url = server.url + "/slots"
    idle = httpx.get(url, timeout=60).json()
    assert idle == [
        {"id": 0, "n_ctx": 512, "speculative": True, "is_processing": False},
        {"id": 1, "n_ctx": 512, "speculative": True, "is_processing": False},
    ]
    first = SlotHold(model_path, prompt="hello there", max_tokens=80, grammar=FORCED).submit(server.host)
    try:
        assert first.streaming.wait(SlotHold.WAIT) and first.error is None
        states = httpx.get(url, timeout=60).json()
        busy = [s for s in states if s["is_processing"]]
        assert len(busy) == 1 and len(states) == 2
        (slot,) = busy
        n_prompt = len(server.host.model(model_path).tokenize("hello there"))
        assert slot["n_prompt_tokens"] == n_prompt
        assert slot["n_prompt_tokens_processed"] + slot["n_prompt_tokens_cache"] == n_prompt
        assert slot["params"]["n_predict"] == 80 and isinstance(slot["id_task"], int)
        (progress,) = slot["next_token"]
        assert progress["n_decoded"] >= 1 and progress["n_decoded"] + progress["n_remain"] == 80
        assert httpx.get(url, params={"fail_on_no_slot": "1"}, timeout=60).status_code == 200
        second = SlotHold(model_path, prompt="a b c", max_tokens=80, grammar=FORCED).submit(server.host)
        try:
            assert second.streaming.wait(SlotHold.WAIT) and second.error is None
            assert all(s["is_processing"] for s in httpx.get(url, timeout=60).json())
            full = httpx.get(url, params={"fail_on_no_slot": "1"}, timeout=60)
            assert full.status_code == 503 and "no slot available" in full.json()["error"]["message"]
            assert _metrics(server)["requests_processing"] == 2
        finally:
            second.release.set()
    finally:
        first.release.set()
    assert first.ended.wait(SlotHold.WAIT) and second.ended.wait(SlotHold.WAIT)
    assert until(lambda: not any(s["is_processing"] for s in httpx.get(url, timeout=60).json()))


def test_slots_of_a_model_not_loaded_and_of_an_unknown_one(serve, model_path):
    server = serve(3, preload=False)
    states = httpx.get(server.url + "/slots", params={"model": model_path.stem}, timeout=60).json()
    assert [s["id"] for s in states] == [0, 1, 2] and not any(s["is_processing"] for s in states)
    assert server.host.model(model_path) is None  # asking loads nothing
    assert httpx.get(server.url + "/slots", params={"model": "nope"}, timeout=60).status_code == 404
