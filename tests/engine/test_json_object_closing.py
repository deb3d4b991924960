"""``json_object`` replies end as whole JSON within their token limit (issue 32, Must show 4):
the closer completes every start of a compact JSON object, and a real model held to
``json_object`` ends with ``stop`` and a valid object at every budget, whatever it samples."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import generate, load_model
from app.engine.constraints import compile_constraint
from app.engine.constraints.json_object import JSON_OBJECT_WIDTH, json_closer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**15), 10**15),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    _text,
)
_value = st.recursive(
    _scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_object = st.dictionaries(st.text(min_size=1, max_size=8), _value, max_size=JSON_OBJECT_WIDTH)


def _compact(value: object, ascii_only: bool) -> bytes:
    return json.dumps(value, separators=(", ", ": "), ensure_ascii=ascii_only).encode()


@settings(deadline=None)  # each example closes every prefix of its text: no wall-clock bound
@given(_object, st.booleans())
def test_every_start_of_an_object_is_closed_as_an_object(value, ascii_only):
    data = _compact(value, ascii_only)
    assert json_closer(data) == b""
    for cut in range(len(data)):
        start = data[:cut]
        tail = json_closer(start)
        assert tail is not None, start
        whole = json.loads((start + tail).decode("utf-8"))
        assert isinstance(whole, dict)


@pytest.mark.parametrize(
    "text", [b"[1", b'{"a": 1}x', b'{"a" : 1', b'{"a":1', b'{"a": 1,2', b'{"a": "\x01', b'{"": 1}', b"{}}"]
)
def test_what_is_not_the_start_of_a_compact_object_is_left_alone(text):
    assert json_closer(text) is None


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from app.engine.models.tiny import write_tiny_gguf

    path = write_tiny_gguf(tmp_path_factory.mktemp("closing") / "tiny.gguf", seed=11)
    m = load_model(path, n_ctx=1024, n_threads=1)
    yield m
    m.close()


@pytest.mark.parametrize("max_tokens", [3, 8, 20, 64, 150])
def test_a_json_object_reply_ends_whole_within_its_limit_whatever_is_sampled(model, max_tokens):
    """A random-weights model writes whatever the grammar lets it; however it goes, the reply is
    closed in time: ``stop``, a valid object, no more tokens than asked."""
    c = compile_constraint(model, family=None, tools=None, response_format={"type": "json_object"})
    prompt = model.tokenize("{")
    for seed in range(6):
        res = generate(
            model,
            prompt,
            max_tokens=max_tokens,
            constraint=c,
            stop=(),
            sampling={"temperature": 1.5, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "seed": seed},
        ).run()
        assert res.finish_reason == "stop", (max_tokens, seed, res.text)
        assert isinstance(json.loads(res.text), dict)
        assert res.generated_tokens < max_tokens
