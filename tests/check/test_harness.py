"""The harness and the scorer, checked without a model's judgement: a reference target that answers every
turn with the scenario's expected calls scores 100% in process (real llama.cpp, a scripted GGUF, through
ChatSession) and through Callisto's remote client (``RemoteTarget`` on a real HTTP server on loopback); a
target that returns each kind of failure gets the right failure class, and an endpoint that refuses or
stalls gives an error row in the remote client's words."""

from __future__ import annotations

import json

import pytest

from app.check.corpus import load_corpus
from app.check.reference import ReferenceServer, expected_reply
from app.check.remote_target import RemoteTarget
from app.check.runner import read_transcript, run_check, validate_result, write_result
from app.check.scorer import FAILURE_CLASSES
from app.check.targets import InProcessTarget
from app.engine.llm import load_model
from app.engine.remote import Provider
from tests.check.reference_model import FREE_GRAMMAR, expected_replies, hermes_reply, write_reply_model

CORPUS = load_corpus()


def remote(url: str, model: str, **provider: object) -> RemoteTarget:
    """The check's endpoint target: Callisto's remote client, API tools; quick retries."""
    return RemoteTarget(Provider(url, **{"retry_backoff_s": 0.01, **provider}), model)


@pytest.fixture
def reply_models(tmp_path):
    """Factory: replies -> an InProcessTarget on a freshly written scripted model (closed afterwards)."""
    models = []

    def make(replies: list[str], name: str, n_ctx: int = 4096) -> InProcessTarget:
        path = write_reply_model(tmp_path / f"{name}-{len(models)}.gguf", replies)
        # in-process llama.cpp: one scripted model per scenario, and the harness is under test here
        # (tests/engine/test_engine_process.py tests the engine process)
        model = load_model(path, n_ctx=n_ctx, n_threads=1, isolate=False)
        models.append(model)
        return InProcessTarget(
            model, tool_format="hermes", identity={"file_name": path.name}, grammar=FREE_GRAMMAR
        )

    yield make
    for m in models:
        m.close()


def test_reference_in_process_scores_every_scenario(reply_models, tmp_path):
    result = run_check(
        lambda s: reply_models(expected_replies(s), s.id), list(CORPUS.scenarios), corpus_sha256=CORPUS.sha256
    )
    failed = [
        (r["id"], r["failure_class"], r["message"]) for r in result["results"] if r["outcome"] != "pass"
    ]
    assert failed == []
    assert result["summary"]["score"] == 1.0 and result["summary"]["total"] == len(CORPUS.scenarios)
    assert validate_result(result) == []
    out = tmp_path / "ref.json"
    write_result(result, out)
    data = json.loads(out.read_text(encoding="utf-8"))
    data["_path"] = str(out)
    row = next(r for r in data["results"] if r["id"] == "multi-three-steps")
    transcript, intact = read_transcript(data, row)
    assert intact and len(transcript["replies"]) == 3
    assert (
        "TRK" not in transcript["prompts"][0] and "7310" in transcript["prompts"][1]
    )  # results were fed back


def test_reference_endpoint_scores_every_scenario_and_redacts_the_key(tmp_path):
    with ReferenceServer(CORPUS) as srv:
        target = remote(srv.url, "reference", api_key="sk-secret-123")
        result = run_check(target, list(CORPUS.scenarios), corpus_sha256=CORPUS.sha256)
        target.close()
        assert {r["headers"].get("Authorization") for r in srv.requests} == {"Bearer sk-secret-123"}
        bodies = [r["body"] for r in srv.requests]
    assert [r["id"] for r in result["results"] if r["outcome"] != "pass"] == []
    assert validate_result(result) == [] and result["target"]["kind"] == "remote"
    assert all(b["temperature"] == 0 and b["seed"] == 0 for b in bodies)  # greedy by default
    # tool_choice none: the remote client sends the conversation without its tools
    prompts_none = {s.prompt for s in CORPUS.scenarios if s.tool_choice == "none"}
    none_bodies = [b for b in bodies if b["messages"][-1].get("content") in prompts_none]
    assert none_bodies and all("tools" not in b and "tool_choice" not in b for b in none_bodies)
    assert any(b.get("tool_choice") == {"type": "function", "function": {"name": "get_time"}} for b in bodies)
    assert any(b.get("tool_choice") == "required" for b in bodies)
    # streaming scenarios: each streamed reply is asked for once more without streaming
    assert any(b["stream"] is False for b in bodies) and any(b["stream"] is True for b in bodies)
    write_result(result, tmp_path / "ep.json")
    everything = b"".join(p.read_bytes() for p in (tmp_path / "ep.transcripts").iterdir())
    assert b"sk-secret-123" not in everything and b"[redacted]" in everything
    assert (tmp_path / "ep.json").read_text().count("sk-secret") == 0


# -- each failure kind ----------------------------------------------------------------------------------

REC = "single-string-opaque-id"  # fetch_record(record_id="REC-4417"), search_docs offered too
GOOD = {"name": "fetch_record", "arguments": {"record_id": "REC-4417"}}

ENDPOINT_FAULTS = [
    (REC, {"content": "I would rather not."}, "no_call"),
    (REC, {"tool_calls": [{"name": "search_docs", "arguments": {"query": "REC-4417"}}]}, "wrong_tool"),
    (
        REC,
        {"tool_calls": [{"name": "fetch_record", "arguments": {"record_id": "REC-4418"}}]},
        "bad_arguments",
    ),
    (
        REC,
        {"tool_calls": [{"name": "fetch_record", "arguments": '{"record_id": "REC-4417"'}]},
        "bad_arguments",
    ),
    # one call more than asked (an identical repeat now ends the reply and is not run again)
    (
        REC,
        {"tool_calls": [GOOD, {"name": "fetch_record", "arguments": {"record_id": "REC-9999"}}]},
        "extra_call",
    ),
    (
        "neg-general-knowledge",
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
        "extra_call",
    ),
    (
        REC,
        {
            "content": '<tool_call>\n{"name": "fetch_record", "arguments": {"record_id": "REC-4417"}}\n</tool_call>'
        },
        "unparsed_tool_call",
    ),
    (
        REC,
        {
            "reasoning": 'I will call {"name": "fetch_record", "arguments": {"record_id": "REC-4417"}}',
            "content": "Done.",
        },
        "call_in_reasoning",
    ),
    (REC, {"content": "<|im_end|>", "tool_calls": [GOOD]}, "marker_leak"),
    (
        "stream-single-string",
        {
            "tool_calls": [{"name": "fetch_record", "arguments": {"record_id": "REC-5150"}}],
            "stream_tool_calls": [{"name": "fetch_record", "arguments": {"record_id": "REC-51"}}],
        },
        "stream_mismatch",
    ),
    (REC, {"content": ""}, "empty_response"),
    (REC, {"status": 500, "error": "the model crashed"}, "error"),
]


def test_endpoint_faults_cover_every_failure_class():
    assert {f[2] for f in ENDPOINT_FAULTS} == set(FAILURE_CLASSES)


@pytest.mark.parametrize(
    "scenario_id, reply, expected",
    ENDPOINT_FAULTS,
    ids=[f"{f[2]}-{i}" for i, f in enumerate(ENDPOINT_FAULTS)],
)
def test_endpoint_failure_gets_its_class(scenario_id, reply, expected):
    scenario = CORPUS.by_id(scenario_id)
    with ReferenceServer(CORPUS, reply_for=lambda s, t, body: reply) as srv:
        target = remote(srv.url, "faulty")
        result = run_check(target, [scenario])
        target.close()
    row = result["results"][0]
    assert (row["outcome"], row["failure_class"]) == ("error" if expected == "error" else "fail", expected)
    if expected == "error":  # the remote client's sentence, with what the server said
        assert "server error (HTTP 500)" in row["message"] and "the model crashed" in row["message"]
    if expected == "stream_mismatch":
        assert "REC-51" in row["message"] and "without streaming" in row["message"]
    assert validate_result(result) == []
    if expected == "bad_arguments" and isinstance(reply["tool_calls"][0]["arguments"], dict):
        assert row["detail"] == {
            "key": "record_id",
            "expected": "REC-4417",
            "got": "REC-4418",
            "problem": "record_id: wrong value",
        }
    if expected in ("unparsed_tool_call", "call_in_reasoning"):
        assert '"name": "fetch_record"' in row["detail"]["bytes"]  # the bytes are shown


def test_multi_turn_failure_names_the_turn():
    def reply(s, turn, body):
        if turn == 0:
            return expected_reply(s, 0)
        return {"tool_calls": [{"name": "track_package", "arguments": {"tracking_id": "ORD-5521"}}]}

    with ReferenceServer(CORPUS, reply_for=reply) as srv:
        target = remote(srv.url, "faulty")
        result = run_check(target, [CORPUS.by_id("multi-order-then-track")])
        target.close()
        tool_msg = srv.requests[-1]["body"]["messages"][-1]
    row = result["results"][0]
    assert (row["failure_class"], row["turn"], row["detail"]["got"]) == ("bad_arguments", 2, "ORD-5521")
    assert tool_msg["role"] == "tool" and "TRK-88Q2" in tool_msg["content"]


def test_unreachable_endpoint_is_an_error_not_a_crash():
    import socket
    import time

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    target = remote(f"http://127.0.0.1:{port}/v1", "nobody", timeout_s=2)
    t0 = time.monotonic()
    result = run_check(target, [CORPUS.by_id(REC), CORPUS.by_id("neg-general-knowledge")])
    elapsed = time.monotonic() - t0
    target.close()
    rows = result["results"]
    assert [r["failure_class"] for r in rows] == ["error", "error"]  # every scenario, none crashed
    assert all(f"Could not connect to http://127.0.0.1:{port}" in r["message"] for r in rows)
    assert all("tried 3 times" in r["message"] for r in rows)  # bounded retries, then the error
    assert elapsed < 30  # a refused port fails at once: no wait for a timeout (a loose bound)
    assert validate_result(result) == []


def test_an_endpoint_that_stalls_times_out_into_an_error_row():
    import threading

    release = threading.Event()

    def stall(s, turn, body):
        release.wait(10)
        return expected_reply(s, turn)

    with ReferenceServer(CORPUS, reply_for=stall) as srv:
        target = remote(srv.url, "stalled", timeout_s=0.5, max_retries=0)
        result = run_check(target, [CORPUS.by_id(REC), CORPUS.by_id("neg-general-knowledge")])
        release.set()
        target.close()
    rows = result["results"]
    assert [(r["outcome"], r["failure_class"]) for r in rows] == [("error", "error")] * 2
    assert all("did not answer in time" in r["message"] for r in rows)
    assert validate_result(result) == []


IN_PROCESS_FAULTS = [
    (REC, ["I would rather not."], "no_call"),
    (REC, [hermes_reply([("search_docs", {"query": "REC-4417"})])], "wrong_tool"),
    (REC, [hermes_reply([("fetch_record", {"record_id": 4417})])], "bad_arguments"),
    (
        REC,
        [
            hermes_reply(
                [("fetch_record", {"record_id": "REC-4417"}), ("fetch_record", {"record_id": "REC-9999"})]
            )
        ],
        "extra_call",
    ),
    (
        REC,
        ['<tool_call>\n{"name": "fetch_record", "arguments": {"record_id": REC-4417}}\n</tool_call>'],
        "unparsed_tool_call",
    ),
    (
        REC,
        [
            '<think>I will write <tool_call>\n{"name": "fetch_record", "arguments": {"record_id": "REC-4417"}}'
            "\n</tool_call> here.</think>Done."
        ],
        "call_in_reasoning",
    ),
    (REC, ["<|python_tag|> " + hermes_reply([("fetch_record", {"record_id": "REC-4417"})])], "marker_leak"),
    (REC, [""], "empty_response"),
]


@pytest.mark.parametrize(
    "scenario_id, replies, expected", IN_PROCESS_FAULTS, ids=[f[2] for f in IN_PROCESS_FAULTS]
)
def test_in_process_failure_gets_its_class(reply_models, scenario_id, replies, expected):
    result = run_check(reply_models(replies, expected), [CORPUS.by_id(scenario_id)])
    row = result["results"][0]
    assert (row["outcome"], row["failure_class"]) == ("fail", expected), row["message"]


def test_in_process_error_when_the_prompt_does_not_fit(reply_models):
    target = reply_models(expected_replies(CORPUS.by_id(REC)), "overflow", n_ctx=256)
    result = run_check(target, [CORPUS.by_id(REC)])
    row = result["results"][0]
    assert (row["outcome"], row["failure_class"]) == ("error", "error")
    assert "context" in row["message"].lower() or "prompt" in row["message"].lower()


def test_credentials_in_urls_and_headers_are_redacted():
    from app.check.targets import redact_headers, redact_url

    url = redact_url("https://user:pw@api.example/v1/chat/completions?api_key=sk-1&mode=x&token=t")
    assert "pw" not in url and "sk-1" not in url and "token=%5Bredacted%5D" in url and "mode=x" in url
    headers = redact_headers(
        {"Authorization": "Bearer sk-2", "X-Api-Key": "k", "Accept": "echo sk-2"}, ("sk-2",)
    )
    assert headers == {"Authorization": "[redacted]", "X-Api-Key": "[redacted]", "Accept": "echo [redacted]"}


def test_an_answer_that_quotes_a_call_where_no_call_is_right_still_passes():
    """Explaining a tool may show how it is called; only a real call (or a call marker) fails the cell."""
    scenario = CORPUS.by_id("neg-explain-tool")
    quoting = {
        "content": 'It returns the weather: get_weather(city="Oslo") or {"name": "get_weather"} would ask.'
    }
    marker = {"content": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'}
    for reply, expected in ((quoting, None), (marker, "unparsed_tool_call")):
        with ReferenceServer(CORPUS, reply_for=lambda s, t, b, r=reply: r) as srv:
            target = remote(srv.url, "m")
            result = run_check(target, [scenario])
            target.close()
        assert result["results"][0]["failure_class"] == expected
