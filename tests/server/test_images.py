"""Images through the API server (#30), with the official openai, anthropic and ollama clients
against a real server on a loopback port. It serves the tiny vision pair
(``tests.support.tiny_vision``: a random-weight llama and a LLaVA MLP projector beside it) and a
plain tiny GGUF with no projector, in a folder of its own.

* each API's image shape becomes the engine's ``Message.images``: OpenAI's ``image_url`` data
  URLs, Anthropic's ``image`` blocks (base64 source), Ollama's ``images`` (``/api/chat`` and
  ``/api/generate``); an image reaches the model (its prompt grows by the image's tokens) and the
  reply comes, streamed and not;
* what the server cannot take is a 400 that names the message and part, before any engine work:
  an http(s) URL (never fetched), a url source, bad base64, a media type that is not an image, an
  image on a message that is not the user's, images with a raw prompt;
* what the engine refuses is a 400 in each API's error shape, streamed requests included (the
  status, not a broken stream): a model with no projector (naming the model and the mmproj it
  needs) and a corrupt image (``invalid_image``); the server then answers a text request;
* ``/v1/models`` and ``/api/show`` say which models read images; the default body limit holds an
  image at the engine's size limit, in base64.

The tests that run a vision model skip when llama-cpp-python has no libmtmd.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.engine.models.tiny import write_tiny_gguf
from app.engine.vision import mtmd_available
from tests.server.conftest import _start
from tests.support.tiny_vision import (
    CHATML,
    N_IMAGE_TOKENS,
    TEXT_EMBD,
    png_bytes,
    write_tiny_projector,
    write_tiny_vision_pair,
)

HAVE_MTMD, WHY_NOT = mtmd_available()
needs_mtmd = pytest.mark.skipif(not HAVE_MTMD, reason=WHY_NOT)

VISION = "tiny-vision"
PLAIN = "plain-text"
PNG = png_bytes()
PNG_B64 = base64.b64encode(PNG).decode("ascii")
PNG_URL = f"data:image/png;base64,{PNG_B64}"
GREEDY = {"temperature": 0.0}
MAX_TOKENS = 6


def damaged_png() -> bytes:
    """Valid base64 of a PNG with one byte of its pixels changed: its CRC fails in the engine."""
    data = bytearray(PNG)
    data[45] ^= 0xFF
    return bytes(data)


BAD_B64 = base64.b64encode(damaged_png()).decode("ascii")


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    vision, _projector = write_tiny_vision_pair(tmp_path_factory.mktemp("vision"), name=VISION)
    plain = write_tiny_gguf(
        tmp_path_factory.mktemp("plain") / f"{PLAIN}.gguf",  # no mmproj beside it
        chat_template=CHATML,
        control_tokens=("<|im_start|>", "<|im_end|>"),
        bos="<|im_start|>",
        eos="<|im_end|>",
        name=PLAIN,
    )
    return {VISION: vision, PLAIN: plain}


@pytest.fixture(scope="module")
def server(models) -> Iterator[object]:
    from app.server import ServerConfig

    yield from _start(
        ServerConfig(
            port=0,
            models=[str(p) for p in models.values()],
            use_library=False,
            n_ctx=512,
            n_threads=1,
            max_loaded=2,
        )
    )


@pytest.fixture(scope="module")
def openai_client(server):
    from openai import OpenAI

    return OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def anthropic_client(server):
    from anthropic import Anthropic

    return Anthropic(base_url=server.url, api_key="unused", max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def ollama_client(server):
    import ollama

    return ollama.Client(host=server.url, timeout=120)


def openai_user(text: str, url: str = PNG_URL) -> list[dict]:
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": text},
                {"type": "image_url", "image_url": {"url": url, "detail": "low"}},
            ],
        }
    ]


def anthropic_user(text: str, source: dict | None = None) -> list[dict]:
    source = source or {"type": "base64", "media_type": "image/png", "data": PNG_B64}
    return [
        {
            "role": "user",
            "content": [{"type": "image", "source": source}, {"type": "text", "text": text}],
        }
    ]


def openai_error(exc) -> dict:
    body = exc.body
    return body.get("error", body) if isinstance(body, dict) else {}


# -- what the server refuses before any engine work ------------------------------------------------


@pytest.mark.parametrize(
    ("url", "where", "says"),
    [
        ("https://example.com/cat.png", "messages[0].content[1].image_url.url", "never fetches a URL"),
        ("http://127.0.0.1:1/cat.png", "messages[0].content[1].image_url.url", "never fetches a URL"),
        ("data:image/png;base64,@@not base64@@", "messages[0].content[1].image_url.url", "not valid base64"),
        ("data:image/png;base64,", "messages[0].content[1].image_url.url", "is empty"),
        (f"data:text/plain;base64,{PNG_B64}", "messages[0].content[1].image_url.url", "not an image"),
        (f"data:image/png,{PNG_B64}", "messages[0].content[1].image_url.url", "not base64"),
    ],
)
def test_openai_refuses_an_image_it_cannot_take(openai_client, url, where, says):
    import openai

    with pytest.raises(openai.BadRequestError) as exc:
        openai_client.chat.completions.create(model=VISION, messages=openai_user("What is it?", url))
    err = openai_error(exc.value)
    assert exc.value.status_code == 400
    assert err["code"] == "invalid_image"
    assert where in err["message"] and says in err["message"]


@pytest.mark.parametrize("role", ["assistant", "system", "tool"])
def test_openai_refuses_an_image_on_a_message_that_is_not_the_user_s(openai_client, role):
    import openai

    image = [{"type": "image_url", "image_url": {"url": PNG_URL}}]
    messages: list[dict] = [{"role": "user", "content": "Hello"}]
    if role == "tool":
        call = {"id": "call_abcdefghi", "type": "function", "function": {"name": "look", "arguments": "{}"}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_abcdefghi", "content": image},
        ]
        index = 2
    elif role == "system":
        messages.insert(0, {"role": "system", "content": image})
        index = 0
    else:
        messages += [{"role": "assistant", "content": image}, {"role": "user", "content": "And?"}]
        index = 1
    with pytest.raises(openai.BadRequestError) as exc:
        openai_client.chat.completions.create(model=VISION, messages=messages)
    message = openai_error(exc.value)["message"]
    assert f"messages[{index}].content[0]" in message
    assert "only a user message may hold images" in message


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ({"type": "url", "url": "https://example.com/cat.png"}, "never fetches a URL"),
        ({"type": "file", "file_id": "file_123"}, "is not supported"),
        ({"type": "base64", "media_type": "image/png", "data": "@@@@"}, "not valid base64"),
        ({"type": "base64", "media_type": "text/plain", "data": PNG_B64}, "not an image media type"),
    ],
)
def test_anthropic_refuses_an_image_it_cannot_take(anthropic_client, source, says):
    import anthropic

    with pytest.raises(anthropic.BadRequestError) as exc:
        anthropic_client.messages.create(
            model=VISION, max_tokens=MAX_TOKENS, messages=anthropic_user("What is it?", source)
        )
    assert exc.value.status_code == 400
    error = exc.value.body["error"]
    assert error["type"] == "invalid_request_error"
    assert "messages[0].content[0].source" in error["message"] and says in error["message"]


def test_anthropic_refuses_an_image_on_an_assistant_message(anthropic_client):
    import anthropic

    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}}
    with pytest.raises(anthropic.BadRequestError) as exc:
        anthropic_client.messages.create(
            model=VISION,
            max_tokens=MAX_TOKENS,
            messages=[
                {"role": "user", "content": "Hello"},
                {"role": "assistant", "content": [image]},
                {"role": "user", "content": "And?"},
            ],
        )
    assert "messages[1].content[0]" in exc.value.body["error"]["message"]


def test_ollama_refuses_bad_base64_and_images_where_they_cannot_go(ollama_client, server):
    import ollama

    with pytest.raises(ollama.ResponseError) as exc:
        ollama_client.chat(model=VISION, messages=[{"role": "user", "content": "Hi", "images": ["@@@@"]}])
    assert exc.value.status_code == 400
    assert "messages[0].images[0] is not valid base64" in exc.value.error

    with pytest.raises(ollama.ResponseError) as exc:
        ollama_client.chat(
            model=VISION,
            messages=[
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello", "images": [PNG]},
                {"role": "user", "content": "And?"},
            ],
        )
    assert exc.value.status_code == 400
    assert "messages[1]" in exc.value.error and "only a user message may hold images" in exc.value.error

    with pytest.raises(ollama.ResponseError) as exc:
        ollama_client.generate(model=VISION, prompt="Hi", images=["@@@@"])
    assert "images[0] is not valid base64" in exc.value.error

    # raw: the client's own prompt has no place for an image (the ollama client never sends raw
    # with images, so this is plain HTTP)
    r = httpx.post(
        server.url + "/api/generate",
        json={"model": VISION, "prompt": "Hi", "raw": True, "images": [PNG_B64], "stream": False},
        timeout=30,
    )
    assert r.status_code == 400 and "raw" in r.json()["error"]


def test_the_default_body_limit_holds_an_image_at_the_engine_s_limit():
    from app.engine.vision import DEFAULT_LIMITS
    from app.server import ServerConfig

    base64_size = 4 * -(-DEFAULT_LIMITS.max_bytes // 3)
    assert ServerConfig().max_body_bytes >= base64_size + 64 * 1024


# -- which models read images -----------------------------------------------------------------------


def test_models_and_show_say_which_model_reads_images(openai_client, ollama_client, server):
    cards = httpx.get(server.url + "/v1/models", timeout=30).json()["data"]
    vision = {c["id"]: c["callisto"]["vision"] for c in cards}
    assert vision == {VISION: True, PLAIN: False}
    assert "vision" in ollama_client.show(VISION).capabilities
    assert "vision" not in ollama_client.show(PLAIN).capabilities
    assert "completion" in ollama_client.show(PLAIN).capabilities


# -- what the engine refuses -----------------------------------------------------------------------


def _says_no_projector(message: str) -> None:
    assert "mmproj" in message and PLAIN in message, message


@pytest.mark.parametrize("stream", [False, True])
def test_a_model_without_a_projector_refuses_an_image_in_each_api(
    openai_client, anthropic_client, ollama_client, stream
):
    import anthropic
    import ollama
    import openai

    with pytest.raises(openai.BadRequestError) as exc:
        openai_client.chat.completions.create(
            model=PLAIN, messages=openai_user("What is it?"), max_tokens=MAX_TOKENS, stream=stream
        )
    err = openai_error(exc.value)
    assert exc.value.status_code == 400 and err["code"] == "model_has_no_projector"
    _says_no_projector(err["message"])

    with pytest.raises(anthropic.BadRequestError) as exc_a:
        anthropic_client.messages.create(
            model=PLAIN, max_tokens=MAX_TOKENS, messages=anthropic_user("What is it?"), stream=stream
        )
    assert exc_a.value.body["error"]["type"] == "invalid_request_error"
    _says_no_projector(exc_a.value.body["error"]["message"])

    with pytest.raises(ollama.ResponseError) as exc_o:
        reply = ollama_client.chat(
            model=PLAIN, messages=[{"role": "user", "content": "What is it?", "images": [PNG]}], stream=stream
        )
        if stream:
            list(reply)
    assert exc_o.value.status_code == 400
    _says_no_projector(exc_o.value.error)

    # the model still answers text
    text = openai_client.chat.completions.create(
        model=PLAIN, messages=[{"role": "user", "content": "Hello"}], max_tokens=MAX_TOKENS, **GREEDY
    )
    assert text.usage.completion_tokens > 0


# -- a vision model end to end ----------------------------------------------------------------------


def _text_prompt_tokens(openai_client, text: str) -> int:
    reply = openai_client.chat.completions.create(
        model=VISION, messages=[{"role": "user", "content": text}], max_tokens=1, **GREEDY
    )
    return reply.usage.prompt_tokens


@needs_mtmd
def test_openai_image_reaches_the_model_streamed_and_not(openai_client):
    question = "What is in this picture?"
    without = _text_prompt_tokens(openai_client, question)
    plain = openai_client.chat.completions.create(
        model=VISION, messages=openai_user(question), max_tokens=MAX_TOKENS, **GREEDY
    )
    assert plain.usage.prompt_tokens == without + N_IMAGE_TOKENS  # the image's positions were read
    assert plain.usage.completion_tokens > 0
    assert plain.choices[0].finish_reason in ("stop", "length")

    chunks = list(
        openai_client.chat.completions.create(
            model=VISION,
            messages=openai_user(question),
            max_tokens=MAX_TOKENS,
            stream=True,
            stream_options={"include_usage": True},
            **GREEDY,
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == (plain.choices[0].message.content or "")  # greedy: the same reply
    usage = next(c.usage for c in chunks if c.usage is not None)
    assert usage.prompt_tokens == plain.usage.prompt_tokens


@needs_mtmd
def test_lm_studio_chat_reads_an_image_and_a_model_without_a_projector_refuses_it(server, openai_client):
    """LM Studio's ``/api/v1/chat`` with an image item: the model reads the image's positions
    (the prompt is the OpenAI request's with the same image), and the reply is the same."""
    question = "What is in this picture?"
    items = [{"type": "text", "content": question}, {"type": "image", "data_url": PNG_URL}]
    with httpx.Client(base_url=server.url, timeout=60) as http:
        body = {"model": VISION, "input": items, "max_output_tokens": MAX_TOKENS, "store": False, **GREEDY}
        reply = http.post("/api/v1/chat", json=body)
        assert reply.status_code == 200, reply.text
        same = openai_client.chat.completions.create(
            model=VISION, messages=openai_user(question), max_tokens=MAX_TOKENS, **GREEDY
        )
        stats = reply.json()["stats"]
        assert (
            stats["input_tokens"]
            == same.usage.prompt_tokens
            == _text_prompt_tokens(openai_client, question) + N_IMAGE_TOKENS
        )
        assert reply.json()["output"] == [{"type": "message", "content": same.choices[0].message.content}]

        for stream in (False, True):
            refused = http.post("/api/v1/chat", json={**body, "model": PLAIN, "stream": stream})
            assert refused.status_code == 400 and refused.json()["error"]["code"] == "model_has_no_projector"
            _says_no_projector(refused.json()["error"]["message"])


@needs_mtmd
def test_anthropic_image_reaches_the_model_streamed_and_not(anthropic_client, openai_client):
    question = "Describe the image."
    without = _text_prompt_tokens(openai_client, question)
    reply = anthropic_client.messages.create(
        model=VISION, max_tokens=MAX_TOKENS, messages=anthropic_user(question), extra_body=GREEDY
    )
    usage = reply.usage
    assert usage.input_tokens + (usage.cache_read_input_tokens or 0) == without + N_IMAGE_TOKENS
    assert usage.output_tokens > 0
    with anthropic_client.messages.stream(
        model=VISION, max_tokens=MAX_TOKENS, messages=anthropic_user(question), extra_body=GREEDY
    ) as stream:
        streamed = stream.get_final_message()
    assert [b.text for b in streamed.content if b.type == "text"] == [
        b.text for b in reply.content if b.type == "text"
    ]


@needs_mtmd
def test_ollama_images_reach_the_model_in_chat_and_generate(ollama_client, openai_client):
    question = "What do you see?"
    without = _text_prompt_tokens(openai_client, question)
    options = {"temperature": 0.0, "num_predict": MAX_TOKENS}
    chat = ollama_client.chat(
        model=VISION, messages=[{"role": "user", "content": question, "images": [PNG]}], options=options
    )
    assert chat.prompt_eval_count == without + N_IMAGE_TOKENS
    assert chat.eval_count > 0
    parts = list(
        ollama_client.chat(
            model=VISION,
            messages=[{"role": "user", "content": question, "images": [PNG]}],
            options=options,
            stream=True,
        )
    )
    assert "".join(p.message.content for p in parts) == chat.message.content
    assert parts[-1].done and parts[-1].prompt_eval_count == chat.prompt_eval_count

    gen = ollama_client.generate(model=VISION, prompt=question, images=[PNG], options=options)
    assert gen.prompt_eval_count == chat.prompt_eval_count  # the same user turn
    assert gen.response == chat.message.content
    streamed = list(
        ollama_client.generate(model=VISION, prompt=question, images=[PNG], options=options, stream=True)
    )
    assert "".join(p.response for p in streamed) == gen.response


@needs_mtmd
@pytest.mark.parametrize("stream", [False, True])
def test_a_corrupt_image_is_a_400_and_the_server_answers_next(
    openai_client, anthropic_client, ollama_client, stream
):
    import anthropic
    import ollama
    import openai

    with pytest.raises(openai.BadRequestError) as exc:
        openai_client.chat.completions.create(
            model=VISION,
            messages=openai_user("What is it?", f"data:image/png;base64,{BAD_B64}"),
            max_tokens=MAX_TOKENS,
            stream=stream,
        )
    err = openai_error(exc.value)
    assert err["code"] == "invalid_image" and "PNG" in err["message"], err

    with pytest.raises(anthropic.BadRequestError) as exc_a:
        anthropic_client.messages.create(
            model=VISION,
            max_tokens=MAX_TOKENS,
            messages=anthropic_user("What?", {"type": "base64", "media_type": "image/png", "data": BAD_B64}),
            stream=stream,
        )
    assert "PNG" in exc_a.value.body["error"]["message"]

    with pytest.raises(ollama.ResponseError) as exc_o:
        reply = ollama_client.chat(
            model=VISION,
            messages=[{"role": "user", "content": "What?", "images": [b"not an image at all"]}],
            stream=stream,
        )
        if stream:
            list(reply)
    assert exc_o.value.status_code == 400 and "not an image" in exc_o.value.error

    # the engine survived: text, and then an image, are answered
    text = openai_client.chat.completions.create(
        model=VISION, messages=[{"role": "user", "content": "Hello"}], max_tokens=MAX_TOKENS, **GREEDY
    )
    assert text.usage.completion_tokens > 0
    image = openai_client.chat.completions.create(
        model=VISION, messages=openai_user("And this?"), max_tokens=MAX_TOKENS, **GREEDY
    )
    assert image.usage.completion_tokens > 0


# -- the library's pairing ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def library_server(tmp_path_factory) -> Iterator[object]:
    """A server on a library where one model's projector was chosen from another folder, and a
    pair whose projector beside it the user turned off."""
    from app.engine.models.library import Library
    from app.server import ApiServer, ServerConfig

    root = tmp_path_factory.mktemp("library")
    models_dir = root / "models"
    chosen = write_tiny_gguf(
        models_dir / "chosen" / "chosen.gguf",
        chat_template=CHATML,
        control_tokens=("<|im_start|>", "<|im_end|>"),
        bos="<|im_start|>",
        eos="<|im_end|>",
        embedding_length=TEXT_EMBD,
        name="chosen",
    )
    projector = write_tiny_projector(root / "elsewhere" / "mmproj-of-chosen.gguf")
    off, _beside = write_tiny_vision_pair(models_dir / "off", name="off")
    library = Library(models_dir=models_dir, manifest_path=root / "library.json", hf_cache_dir=False)
    library.set_projector(chosen, projector)
    library.set_projector(off, None)  # text only, though an mmproj lies beside it
    srv = ApiServer(ServerConfig(port=0, n_ctx=512, n_threads=1, max_loaded=2), library=library)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def test_models_say_what_the_library_paired(library_server):
    cards = httpx.get(library_server.url + "/v1/models", timeout=30).json()["data"]
    assert {c["id"]: c["callisto"]["vision"] for c in cards} == {"chosen": True, "off": False}


@needs_mtmd
def test_a_request_loads_the_projector_the_library_chose(library_server):
    from openai import BadRequestError, OpenAI

    client = OpenAI(base_url=library_server.url + "/v1", api_key="unused", max_retries=0, timeout=120)
    text = client.chat.completions.create(
        model="chosen", messages=[{"role": "user", "content": "Look."}], max_tokens=1, **GREEDY
    )
    image = client.chat.completions.create(
        model="chosen", messages=openai_user("Look."), max_tokens=MAX_TOKENS, **GREEDY
    )
    assert image.usage.prompt_tokens == text.usage.prompt_tokens + N_IMAGE_TOKENS
    with pytest.raises(BadRequestError) as exc:
        client.chat.completions.create(model="off", messages=openai_user("Look."), max_tokens=MAX_TOKENS)
    assert openai_error(exc.value)["code"] == "model_has_no_projector"


@needs_mtmd
def test_anthropic_counts_an_image_s_tokens(anthropic_client):
    text = anthropic_client.messages.count_tokens(
        model=VISION, messages=[{"role": "user", "content": "Count."}]
    )
    image = anthropic_client.messages.count_tokens(model=VISION, messages=anthropic_user("Count."))
    assert image.input_tokens == text.input_tokens + N_IMAGE_TOKENS


@needs_mtmd
def test_line_wrapped_base64_is_read(server):
    wrapped = "\n".join(PNG_B64[i : i + 76] for i in range(0, len(PNG_B64), 76))
    assert "\n" in wrapped

    def prompt_tokens(images: list[str]) -> int:
        r = httpx.post(
            server.url + "/api/chat",
            json={
                "model": VISION,
                "messages": [{"role": "user", "content": "Hi", "images": images}],
                "stream": False,
                "options": {"num_predict": 1},
            },
            timeout=120,
        )
        assert r.status_code == 200, r.text
        return r.json()["prompt_eval_count"]

    assert prompt_tokens([wrapped]) == prompt_tokens([]) + N_IMAGE_TOKENS


@needs_mtmd
def test_apply_template_writes_an_image_as_llama_server_does_and_refuses_one_it_cannot_read(server):
    """``/apply-template``: an image is ``<__media__>`` in the prompt; a model without a projector,
    or an image that cannot be read, is the 400 a chat request gets."""
    import httpx

    def apply(model: str, url: str = PNG_URL) -> httpx.Response:
        body = {"model": model, "messages": openai_user("What is it?", url)}
        return httpx.post(server.url + "/apply-template", json=body, timeout=120)

    r = apply(VISION)
    assert r.status_code == 200, r.text
    assert "<__media__>" in r.json()["prompt"] and "What is it?" in r.json()["prompt"]
    r = apply(PLAIN)
    assert r.status_code == 400 and r.json()["error"]["code"] == "model_has_no_projector"
    _says_no_projector(r.json()["error"]["message"])
    r = apply(VISION, f"data:image/png;base64,{BAD_B64}")
    assert r.status_code == 400, r.text
