"""llama-server's own API: ``POST /completion``, ``POST /infill``, ``POST /rerank`` (also as
``/v1/rerank`` and Cohere's ``/v2/rerank``), ``POST /tokenize``, ``POST /detokenize``,
``POST /apply-template`` and ``GET /props``, for the clients written for it (the llama.vim and
llama.vscode editor plugins complete code through ``/infill``; Continue's llama.cpp provider and
many scripts call ``/completion``).

``/completion``: ``prompt`` (text, read as llama-server reads it: special tokens' text becomes
them, a BOS where the model wants one), ``n_predict``, llama-server's sampler fields
(``temperature``, ``top_k``, ``top_p``, ``min_p``, ``typical_p``, ``repeat_penalty``, the
penalties, ``mirostat``, ``seed``), ``stop``, ``grammar`` (GBNF), ``stream``, ``n_probs`` (each
token's log probability and the n most likely at its place, ``completion_probabilities``, as
llama-server gives them; the model's own, before sampling: ``post_sampling_probs`` is a 400).

``/infill``: fill in the middle with the model's FIM tokens (``app.engine.generation.infill_prompt``):
``input_prefix``, ``input_suffix``, ``prompt`` (the cursor's line up to the cursor, after the
prefix) and ``input_extra`` (other files, ``[{"filename", "text"}]``, before it all; with the
model's repository tokens where it has them), cut to fit as llama-server cuts them (the prefix's
end, the suffix's start, the other files' end). A model without FIM tokens is a 400 that says so.

The answer is llama-server's: ``content``, ``stop``, ``stop_type`` (``eos``, ``limit``, or ``word``
when a request's stop string ended it, named by ``stopping_word``), ``tokens_predicted``,
``tokens_evaluated``, ``tokens_cached``, ``truncated`` and ``timings``;
streamed, a ``data:`` line per piece (``"stop": false``) and a last one with ``"stop": true`` and
the counts. ``response_fields`` keeps only the fields it names (``timings/prompt_n`` reads a
nested one, under that name), as llama-server does. ``t_max_predict_ms`` (with
``t_max_prompt_ms`` added when given) is how long the job may take once it starts: past it the
reply ends as it is (``stop_type`` ``limit``), as an editor's quick suggestion needs. Fields of
llama-server's that change nothing here (``cache_prompt``, which is always on; ``id_slot``;
``samplers``; ``n_indent``) are accepted and not used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.engine.generation import TokenOptions
from app.engine.logprobs import MAX_TOP_LOGPROBS
from app.server._common import (
    SAMPLER_RANGES,
    Turn,
    check_bool,
    check_int,
    check_stop,
    check_str,
    prompt_token_ids,
    queue_turn,
    read_logit_bias,
    read_sampling,
    request_body,
    streamed,
    type_name,
)
from app.server._engine import TurnEnd, TurnRequest
from app.server._errors import ApiError, log_error
from app.server._json import json_bytes, json_response
from app.server._logprobs import CONTENT, LogprobBuffer, llamacpp_probs

if TYPE_CHECKING:
    from starlette.requests import Request

    from app.server._state import ServerState

__all__ = ["completion", "detokenize", "infill", "props", "rerank", "tokenize"]

#: the most files ``input_extra`` may hold
MAX_EXTRA = 256
#: the most characters one ``/tokenize`` reads (its answer, with pieces, is many times larger)
MAX_TOKENIZE_CHARS = 1 << 22


def _n_predict(body: dict[str, Any], state: ServerState) -> tuple[int, bool]:
    """(the reply's length, whether the request set it: a made model's ``num_predict`` applies
    where it did not)."""
    limit = state.config.max_tokens_limit
    n = check_int(body.get("n_predict", body.get("max_tokens")), "n_predict", lo=-2, hi=limit)
    if n is None or n < 0:  # -1: until the end (llama-server's default), here the server's default
        return min(state.config.default_max_tokens, limit), False
    if n == 0:
        raise ApiError(
            400, "n_predict must be at least 1 (or -1 for the server's default)", param="n_predict"
        )
    return n, True


def _common_request(body: dict[str, Any], state: ServerState) -> dict[str, Any]:
    """What ``/completion`` and ``/infill`` read alike, as :class:`TurnRequest` fields."""
    from app.server._idle import parse_ttl

    # llama-server's time limits (ms): the prompt's and the reply's, here one deadline for both
    limits = [check_int(body.get(k), k, lo=0, hi=86_400_000) for k in ("t_max_prompt_ms", "t_max_predict_ms")]
    deadline = None if limits[1] is None or limits[1] <= 0 else (limits[1] + (limits[0] or 0)) / 1000.0
    # n_probs: each token's log probability and the n most likely at its place
    n_probs = check_int(body.get("n_probs"), "n_probs", lo=0, hi=MAX_TOP_LOGPROBS)
    if check_bool(body.get("post_sampling_probs"), "post_sampling_probs", False):
        raise ApiError(
            400,
            "post_sampling_probs is not supported: the probabilities given are the model's own, "
            "before sampling; leave it out",
            param="post_sampling_probs",
        )
    model = check_str(body.get("model"), "model", allow_none=True)
    max_tokens, given = _n_predict(body, state)  # (checked in the order the fields were)
    return {
        "model": model,
        "max_tokens": max_tokens,
        "max_tokens_given": given,
        "deadline_s": deadline,
        "sampling": read_sampling(body, SAMPLER_RANGES, top_k=True, mirostat=True),
        "stop": check_stop(body.get("stop"), "stop"),
        "idle_ttl": parse_ttl(body.get("ttl")),
        "options": TokenOptions(logprobs=n_probs or None, logit_bias=read_logit_bias(body.get("logit_bias"))),
    }


def _extra(value: Any) -> list[tuple[str, str]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ApiError(400, f"input_extra must be an array, got {type_name(value)}", param="input_extra")
    if len(value) > MAX_EXTRA:
        raise ApiError(400, f"input_extra holds {len(value)} files; at most {MAX_EXTRA}", param="input_extra")
    out = []
    for i, chunk in enumerate(value):
        w = f"input_extra[{i}]"
        if not isinstance(chunk, dict):
            raise ApiError(
                400, f"{w} must be an object with filename and text, got {type_name(chunk)}", param=w
            )
        name = check_str(chunk.get("filename", "tmp"), f"{w}.filename") or "tmp"
        out.append((name, check_str(chunk.get("text", ""), f"{w}.text") or ""))
    return out


def _completion_prompt(value: Any) -> str | list[int]:
    """``/completion``'s ``prompt``: a text, or token ids (an array of whole numbers, checked against
    the vocabulary by the engine), or either alone in an array; a 400 for anything else (several
    prompts, or texts mixed with ids)."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], (str, list)):
        value = value[0]
    if isinstance(value, str):
        if not value:
            raise ApiError(400, "prompt is empty", param="prompt")
        return value
    ids = prompt_token_ids(value)
    if ids:
        return ids
    if isinstance(value, list) and not value:
        raise ApiError(400, "prompt is empty", param="prompt")
    raise ApiError(
        400,
        "prompt must be a text or an array of token ids (one prompt: send several prompts, or texts "
        "mixed with token ids, as requests of their own)",
        param="prompt",
    )


async def completion(request: Request):
    from app.server._openai import completion_grammar

    state, body = await request_body(request)
    prompt = _completion_prompt(body.get("prompt"))
    req = TurnRequest(
        raw_prompt=prompt, grammar=completion_grammar(body, "/completion"), **_common_request(body, state)
    )
    return await _answer(request, state, body, req)


async def infill(request: Request):
    state, body = await request_body(request)
    prefix = check_str(body.get("input_prefix", ""), "input_prefix") or ""
    suffix = check_str(body.get("input_suffix", ""), "input_suffix") or ""
    cursor = check_str(body.get("prompt", ""), "prompt") or ""
    req = TurnRequest(
        fim=(prefix, suffix),
        fim_cursor=cursor,
        fim_extra=_extra(body.get("input_extra", body.get("extra_context"))),
        # the reply's room, as llama-server keeps it: twice n_predict, none when it is not given
        fim_fit=max(0, check_int(body.get("n_predict"), "n_predict") or 0),
        **_common_request(body, state),
    )
    return await _answer(request, state, body, req)


# -- the answer ------------------------------------------------------------------------------------


def _timings(end: TurnEnd) -> dict[str, Any]:
    read = max(0, end.prompt_tokens - end.cached_tokens)
    prompt_ms = (end.ttft_s or 0.0) * 1000.0
    predicted_ms = max(0.0, end.elapsed_s * 1000.0 - prompt_ms)
    n = end.completion_tokens
    return {
        "prompt_n": read,
        "prompt_ms": prompt_ms,
        "prompt_per_token_ms": prompt_ms / read if read else 0.0,
        "prompt_per_second": read / prompt_ms * 1000.0 if prompt_ms > 0 else 0.0,
        "predicted_n": n,
        "predicted_ms": predicted_ms,
        "predicted_per_token_ms": predicted_ms / n if n else 0.0,
        "predicted_per_second": n / predicted_ms * 1000.0 if predicted_ms > 0 else 0.0,
    }


def _final(model: str, content: str, end: TurnEnd) -> dict[str, Any]:
    cut = end.finish_in() == "length"
    return {
        "content": content,
        "id_slot": 0,
        "stop": True,
        "model": model,
        "tokens_predicted": end.completion_tokens,
        "tokens_evaluated": end.prompt_tokens,
        "tokens_cached": end.cached_tokens,
        "truncated": False,
        "stop_type": "limit" if cut else "word" if end.stop_sequence is not None else "eos",
        "stopping_word": end.stop_sequence or "",
        "timings": _timings(end),
    }


def _fields(data: dict[str, Any], names: list[str] | None) -> dict[str, Any]:
    """``response_fields``: only the fields named (a nested one by its path, ``timings/prompt_n``)."""
    if names is None:
        return data
    out: dict[str, Any] = {}
    for name in names:
        node: Any = data
        for key in name.split("/"):
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None:
            out[name] = node
    return out


def _response_fields(value: Any) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ApiError(400, "response_fields must be an array of field names", param="response_fields")
    return list(value)


async def _answer(request: Request, state: ServerState, body: dict[str, Any], req: TurnRequest):
    stream = check_bool(body.get("stream"), "stream", False)
    fields = _response_fields(body.get("response_fields"))
    turn = await queue_turn(state, req)
    if not stream:
        text, _reasoning, _calls, end = await turn.collect(request)
        turn.log(request, end, 0)
        answer = _final(turn.model_id, text, end)
        if req.options.logprobs is not None:
            answer["completion_probabilities"] = llamacpp_probs(turn.logprob_entries(CONTENT))
        return json_response(_fields(answer, fields))

    def line(data: dict[str, Any]) -> bytes:
        return b"data: " + json_bytes(data) + b"\n\n"

    held = LogprobBuffer()

    def probs(data: dict[str, Any]) -> dict[str, Any]:
        """A line with the probabilities of the tokens since the last one, when asked."""
        entries = held.take()
        if entries:
            data["completion_probabilities"] = llamacpp_probs(entries)
        return data

    async def gen():
        end = None
        try:
            async for kind, value in turn.events():
                if kind == "logprobs":
                    held.add(value)
                elif kind == "text":
                    yield line(_fields(probs({"content": value, "stop": False, "id_slot": 0}), fields))
                elif kind == "end":
                    end = value
            assert end is not None
            yield line(_fields(probs(_final(turn.model_id, "", end)), fields))
        except ApiError as err:
            log_error(request.scope, err)
            yield line({"error": {"code": err.status, "message": err.message, "type": "server_error"}})
        finally:
            turn.cancel.set()  # a client that went away stops the generation at the next token
            turn.log(request, end, 0)

    return await streamed(turn, request, gen())


# -- reranking -------------------------------------------------------------------------------------


def _documents(value: Any) -> list[str]:
    """``documents``: strings, or objects with a ``text`` (Jina's and Cohere's form)."""
    from app.engine.embedding import MAX_INPUTS

    if not isinstance(value, list) or not value:
        raise ApiError(400, "documents must be a non-empty array of texts", param="documents")
    if len(value) > MAX_INPUTS:
        raise ApiError(400, f"documents holds {len(value)} texts; at most {MAX_INPUTS}", param="documents")
    out = []
    for i, doc in enumerate(value):
        text = doc.get("text") if isinstance(doc, dict) else doc
        if not isinstance(text, str):
            raise ApiError(
                400,
                f"documents[{i}] must be a string or an object with a text, got {type_name(doc)}",
                param="documents",
            )
        out.append(text)
    return out


async def rerank(request: Request):
    """``/rerank``, ``/v1/rerank`` (llama-server's and Jina's) and ``/v2/rerank`` (Cohere's): the
    ``documents`` ordered by their relevance to ``query``, by a reranking model (rank pooling:
    bge-reranker, jina-reranker, Qwen3-Reranker…). ``top_n`` keeps the best; ``return_documents``
    repeats each one's text. A score is the model's own (a logit, as llama-server gives it)."""
    import uuid

    from app.server._embeddings import rank_documents
    from app.server._idle import parse_ttl

    state, body = await request_body(request)
    query = check_str(body.get("query"), "query")
    if not query:
        raise ApiError(400, "query is empty: there is nothing to rank the documents by", param="query")
    documents = _documents(body.get("documents"))
    top_n = check_int(body.get("top_n"), "top_n", lo=1)
    give_back = check_bool(body.get("return_documents"), "return_documents", False)
    req = TurnRequest(
        model=check_str(body.get("model"), "model", allow_none=True), idle_ttl=parse_ttl(body.get("ttl"))
    )
    model_id, scored = await rank_documents(request, state, req, query, documents)
    order = sorted(range(len(documents)), key=lambda i: scored.scores[i], reverse=True)[:top_n]
    results: list[dict[str, Any]] = []
    for i in order:
        result: dict[str, Any] = {"index": i, "relevance_score": scored.scores[i]}
        if give_back:
            result["document"] = {"text": documents[i]}
        results.append(result)
    n = scored.total_tokens
    return json_response(
        {
            "id": f"rerank-{uuid.uuid4().hex[:24]}",
            "model": model_id,
            "object": "list",
            "usage": {"prompt_tokens": n, "total_tokens": n},
            "results": results,
        }
    )


# -- tokens and properties -------------------------------------------------------------------------


def _token_ids(value: Any) -> list[int]:
    """An array of token ids (their range is the engine's to check: ``LoadedModel.detokenize``)."""
    if not isinstance(value, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in value):
        raise ApiError(400, "tokens must be an array of token ids", param="tokens")
    return list(value)


async def _on_model(request: Request, state: ServerState, body: dict[str, Any], fn: Any) -> Any:
    """``fn(model)`` on the request's model (loaded if need be), as a job of its own."""
    from app.server._idle import parse_ttl

    model = check_str(body.get("model"), "model", allow_none=True)
    turn = Turn(state, TurnRequest(model=model, idle_ttl=parse_ttl(body.get("ttl"))))
    return await turn.run(request, lambda loaded, _cancel: fn(loaded))


async def tokenize(request: Request):
    """``/tokenize``: ``content``'s token ids (``add_special``: the model's BOS where it adds one;
    ``parse_special``, default true: special tokens' text becomes them; ``with_pieces``: each id
    with its text, ``{"id", "piece"}``, the piece as bytes where it is not whole UTF-8)."""
    state, body = await request_body(request)
    content = check_str(body.get("content", ""), "content") or ""
    if len(content) > MAX_TOKENIZE_CHARS:
        raise ApiError(
            400,
            f"content is {len(content):,} characters; /tokenize reads at most {MAX_TOKENIZE_CHARS:,} at once",
            param="content",
        )
    add_special = check_bool(body.get("add_special"), "add_special", False)
    parse_special = check_bool(body.get("parse_special"), "parse_special", True)
    with_pieces = check_bool(body.get("with_pieces"), "with_pieces", False)

    def run(model: Any) -> Any:
        ids = model.tokenize_text(content, special=parse_special) if content else []
        if add_special:
            ids = model.tokenize("")[:1] + ids  # the BOS where the model adds one (none else)
        if not with_pieces:
            return ids
        out = []
        for t in ids:
            raw = model.token_bytes(t)
            try:
                piece: Any = raw.decode("utf-8")
            except UnicodeDecodeError:
                piece = list(raw)  # part of a character: its bytes, as llama-server gives them
            out.append({"id": t, "piece": piece})
        return out

    tokens = await _on_model(request, state, body, run)
    return json_response({"tokens": tokens})


async def apply_template(request: Request):
    """``/apply-template``: the prompt a chat request renders to, ``{"prompt": ...}``, without
    generating: the body is a ``/v1/chat/completions`` request (its messages, tools, tool choice,
    ``reasoning_effort``, ``chat_template_kwargs``, ``chat_template``; a final assistant message is
    the reply's start, written after the prompt) read and refused as that endpoint reads it. The
    prompt is the text the model reads, as llama-server gives it: without the template's BOS text
    where the model adds that token itself, an image written ``<__media__>``."""
    from app.server._engine import render_turn
    from app.server._openai import parse_chat_request

    state, body = await request_body(request)
    req, _stream, _usage = parse_chat_request(body, state)
    tool_format = state.config.tool_format

    def run(model: Any, req: Any) -> str:
        from app.engine.vision import ImagePrompt

        turn = render_turn(model, req, tool_format)
        if isinstance(turn.text, ImagePrompt):
            model.tokenize(turn.text)  # no projector, or an image it cannot read: the chat request's 400
        prompt = str(turn.text) + (turn.prefill or "")
        bos = model.bos_token
        if bos and prompt.startswith(bos) and model.tokenize(""):
            # llama-server leaves out the template's BOS text where the model adds a BOS token itself
            prompt = prompt[len(bos) :]
        return prompt

    turn = Turn(state, req)  # (turn.req: with a made model's settings, as the reply would render)
    prompt = await turn.run(request, lambda model, _cancel: run(model, turn.req))
    return json_response({"prompt": prompt})


async def detokenize(request: Request):
    """``/detokenize``: the text of ``tokens`` (special tokens as their text)."""
    state, body = await request_body(request)
    ids = _token_ids(body.get("tokens", []))

    def run(model: Any) -> str:
        return model.detokenize(ids).decode("utf-8", errors="replace")

    content = await _on_model(request, state, body, run)
    return json_response({"content": content})


async def props(request: Request):
    """``GET /props``: llama-server's server properties, for its clients that read the context size
    and the slots from them: the model the request names (``?model=``; else the one loaded, else
    the first offered), its ``n_ctx`` per slot and ``total_slots``, its chat template."""
    from starlette.concurrency import run_in_threadpool

    state: ServerState = request.app.state.callisto
    name = request.query_params.get("model")

    def card() -> dict[str, Any]:
        entry = state.catalog.resolve(name, state.loaded_entry())
        slots = state.slot_card(entry)
        meta = state.metadata_for(entry)
        return {
            "default_generation_settings": {"n_ctx": slots["n_ctx"], "params": {"n_predict": -1}},
            "total_slots": slots["parallel"],
            "model_path": str(entry.path),
            "model_alias": entry.id,
            "chat_template": meta.chat_template or "",
            "chat_template_tool_use": meta.tool_use_template,
            "bos_token": meta.bos_token or "",
            "eos_token": meta.eos_token or "",
            "modalities": {"vision": state.has_vision(entry), "audio": False},
            "build_info": "callisto",
        }

    return json_response(await run_in_threadpool(card))
