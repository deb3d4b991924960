"""Issue 31: ``serve --parallel N``: concurrent requests on one model stream side by side in the
engine process's slots (``app.engine.scheduler``), through the real server on a free loopback port,
with the official openai SDK on threads. Batching is shown by the scheduler's counts, never by time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.engine.host import Job
from tests.support.host_hold import hold
from tests.support.slot_server import until

openai = pytest.importorskip("openai")

PROMPTS = ["hello there", "a b c d e f", "the quick brown fox", "zz yy xx"]
WAIT = 120.0
_HELD: list[threading.Event] = []  # held slots, released when a test ends (a failed one too)


@pytest.fixture
def model_path(hermes_path) -> Path:
    return hermes_path


@pytest.fixture
def serve(slot_serve) -> Iterator:
    yield slot_serve
    for ev in _HELD:  # (before the servers stop)
        ev.set()
    _HELD.clear()


def _client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=WAIT)


def _ask(client, model: str, prompt: str, max_tokens: int) -> str:
    r = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": prompt}],
        max_tokens=max_tokens,
        temperature=0,
    )
    return r.choices[0].message.content or ""


def _stream(client, model: str, prompt: str, max_tokens: int):
    return client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": prompt}],
        max_tokens=max_tokens,
        temperature=0,
        stream=True,
    )


def _held_slot(server, model_path: Path) -> tuple[threading.Event, threading.Event]:
    """A batchable job on the served model that holds one slot until the first event is set."""
    release, started = threading.Event(), threading.Event()

    def run(_h, _m) -> None:
        started.set()
        release.wait(WAIT)

    server.host.submit(
        Job(run=run, model=model_path, owner="server", settings=server.state.load_settings, batchable=True),
        bounded=False,
    )
    _HELD.append(release)
    assert started.wait(WAIT), "the held job did not start"
    return release, started


def test_four_concurrent_streams_are_batched_and_equal_their_greedy_replies(serve, model_path):
    server = serve(4)
    client = _client(server)
    model = model_path.stem
    listed = client.models.list().model_dump()["data"]
    card = next(m for m in listed if m["id"] == model)["callisto"]
    # each slot the whole context, not divided (and no projector: no vision)
    assert card == {"n_ctx": 512, "parallel": 4, "vision": False}
    refs = [_ask(client, model, p, 64) for p in PROMPTS]
    assert all(refs)

    release = hold(server.host)  # the four wait together, then start together
    texts: dict[int, str] = {}
    errors: dict[int, BaseException] = {}

    def run(i: int) -> None:
        try:
            texts[i] = "".join(
                (c.choices[0].delta.content or "")
                for c in _stream(client, model, PROMPTS[i], 64)
                if c.choices
            )
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors[i] = exc

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(4)]
    for t in threads:
        t.start()
    assert until(lambda: server.host.pending == 4)
    release.set()
    for t in threads:
        t.join(WAIT)
    assert not errors
    assert [texts[i] for i in range(4)] == refs
    stats = server.host.model(model_path).backend.scheduler_stats()
    assert stats["slots"] == 4 and stats["max_seqs_in_batch"] >= 2


def test_a_request_past_every_slot_and_a_full_queue_gets_429(serve, model_path):
    server = serve(2, queue_size=2)
    client = _client(server)
    model = model_path.stem
    held = [_held_slot(server, model_path) for _ in range(2)]
    assert all(started.wait(WAIT) for _, started in held)
    assert server.host.slots_busy == 2
    answers: dict[int, str] = {}

    def ask(i: int) -> None:
        answers[i] = _ask(client, model, PROMPTS[i], 4)

    waiting = [threading.Thread(target=ask, args=(0,), daemon=True)]
    waiting[0].start()  # the host takes it: it waits for a slot at the head of the queue (1 of 2)
    assert until(lambda: server.host.pending == 0 and server.host.wait_of(None).running_waits == "slot")
    waiting.append(threading.Thread(target=ask, args=(1,), daemon=True))
    waiting[1].start()  # waits behind it: the queue is full (2 slots and 2 waiting)
    assert until(lambda: server.host.pending == 1)
    with pytest.raises(openai.RateLimitError) as refused:
        _ask(client, model, PROMPTS[2], 4)
    told = refused.value.body["message"]  # type: ignore[index]
    assert until(lambda: any(e.status == 429 for e in server.log))
    assert next(e for e in server.log if e.status == 429).error == told
    assert not answers  # every slot is still taken
    for release, _ in held:
        release.set()
    for t in waiting:
        t.join(WAIT)
    assert set(answers) == {0, 1}


def test_a_disconnected_client_frees_its_slot_while_the_others_stream(serve, model_path):
    server = serve(2)
    client = _client(server)
    model = model_path.stem
    release, started = _held_slot(server, model_path)  # one slot busy for the whole test
    assert started.wait(WAIT)
    try:
        stream = _stream(client, model, PROMPTS[0], 400)
        next(iter(stream))  # it holds the second slot now
        stream.close()  # the client leaves
        assert until(lambda: any(e.finish_reason == "cancelled" for e in server.state.finished))
        # the freed slot serves the next request while the held one still streams
        assert _ask(client, model, PROMPTS[1], 4)
        assert server.host.slots_busy >= 1 and not release.is_set()
    finally:
        release.set()
    cancelled = next(e for e in server.state.finished if e.finish_reason == "cancelled")
    assert cancelled.completion_tokens < 400
