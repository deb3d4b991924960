"""The server's request fuzzing, kept in the suite: property-based tests (hypothesis) against the
real server on a loopback port.

Each example takes a valid request for one of the seven POST endpoints and puts hostile values
into its fields (top-level and nested: wrong types, null, NaN, infinities, integers past 64 bits
and past Python's 4300-digit limit, lone surrogates, NUL, deep and wide nesting, unknown fields),
or sends bytes that are not JSON at all. Whatever it holds, the answer is a status the API defines
for it (200, 400, 404, 413), never a 500; an error comes in its API's shape with a short message
(a client's value is never echoed whole); a 200 is valid UTF-8. The server still answers a plain
request after all of them.

Examples are derandomized and no example database is kept, so every run sends the same requests.
``make test`` runs :data:`EXAMPLES` of each (fewer under ``--hypothesis-profile=fast``); the slow
tier (``-m slow``) runs :data:`SLOW_EXAMPLES`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.server.conftest import TOOLS, write_loop_model
from tests.server.test_hostile import check_shape

EXAMPLES = min(40, settings.default.max_examples)
SLOW_EXAMPLES = 400
ALLOWED = {200, 400, 404, 413}
MAX_MESSAGE = 2000


def fuzz(n: int) -> settings:
    return settings(
        max_examples=n,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


U = [{"role": "user", "content": "hi"}]
BASE: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": {"model": "loop-hermes", "max_tokens": 8, "messages": U, "tools": TOOLS},
    "/v1/completions": {"model": "loop-hermes", "max_tokens": 8, "prompt": "hi"},
    "/v1/messages": {"model": "loop-hermes", "max_tokens": 8, "messages": U},
    "/v1/messages/count_tokens": {"model": "loop-hermes", "messages": U},
    "/api/chat": {"model": "loop-hermes", "stream": False, "messages": U, "options": {"num_predict": 8}},
    "/api/generate": {"model": "loop-hermes", "stream": False, "prompt": "hi", "options": {"num_predict": 8}},
    "/api/show": {"model": "loop-hermes"},
    "/v1/embeddings": {"model": "loop-hermes", "input": ["hi", "there"]},
    "/completion": {"model": "loop-hermes", "n_predict": 8, "prompt": "hi"},
    "/v1/rerank": {"model": "loop-hermes", "query": "hi", "documents": ["a", "b"]},
    "/tokenize": {"model": "loop-hermes", "content": "hi", "with_pieces": True},
    "/detokenize": {"model": "loop-hermes", "tokens": [104, 105]},
    "/apply-template": {"model": "loop-hermes", "messages": U, "tools": TOOLS},
    "/infill": {"model": "loop-hermes", "n_predict": 8, "input_prefix": "a", "input_suffix": "b"},
    "/v1/responses": {
        "model": "loop-hermes",
        "max_output_tokens": 8,
        "input": U,
        "tools": [{"type": "function", **TOOLS[0]["function"]}],
    },
    "/api/embed": {"model": "loop-hermes", "input": ["hi", "there"]},
    "/api/embeddings": {"model": "loop-hermes", "prompt": "hi"},
    "/api/v1/chat": {
        "model": "loop-hermes",
        "max_output_tokens": 8,
        "input": "hi",
        "system_prompt": "Be brief.",
    },
    "/api/v0/chat/completions": {"model": "loop-hermes", "max_tokens": 8, "messages": U},
    "/api/create": {"model": "made", "from": "loop-hermes", "stream": False, "system": "Be brief."},
    "/api/copy": {"source": "loop-hermes", "destination": "copied"},
}
# the fields each endpoint reads, and paths into the nested ones
FIELDS: dict[str, list[tuple[Any, ...]]] = {
    "/v1/chat/completions": [
        (k,)
        for k in (
            "model messages tools tool_choice max_tokens max_completion_tokens temperature top_p n "
            "stream stream_options stop seed response_format parallel_tool_calls frequency_penalty "
            "presence_penalty logit_bias user top_k min_p typical_p repeat_penalty repetition_penalty "
            "mirostat mirostat_tau mirostat_eta logprobs top_logprobs prediction functions function_call "
            "guided_json guided_regex guided_choice guided_grammar structured_outputs grammar json_schema "
            "continue_final_message add_generation_prompt chat_template"
        ).split()
    ]
    + [
        ("messages", 0),
        ("messages", 0, "role"),
        ("messages", 0, "content"),
        ("tools", 0),
        ("tools", 0, "type"),
        ("tools", 0, "function"),
        ("tools", 0, "function", "name"),
        ("tools", 0, "function", "parameters"),
        ("tools", 0, "function", "parameters", "properties"),
    ],
    "/v1/completions": [
        (k,) for k in "model prompt max_tokens echo stream stop temperature seed logprobs logit_bias".split()
    ]
    + [("prompt", 0)],
    "/v1/messages": [
        (k,)
        for k in (
            "model max_tokens messages system tools tool_choice stop_sequences temperature top_p top_k "
            "stream thinking metadata"
        ).split()
    ]
    + [("messages", 0, "role"), ("messages", 0, "content"), ("tool_choice", "type")],
    "/v1/messages/count_tokens": [(k,) for k in "model messages system tools".split()],
    "/api/chat": [
        (k,)
        for k in "model messages tools stream format options think keep_alive logprobs top_logprobs".split()
    ]
    + [
        ("options", k)
        for k in (
            "num_predict temperature top_k top_p seed stop num_ctx min_p typical_p repeat_penalty "
            "presence_penalty frequency_penalty mirostat mirostat_tau mirostat_eta"
        ).split()
    ]
    + [("messages", 0, "role"), ("messages", 0, "content")],
    "/api/generate": [
        (k,) for k in "model prompt system stream format options raw think context suffix template".split()
    ]
    + [("options", k) for k in "num_predict temperature seed stop".split()],
    "/api/show": [(k,) for k in "model name verbose".split()],
    "/v1/rerank": [(k,) for k in "model query documents top_n return_documents".split()] + [("documents", 0)],
    "/tokenize": [(k,) for k in "model content add_special parse_special with_pieces".split()],
    "/detokenize": [(k,) for k in "model tokens".split()] + [("tokens", 0)],
    "/apply-template": [
        (k,) for k in "model messages tools tool_choice chat_template chat_template_kwargs".split()
    ]
    + [("messages", 0), ("messages", 0, "role"), ("messages", 0, "content"), ("tools", 0, "function")],
    "/completion": [
        (k,)
        for k in "model prompt n_predict stream stop temperature top_k seed grammar response_fields n_probs logit_bias".split()
    ],
    "/infill": [
        (k,)
        for k in "model input_prefix input_suffix input_extra prompt n_predict stream response_fields".split()
    ]
    + [("input_extra", 0)],
    "/v1/embeddings": [(k,) for k in "model input encoding_format dimensions user ttl".split()]
    + [("input", 0)],
    "/v1/responses": [
        (k,)
        for k in (
            "model input instructions tools tool_choice max_output_tokens temperature top_p stream "
            "parallel_tool_calls max_tool_calls reasoning text previous_response_id background store include "
            "top_logprobs"
        ).split()
    ]
    + [
        ("input", 0),
        ("input", 0, "role"),
        ("input", 0, "content"),
        ("tools", 0),
        ("tools", 0, "name"),
        ("tools", 0, "parameters"),
        ("text", "format"),
    ],
    "/api/embed": [(k,) for k in "model input truncate dimensions options keep_alive".split()]
    + [("input", 0), ("options", "num_ctx")],
    "/api/embeddings": [(k,) for k in "model prompt options keep_alive".split()],
    "/api/v1/chat": [
        (k,)
        for k in (
            "model input system_prompt integrations stream temperature top_p top_k min_p repeat_penalty "
            "max_output_tokens reasoning context_length store previous_response_id ttl"
        ).split()
    ]
    + [("input", 0), ("input", 0, "type"), ("input", 0, "content"), ("input", 0, "data_url")],
    "/api/v0/chat/completions": [(k,) for k in "model messages max_tokens stream temperature".split()]
    + [("messages", 0, "content")],
    "/api/create": [
        (k,) for k in "model from files system template parameters messages license stream".split()
    ]
    + [
        ("parameters", "temperature"),
        ("parameters", "num_predict"),
        ("messages", 0),
        ("files", "model.gguf"),
    ],
    "/api/copy": [(k,) for k in "source destination".split()],
}
HUGE = "\x00huge-int\x00"  # replaced by an integer of 5000 digits once the body is JSON text
LONG = "\x00long-text\x00"  # replaced by a string of 100,000 characters

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([0, -1, 1, 2**31, 2**63, -(2**63) - 1, 2**64, 10**30, 10**300, HUGE]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["", "\ud800", "\udfff\ud800", "\x00", "\u202eevil", "\ufeff", "loop-hermes", LONG]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)


def _put(body: Any, path: tuple[Any, ...], value: Any) -> None:
    """Set ``body[path]`` where the path still leads somewhere (a fuzzed parent may not)."""
    node = body
    for key in path[:-1]:
        if isinstance(node, dict) and isinstance(key, str) and key in node:
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
        else:
            return
    last = path[-1]
    if isinstance(node, dict) and isinstance(last, str):
        node[last] = value
    elif isinstance(node, list) and isinstance(last, int) and last < len(node):
        node[last] = value


@st.composite
def requests(draw) -> tuple[str, bytes]:
    path = draw(st.sampled_from(sorted(BASE)))
    body = json.loads(json.dumps(BASE[path]))
    for field in draw(st.lists(st.sampled_from(FIELDS[path]), min_size=1, max_size=3)):
        _put(body, field, draw(values))
    if draw(st.booleans()):
        body[draw(st.text(min_size=1, max_size=12))] = draw(values)  # a field no endpoint reads
    text = json.dumps(body, allow_nan=True)
    text = text.replace(json.dumps(HUGE), "9" * 5000).replace(json.dumps(LONG), json.dumps("x" * 100_000))
    raw = text.encode("utf-8")
    cut = draw(st.one_of(st.none(), st.integers(min_value=0, max_value=len(raw))))
    if cut is not None:  # a body cut short: not JSON
        raw = raw[:cut]
    return path, raw


@st.composite
def raw_requests(draw) -> tuple[str, bytes]:
    path = draw(st.sampled_from(sorted(BASE)))
    raw = draw(
        st.one_of(
            st.binary(max_size=200),
            st.sampled_from(
                [b"[" * 5000, b'{"a":' * 5000, b"\xff\xfe{}", b"\xef\xbb\xbf{}", b"null", b"1e999999", b"-"]
            ),
        )
    )
    return path, raw


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Any]:
    from app.server import ApiServer, ServerConfig

    loop = write_loop_model(tmp_path_factory.mktemp("fuzz"))
    srv = ApiServer(
        ServerConfig(
            port=0,
            models=[str(loop)],
            use_library=False,
            n_ctx=2048,
            n_threads=1,
            max_tokens_limit=16,
            max_body_bytes=256 * 1024,
        )
    )
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def http(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=120) as client:
        yield client


def check_answer(http: httpx.Client, path: str, raw: bytes) -> None:
    r = http.post(path, content=raw, headers={"Content-Type": "application/json"})
    event(f"HTTP {r.status_code}")  # --hypothesis-show-statistics: how the examples were answered
    assert r.status_code in ALLOWED, (r.status_code, r.text[:2000])
    if r.status_code == 200:
        text = r.content.decode("utf-8")  # valid UTF-8, streamed or not
        kind = r.headers.get("content-type", "")
        if kind.startswith("application/json"):
            json.loads(text)
        elif kind.startswith("application/x-ndjson"):  # Ollama's stream: a JSON object a line
            for line in filter(None, text.splitlines()):
                json.loads(line)
        return
    message = check_shape(path, r.json())
    assert message and len(message) <= MAX_MESSAGE, message[:3000]


@given(requests())
@fuzz(EXAMPLES)
def test_fuzzed_fields_get_a_defined_answer(http, case):
    check_answer(http, *case)


@given(raw_requests())
@fuzz(EXAMPLES)
def test_fuzzed_bytes_get_a_defined_answer(http, case):
    check_answer(http, *case)


@pytest.mark.slow
@given(requests())
@fuzz(SLOW_EXAMPLES)
def test_fuzzed_fields_get_a_defined_answer_slow(http, case):
    check_answer(http, *case)


@pytest.mark.slow
@given(raw_requests())
@fuzz(SLOW_EXAMPLES)
def test_fuzzed_bytes_get_a_defined_answer_slow(http, case):
    check_answer(http, *case)


def test_still_answers_after_the_fuzzing(http):
    for path, body in BASE.items():
        r = http.post(path, json=body)
        if path == "/infill":  # the loop model has no FIM tokens: its defined answer says so
            assert r.status_code == 400 and r.json()["error"]["code"] == "insert_not_supported", r.text
            continue
        if path == "/v1/rerank":  # nor a relevance head
            assert r.status_code == 400 and r.json()["error"]["code"] == "model_cannot_embed", r.text
            continue
        assert r.status_code == 200, (path, r.text[:500])
