"""llama-server's own API: ``/infill`` (what the llama.vim and llama.vscode editor plugins send) and
``/completion``. Real servers on free loopback ports, real engine processes, scripted GGUFs with a
byte vocabulary (a text's tokens are its bytes, so a prompt's layout shows in its token count):
one with FIM and repository tokens (Qwen2.5-Coder's), one with FIM tokens only, one with none.
Each answers "Z" after FIM-middle."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.engine.generation import SNIPPET_SEPARATOR
from tests.server.test_idle_ttl import FakeClock, _server
from tests.ui.scripted_gguf import CHATML, streaming_script, write_scripted_gguf

FIM = ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>")
REPO = ("<|repo_name|>", "<|file_sep|>")
N_CTX = 2048
PREFIX = "def area(r):\n"
CURSOR = "    return "
SUFFIX = "\n\nprint(area(2))\n"
FILES = [
    {"filename": "geometry/consts.py", "text": "PI = 3.14159\n"},
    {"filename": "util.py", "text": "x = 1\n"},
]


def _b(text: str) -> int:
    return len(text.encode())


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[object]:
    folder = tmp_path_factory.mktemp("llamacpp")

    def coder(name: str, control: tuple[str, ...]) -> Path:
        return write_scripted_gguf(
            folder / f"{name}.gguf",
            chat_template=CHATML,
            script={FIM[2]: "Z", "Z": "<|im_end|>"},
            default_next="a",
            control_tokens=("<|im_start|>", "<|im_end|>", *control),
        )

    models: dict[str, Path] = {
        "repo-coder": coder("repo-coder", (*FIM, *REPO)),
        "coder": coder("coder", FIM),
        "chat": write_scripted_gguf(
            folder / "chat.gguf", chat_template=CHATML, script=streaming_script(), default_next="a"
        ),
    }
    yield from _server(models, FakeClock(), n_ctx=N_CTX)


def _post(server, path: str, **body) -> httpx.Response:
    return httpx.post(server.url + path, json=body, timeout=120)


def test_infill_as_llama_vim_sends_it(server):
    """The editor's fields: the lines before the cursor's, the cursor's line up to it, the rest, and
    chunks of other files; with the model's repository tokens the files go in as a repository."""
    r = _post(
        server,
        "/infill",
        model="repo-coder",
        input_prefix=PREFIX,
        prompt=CURSOR,
        input_suffix=SUFFIX,
        input_extra=FILES,
        n_predict=16,
        cache_prompt=True,
        samplers=["top_k", "top_p", "infill"],
        t_max_prompt_ms=500,
    )
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["content"] == "Z" and data["stop"] is True and data["stop_type"] == "eos"
    repo = 1 + _b("myproject\n") + sum(1 + _b(f["filename"] + "\n") + _b(f["text"]) for f in FILES)
    repo += 1 + _b("filename\n")
    assert data["tokens_evaluated"] == repo + 3 + _b(PREFIX + CURSOR) + _b(SUFFIX)
    assert data["tokens_predicted"] >= 1 and data["timings"]["predicted_n"] == data["tokens_predicted"]
    # without repository tokens the files are snippets before the prefix; without files, just FIM
    r = _post(server, "/infill", model="coder", input_prefix=PREFIX, input_suffix=SUFFIX, input_extra=FILES)
    snippets = sum(_b(SNIPPET_SEPARATOR) + _b(f["text"]) for f in FILES)
    assert r.json()["tokens_evaluated"] == snippets + 3 + _b(PREFIX) + _b(SUFFIX)
    r = _post(server, "/infill", model="repo-coder", input_prefix=PREFIX, input_suffix=SUFFIX)
    assert r.json()["tokens_evaluated"] == 3 + _b(PREFIX) + _b(SUFFIX)


def test_infill_streams_and_keeps_the_fields_asked_for(server):
    with httpx.stream(
        "POST",
        server.url + "/infill",
        json={"model": "coder", "input_prefix": PREFIX, "input_suffix": SUFFIX, "stream": True},
        timeout=120,
    ) as r:
        lines = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: ")]
    assert "".join(d["content"] for d in lines) == "Z"
    assert [d["stop"] for d in lines][-1] is True and not any(d["stop"] for d in lines[:-1])
    assert lines[-1]["tokens_evaluated"] == 3 + _b(PREFIX) + _b(SUFFIX)
    fields = ["content", "timings/prompt_n", "timings/predicted_n", "truncated"]
    r = _post(
        server, "/infill", model="coder", input_prefix=PREFIX, input_suffix=SUFFIX, response_fields=fields
    )
    assert sorted(r.json()) == sorted(fields) and r.json()["content"] == "Z"


def test_a_long_file_is_cut_as_llama_server_cuts_it(server):
    """The prefix keeps its end, the suffix its start, within a window of min(2048, context / 2)
    tokens (3:1); the other files keep their end within what is left after the reply's room."""
    window = min(2048, N_CTX // 2)
    r = _post(
        server,
        "/infill",
        model="coder",
        input_prefix="p" * 5000,
        input_suffix="s" * 5000,
        input_extra=[{"filename": "big.py", "text": "e" * 5000}],
        n_predict=64,
    )
    assert r.status_code == 200, r.text
    room = N_CTX - window - 2 * 64
    assert r.json()["tokens_evaluated"] == room + 3 + 3 * window // 4 + window // 4 - 2
    assert r.json()["content"] == "Z"


def test_completion_reads_a_prompt_of_token_ids(server):
    """As llama-server's: an array of token ids (also alone in an array) is read as it is."""
    ids = _post(server, "/tokenize", model="chat", content="<|im_start|>assistant\n").json()["tokens"]
    for prompt in (ids, [ids]):
        r = _post(server, "/completion", model="chat", prompt=prompt, n_predict=2, cache_prompt=False)
        assert r.status_code == 200, r.text
        assert r.json()["tokens_evaluated"] == len(ids) and r.json()["tokens_predicted"] <= 2


def test_completion_reads_a_raw_prompt(server):
    r = _post(server, "/completion", model="chat", prompt="<|im_start|>assistant\n", n_predict=4)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["content"] and data["tokens_predicted"] <= 4
    assert data["stop_type"] in ("eos", "limit") and data["timings"]["prompt_n"] >= 1
    with httpx.stream(
        "POST",
        server.url + "/completion",
        json={"model": "chat", "prompt": "<|im_start|>assistant\n", "n_predict": 4, "stream": True},
        timeout=120,
    ) as s:
        lines = [json.loads(line[6:]) for line in s.iter_lines() if line.startswith("data: ")]
    assert "".join(d["content"] for d in lines) == data["content"] and lines[-1]["stop"] is True


@pytest.mark.parametrize(
    ("path", "body", "words"),
    [
        ("/infill", {"model": "chat", "input_prefix": "a", "input_suffix": "b"}, "cannot fill in the middle"),
        ("/infill", {"model": "coder", "input_extra": "x"}, "input_extra must be an array"),
        ("/infill", {"model": "coder", "input_extra": [3]}, "input_extra[0] must be an object"),
        ("/infill", {"model": "coder", "input_prefix": 5}, "input_prefix must be a string"),
        ("/completion", {"model": "chat", "prompt": ["a", 1]}, "a text or an array of token ids"),
        ("/completion", {"model": "chat", "prompt": [[1, 2], [3]]}, "one prompt"),
        ("/completion", {"model": "chat", "prompt": [1, -2]}, "token ids are 0 or more"),
        ("/completion", {"model": "chat", "prompt": [1, 10**6]}, "outside the model's vocabulary"),
        ("/completion", {"model": "chat", "prompt": []}, "prompt is empty"),
        ("/completion", {"model": "chat", "prompt": ""}, "prompt is empty"),
        ("/completion", {"model": "chat", "prompt": "a", "n_predict": 0}, "n_predict must be at least 1"),
        ("/completion", {"model": "chat", "prompt": "a", "structured_outputs": {"x": 1}}, "is not supported"),
        ("/completion", {"model": "chat", "prompt": "a", "temperature": -1}, "temperature"),
        ("/apply-template", {"model": "chat"}, "messages"),
        (
            "/apply-template",
            {"model": "chat", "messages": [{"role": "robot", "content": "a"}]},
            "messages[0]",
        ),
        (
            "/apply-template",
            {"model": "chat", "messages": [{"role": "user", "content": "a"}], "chat_template": "{% if %}"},
            "chat_template cannot be read",
        ),
        (
            "/apply-template",
            {
                "model": "chat",
                "messages": [{"role": "user", "content": "a"}],
                "chat_template": "{{ raise_exception('no users here') }}",
            },
            "no users here",
        ),
    ],
)
def test_what_cannot_be_served_is_a_400_that_says_why(server, path, body, words):
    r = _post(server, path, **body)
    assert r.status_code == 400, r.text
    assert words in r.json()["error"]["message"]


def test_tokenize_detokenize_and_props(server):
    text = "hi <|im_end|>"
    r = _post(server, "/tokenize", model="chat", content=text)
    ids = r.json()["tokens"]
    assert len(ids) == len("hi ") + 1  # the special token's text is the token
    assert len(
        _post(server, "/tokenize", model="chat", content=text, parse_special=False).json()["tokens"]
    ) == _b(text)
    pieces = _post(server, "/tokenize", model="chat", content="hé", with_pieces=True).json()["tokens"]
    assert pieces[0] == {"id": ids[0], "piece": "h"} and [p["piece"] for p in pieces[1:]] == [[0xC3], [0xA9]]
    assert _post(server, "/detokenize", model="chat", tokens=ids).json() == {"content": text}
    r = _post(server, "/detokenize", model="chat", tokens=[10**6])
    assert r.status_code == 400 and "outside the model's vocabulary" in r.json()["error"]["message"]
    assert _post(server, "/detokenize", model="chat", tokens="abc").status_code == 400
    props = httpx.get(server.url + "/props", params={"model": "chat"}, timeout=60).json()
    assert props["default_generation_settings"]["n_ctx"] == N_CTX and props["total_slots"] == 1
    assert props["model_alias"] == "chat" and "<|im_start|>" in props["chat_template"]
    assert httpx.get(server.url + "/props", params={"model": "nope"}, timeout=60).status_code == 404
    r = _post(server, "/tokenize", model="chat", content="x" * ((1 << 22) + 1))
    assert r.status_code == 400 and "reads at most 4,194,304" in r.json()["error"]["message"]


def test_t_max_predict_ms_ends_the_reply_as_it_is(server):
    """An editor's quick suggestion: past its time the reply ends with what it has (the chat model
    would otherwise write until its context is full, some 2,000 tokens)."""
    body = {"model": "chat", "prompt": "x", "n_predict": -1}
    r = _post(server, "/completion", **body, t_max_predict_ms=1)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["stop_type"] == "limit" and data["tokens_predicted"] < 1000
    whole = _post(server, "/completion", **body).json()  # no limit: to the end of the context
    assert whole["tokens_predicted"] > 1000


def test_apply_template_gives_the_prompt_the_model_reads_and_generates_nothing(server):
    """The prompt of a chat request, as a reply to it would be generated after (its own template
    where it sends one, the final assistant message written after the generation prompt)."""

    def predicted() -> str:
        text = httpx.get(server.url + "/metrics", timeout=30).text
        (line,) = [x for x in text.splitlines() if x.startswith("llamacpp:tokens_predicted_total ")]
        return line

    before = predicted()
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi <b>"}]
    r = _post(server, "/apply-template", model="chat", messages=chat)
    assert r.status_code == 200, r.text
    assert r.json() == {
        "prompt": "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi <b><|im_end|>\n"
        "<|im_start|>assistant\n"
    }
    started = _post(
        server, "/apply-template", model="chat", messages=[*chat, {"role": "assistant", "content": "Su"}]
    )
    assert started.json()["prompt"] == r.json()["prompt"] + "Su"
    own = "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}>"
    mine = _post(server, "/apply-template", model="chat", messages=chat, chat_template=own).json()
    assert mine == {"prompt": "[system] Be brief.\n[user] Hi <b>\n>"}
    assert predicted() == before
