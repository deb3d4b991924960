"""Embeddings on the server: what OpenAI's ``/v1/embeddings`` and Ollama's ``/api/embed`` and
``/api/embeddings`` share.

A request's inputs are embedded by a job on the shared engine, as a turn is (the model is loaded
on demand, kept by ``ttl`` / ``keep_alive``, a full queue is a 429), in calls of
:data:`CHUNK` inputs each, so a client that goes away stops a long request between two calls and
a model with slots streams its other replies between them. An input that cannot be embedded is a
400 naming it (``input[2] is empty…``); the vectors come back normalized to length 1 unless the
API says otherwise (Ollama's older ``/api/embeddings``), shortened to ``dimensions`` when asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.engine.embedding import Embeddings, Scores
from app.server._common import Turn, check_int, type_name
from app.server._errors import ApiError

if TYPE_CHECKING:
    from starlette.requests import Request

    from app.server._engine import TurnRequest
    from app.server._state import ServerState

__all__ = ["CHUNK", "embed_inputs", "rank_documents", "read_dimensions", "read_inputs", "vectors"]

#: the inputs one engine call embeds
CHUNK = 16


def read_inputs(value: Any, where: str, *, tokens: bool) -> tuple[list[Any], bool]:
    """A request's inputs: a string or an array of strings (and, with ``tokens``, OpenAI's array of
    token ids or array of such arrays); and whether it came as one string. 400 for anything else."""
    from app.engine.embedding import MAX_INPUTS

    if isinstance(value, str):
        return [value], True
    if not isinstance(value, list):
        kinds = "a string, an array of strings, or token ids" if tokens else "a string or an array of strings"
        raise ApiError(400, f"{where} must be {kinds}, got {type_name(value)}", param=where)
    if len(value) > MAX_INPUTS:
        raise ApiError(
            400, f"{where} holds {len(value)} inputs; at most {MAX_INPUTS} are embedded at once", param=where
        )
    if tokens and value and all(isinstance(t, int) and not isinstance(t, bool) for t in value):
        return [list(value)], False  # one input as token ids
    out: list[Any] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            out.append(item)
        elif (
            tokens
            and isinstance(item, list)
            and all(isinstance(t, int) and not isinstance(t, bool) for t in item)
        ):
            out.append(list(item))
        else:
            kinds = "a string or an array of token ids" if tokens else "a string"
            raise ApiError(400, f"{where}[{i}] must be {kinds}, got {type_name(item)}", param=where)
    return out, False


def read_dimensions(value: Any, where: str = "dimensions") -> int | None:
    """``dimensions``: how many of each vector's values to return (None: all)."""
    return check_int(value, where, lo=1, hi=1 << 20)


def vectors(result: Embeddings, dimensions: int | None, *, normalize: bool = True) -> list[list[float]]:
    """Each vector as the API returns it: normalized (and shortened to ``dimensions``), or as the
    model gave it."""
    from app.engine.embedding import normalized, shortened

    if not normalize:
        return [[float(x) for x in v] for v in result.vectors]
    if dimensions is None:
        return [normalized(v) for v in result.vectors]
    return [shortened(v, dimensions) for v in result.vectors]


async def _in_parts(
    request: Request,
    state: ServerState,
    req: TurnRequest,
    items: list[Any],
    call: Any,
    empty: Any,
    *,
    named: str,
    single: bool,
    check: Any = None,
) -> tuple[str, Any]:
    """Run ``call(model, part)`` on the request's model (loaded if need be) for each part of
    :data:`CHUNK` ``items``, joining what each gives (``vectors``/``scores``, ``tokens``,
    ``truncated``): the model's id and the whole (``empty()`` for no items: the model is loaded,
    nothing is asked of it). An item the model cannot read is a 400 naming it
    (``named`` when the request held one, ``single``, else ``named[i]``); ``check(result)`` may
    refuse the whole."""
    from app.engine.errors import EmbeddingInputError, JobCancelled

    turn = Turn(state, req)

    def run(model: Any, cancel: Any) -> Any:
        whole: Any = empty()
        for start in range(0, len(items), CHUNK):
            if cancel.is_set():
                raise JobCancelled("the client went away before its answer was made")
            try:
                part = call(model, items[start : start + CHUNK])
            except EmbeddingInputError as exc:
                where = named if single else f"{named}[{start + exc.index}]"
                raise ApiError(400, f"{where} {exc.problem}", param=named, code="invalid_input") from None
            for key in vars(part):
                getattr(whole, key).extend(getattr(part, key))
        if check is not None:
            check(whole)
        return whole

    result = await turn.run(request, run)
    request.scope.setdefault("callisto.log", {})["prompt_tokens"] = result.total_tokens
    request.scope["callisto.turn"] = turn  # (its load time: Ollama's load_duration)
    return turn.model_id, result


async def embed_inputs(
    request: Request,
    state: ServerState,
    req: TurnRequest,
    inputs: list[Any],
    *,
    truncate: bool,
    dimensions: int | None = None,
    named: str = "input",
    single: bool = False,
) -> tuple[str, Embeddings]:
    """Embed ``inputs`` on the request's model (loaded if need be): the model's id and the vectors.
    An input the model cannot read is a 400 naming it (``named`` when the request held one
    string, ``single``, else ``named[i]``); ``dimensions`` above the model's is a 400 too."""

    def check(out: Embeddings) -> None:
        if dimensions is not None and out.vectors and dimensions > len(out.vectors[0]):
            raise ApiError(
                400,
                f"dimensions is {dimensions}, but the model's embeddings have {len(out.vectors[0])}",
                param="dimensions",
            )

    return await _in_parts(
        request,
        state,
        req,
        inputs,
        lambda model, part: model.embed(part, truncate=truncate),
        Embeddings,
        named=named,
        single=single,
        check=check,
    )


async def rank_documents(
    request: Request, state: ServerState, req: TurnRequest, query: str, documents: list[str]
) -> tuple[str, Scores]:
    """Score ``documents`` against ``query`` on the request's reranking model: its id and the
    scores, in the documents' order (a document longer than the context is cut to fit)."""
    return await _in_parts(
        request,
        state,
        req,
        documents,
        lambda model, part: model.rerank(query, part, truncate=True),
        Scores,
        named="documents",
        single=False,
    )
