"""What the three API modules share: reading and checking a request's JSON, the bridge that
carries a turn's events from the engine thread to the request's event loop, call-id mapping."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Container
from typing import TYPE_CHECKING, Any

from app.calls import is_tool_name
from app.engine.host import Job
from app.server._engine import TurnEnd, TurnRequest, as_api_error, run_turn, submit_job
from app.server._errors import ApiError, shown, shown_number
from app.server._json import clean_text, json_text

if TYPE_CHECKING:
    from starlette.requests import Request

    from app.server._state import ServerState

__all__ = [
    "INVALID_IMAGE",
    "NEVER_FETCHED",
    "SAMPLER_RANGES",
    "TOOL_CHOICE_HEADER",
    "Turn",
    "prompt_token_ids",
    "read_chat_template",
    "json_response_format",
    "header_tool_choice",
    "convert_tools",
    "declared_tool",
    "queue_turn",
    "streamed",
    "read_logit_bias",
    "read_sampling",
    "request_body",
    "result_call_id",
    "check_bool",
    "check_int",
    "check_number",
    "check_str",
    "check_request_bounds",
    "check_image_media_type",
    "check_tool_name",
    "data_url_image",
    "image_bytes",
    "image_error",
    "inner_call_id",
    "read_json",
    "type_name",
]

FLUSH_S = 0.03  # as app.ui.worker_turns.Turns.FLUSH_S
_PREFIXED_ID = re.compile(r"^(?:call|toolu|fc)_([A-Za-z0-9]{9})$")


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


#: the most digits an integer in a request may have (Python's own default limit on converting
#: text to int, applied whatever ``sys.set_int_max_str_digits`` says: converting is quadratic)
MAX_INT_DIGITS = 4300


def _parse_int(text: str) -> int:
    digits = len(text) - (text[:1] == "-")
    if digits > MAX_INT_DIGITS:
        raise ApiError(
            400, f"the request body has an integer of {digits} digits; at most {MAX_INT_DIGITS} are allowed"
        )
    return int(text)


async def read_json(request: Request, limit: int) -> dict[str, Any]:
    """The request's body as a JSON object; 413 past ``limit`` bytes, 400 for anything not JSON
    (an integer of more than :data:`MAX_INT_DIGITS` digits too). A client that goes away while
    sending it ends the request quietly (408; nobody reads it)."""
    from starlette.requests import ClientDisconnect

    length = (request.headers.get("content-length") or "").lstrip("0")
    if re.fullmatch(r"[0-9]+", length) and (len(length) > 18 or int(length) > limit):
        size_text = length if len(length) <= 18 else f"a number of {len(length)} digits of"
        raise ApiError(413, f"the request body is {size_text} bytes; the limit is {limit}")
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise ApiError(413, f"the request body is larger than the limit of {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        raise ApiError(408, "the client went away before its request arrived whole") from None
    raw = b"".join(chunks)
    if not raw.strip():
        raise ApiError(400, "the request body is empty; send a JSON object")
    try:
        body = json.loads(raw, parse_int=_parse_int)
    except UnicodeDecodeError:
        raise ApiError(400, "the request body is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise ApiError(
            400, f"the request body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise ApiError(400, "the request body is nested too deeply") from None
    if not isinstance(body, dict):
        raise ApiError(400, f"the request body must be a JSON object, got {type_name(body)}")
    return body


def check_str(value: Any, where: str, *, allow_none: bool = False) -> str | None:
    if value is None and allow_none:
        return None
    if not isinstance(value, str):
        raise ApiError(400, f"{where} must be a string, got {type_name(value)}", param=where)
    return value


def check_bool(value: Any, where: str, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ApiError(400, f"{where} must be true or false, got {type_name(value)}", param=where)
    return value


def check_int(value: Any, where: str, *, lo: int | None = None, hi: int | None = None) -> int | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (isinstance(value, float) and not value.is_integer())
    ):
        raise ApiError(400, f"{where} must be an integer, got {type_name(value)}", param=where)
    value = int(value)
    if lo is not None and value < lo:
        raise ApiError(400, f"{where} must be at least {lo}, got {shown_number(value)}", param=where)
    if hi is not None and value > hi:
        raise ApiError(400, f"{where} must be at most {hi}, got {shown_number(value)}", param=where)
    return value


def check_number(value: Any, where: str, *, lo: float, hi: float) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ApiError(400, f"{where} must be a number, got {type_name(value)}", param=where)
    if not lo <= value <= hi:
        raise ApiError(400, f"{where} must be between {lo} and {hi}, got {shown(value)}", param=where)
    return float(value)


def check_tool_name(value: Any, where: str) -> str:
    name = check_str(value, where)
    assert name is not None
    if not is_tool_name(name):
        raise ApiError(
            400,
            f"{where} {shown(name)} is not a valid tool name (letters, digits, _ . -, starting "
            "with a letter or _, at most 64 characters)",
            param=where,
        )
    return name


def check_stop(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise ApiError(400, f"{where} must be a string or an array of strings", param=where)
    if len(value) > 16:
        raise ApiError(400, f"{where} has {len(value)} entries; at most 16 are allowed", param=where)
    return [s for s in value if s]


#: the code of a request's image that cannot be read (bad base64, not an image, a URL): also the
#: code of the engine's :class:`~app.engine.errors.ImageError` (``app.server._errors``)
INVALID_IMAGE = "invalid_image"
_BASE64 = re.compile(rb"[A-Za-z0-9+/]*={0,2}")


def image_error(where: str, problem: str) -> ApiError:
    """The 400 for a request's image that cannot be taken (code :data:`INVALID_IMAGE`):
    ``where`` (the message and part) and what is wrong with it."""
    return ApiError(400, f"{where} {problem}", param=where, code=INVALID_IMAGE)


def image_bytes(data: Any, where: str) -> bytes:
    """An image sent as base64 text (Ollama's ``images``, Anthropic's ``source.data``, a data URL's
    payload), as its bytes; a 400 naming ``where`` for anything else. Whitespace (line-wrapped
    base64) is skipped; what the bytes are is checked in the engine process, which reads them."""
    if not isinstance(data, str):
        raise image_error(where, f"must be an image as base64 text, got {type_name(data)}")
    raw = data.encode("ascii", "replace")
    if any(c in raw for c in b" \t\r\n"):
        raw = b"".join(raw.split())
    if not raw:
        raise image_error(where, "is empty: an image's base64 text is needed")
    if len(raw) % 4 or not _BASE64.fullmatch(raw):
        raise image_error(where, "is not valid base64 (only A-Z a-z 0-9 + / and = padding, in groups of 4)")
    return base64.b64decode(raw)


_DATA_URL = re.compile(r"data:([^,;]*)((?:;[^,;]*)*),", re.IGNORECASE)
#: what a refused URL says: where the image must be instead
NEVER_FETCHED = "this server never fetches a URL a request names: send the image inline"


def data_url_image(url: Any, where: str) -> bytes:
    """The image a ``data:`` URL holds (``data:image/png;base64,...``). Any other URL is a 400:
    this server never fetches a URL a request names (it would reach whatever the URL points at,
    from the server's machine); a media type that is not ``image/...`` or a payload that is not
    base64 is a 400 too."""
    if not isinstance(url, str):
        raise image_error(where, f"must be a data URL string, got {type_name(url)}")
    m = _DATA_URL.match(url)
    if m is None:
        scheme = url.split(":", 1)[0].lower() if ":" in url[:16] else ""
        what = f"an {scheme} URL" if scheme in ("http", "https") else f"the URL {shown(url[:64])}"
        raise image_error(where, f"is {what}; {NEVER_FETCHED} as a data URL (data:image/png;base64,...)")
    media_type = m.group(1).strip().lower()
    params = [p.strip().lower() for p in m.group(2).split(";") if p.strip()]
    if not media_type.startswith("image/"):
        raise image_error(
            where,
            f"is a data URL of media type {shown(media_type or 'text/plain')}, not an image (image/png, image/jpeg...)",
        )
    if "base64" not in params:
        raise image_error(where, f"is a data URL that is not base64 (data:{media_type};base64,...)")
    return image_bytes(url[m.end() :], where)


def check_image_media_type(value: Any, where: str) -> str:
    """A declared media type of an image (Anthropic's ``source.media_type``): ``image/...``."""
    media_type = check_str(value, where)
    assert media_type is not None
    if not media_type.strip().lower().startswith("image/"):
        raise image_error(where, f"{shown(media_type)} is not an image media type (image/png, image/jpeg...)")
    return media_type


async def request_body(request: Request) -> tuple[ServerState, dict[str, Any]]:
    """The server's state and the request's JSON object (413 / 400 as :func:`read_json` says,
    400 past the bounds :func:`check_request_bounds` checks)."""
    state: ServerState = request.app.state.callisto
    body = await read_json(request, state.config.max_body_bytes)
    check_request_bounds(body, state.config.max_tools, state.config.max_schema_bytes)
    return state, body


#: the fields whose JSON Schemas the engine compiles into a constraint or renders into the prompt:
#: tools (every API), response_format (OpenAI), format (Ollama)
SCHEMA_FIELDS = ("tools", "response_format", "format")


def check_request_bounds(body: dict[str, Any], max_tools: int, max_schema_bytes: int) -> None:
    """At most ``max_tools`` tools, and at most ``max_schema_bytes`` bytes of JSON in the tool
    definitions and response schemas together: checked on the request as it came, before it is
    converted and before any engine work (a constraint over thousands of tools or a megabyte
    schema would hold the engine for a minute, and the prompt could not hold them anyway)."""
    tools = body.get("tools")
    if isinstance(tools, list) and len(tools) > max_tools:
        raise ApiError(
            400,
            f"the request declares {len(tools)} tools; at most {max_tools} tools are allowed per request",
            param="tools",
            code="too_many_tools",
        )
    parts = [body[k] for k in SCHEMA_FIELDS if body.get(k) is not None]
    if not parts:
        return
    try:
        size = len(json_text(parts).encode("utf-8"))
    except RecursionError:
        raise ApiError(400, "the request body is nested too deeply") from None
    if size > max_schema_bytes:
        raise ApiError(
            400,
            f"the request's tool definitions and response schema are {size} bytes of JSON; "
            f"at most {max_schema_bytes} bytes are allowed per request",
            param="tools" if body.get("tools") is not None else None,
            code="schema_too_large",
        )


async def queue_turn(state: ServerState, req: TurnRequest) -> Turn:
    """The request's turn, its model resolved (404 with the names) and queued (429 when full)."""
    turn = Turn(state, req)
    await turn.submit()
    return turn


async def streamed(
    turn: Turn, request: Request, body: AsyncIterator[bytes], media_type: str = "text/event-stream"
):
    """A streamed reply of ``body``, once the turn's first event came: what the engine refuses (the
    template, the context, a constraint) is an error status, not a broken stream. Server-sent
    events go out unbuffered (``X-Accel-Buffering``: a proxy in front must not hold them)."""
    from starlette.responses import StreamingResponse

    await turn.first(request)
    sse = media_type == "text/event-stream"
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"} if sse else None
    return StreamingResponse(body, media_type=media_type, headers=headers)


def prompt_token_ids(value: Any, where: str = "prompt") -> list[int] | None:
    """A prompt's token ids (a completion's ``prompt``, Ollama's ``context``): ``value`` when it is
    an array of whole numbers (empty too), else None; a negative id is a 400 naming ``where`` (the
    vocabulary's end is the engine's to check: ``generate()``)."""
    if not isinstance(value, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in value):
        return None
    if value and min(value) < 0:
        raise ApiError(400, f"{where} holds token id {min(value)}: token ids are 0 or more", param=where)
    return list(value)


#: what only Ollama's Go templates write: ``{{ .Prompt }}``, ``{{ $.Tools }}``, ``{{ if .System }}``,
#: ``{{ range .Messages }}``, ``{{ end }}`` (a Jinja expression never starts with ``.`` or ``$``)
_GO_TEMPLATE = re.compile(r"\{\{-?\s*(?:[.$]|(?:if|range|with|define|template|block)\s+[.$(]|end\s*-?\}\})")


def read_chat_template(value: Any, where: str) -> str | None:
    """A request's own chat template (vLLM's ``chat_template``, Ollama's ``template``): a Jinja
    template, compiled here (in the sandbox every template runs in) so that one that cannot be is
    a 400 before the request waits for the model; None or empty: the model's own."""
    from app.engine.errors import TemplateRenderError
    from app.engine.templates import compile_template

    source = check_str(value, where, allow_none=True)
    if not source:
        return None
    if _GO_TEMPLATE.search(source):
        raise ApiError(
            400,
            f"{where} is written in Ollama's Go template language, which Callisto does not run: send a "
            "Jinja chat template (as /api/show gives a model's), or leave it out for the model's own",
            param=where,
        )
    try:
        compile_template(source)
    except TemplateRenderError as exc:
        raise ApiError(400, f"{where} cannot be read: {exc}", param=where) from exc
    return source


def declared_tool(
    name: Any, description: Any, parameters: Any, *, where: str, schema_field: str, seen: set[str]
) -> dict[str, Any]:
    """One tool a request declares (OpenAI's ``function`` or Anthropic's tool), in the engine's
    (OpenAI) shape: a valid name, declared once, with a JSON Schema object."""
    tool_name = check_tool_name(name, f"{where}.name")
    if tool_name in seen:
        raise ApiError(400, f"{where}: the tool {shown(tool_name)} is declared twice", param=where)
    seen.add(tool_name)
    if not isinstance(parameters, dict):
        raise ApiError(400, f"{where}.{schema_field} must be a JSON Schema object", param=where)
    desc = check_str(description, f"{where}.description", allow_none=True) or ""  # null: none
    return {
        "type": "function",
        "function": {"name": tool_name, "description": desc, "parameters": parameters},
    }


TOOL_CHOICE_HEADER = "X-Callisto-Tool-Choice"


def json_response_format(schema: dict[str, Any] | None) -> dict[str, Any]:
    """A response format that holds a reply to ``schema`` (None: any JSON object, bounded, that
    the engine closes within the token limit: ``app.engine.constraints.json_object``)."""
    if schema is None:
        return {"type": "json_object"}
    return {"type": "json_schema", "json_schema": {"schema": schema}}


def header_tool_choice(value: str, tools: list[dict[str, Any]] | None, messages: list[dict[str, Any]]) -> str:
    """The ``X-Callisto-Tool-Choice`` header, for a client that cannot set a tool choice (simonw's
    ``llm``, the ollama client), as the engine's choice: ``auto``, ``none``, ``required``, a
    declared tool's name, or ``once``: ``required`` until the conversation (``messages``, the
    engine's dicts) has a tool result after its last user message, then ``none``: one round of
    calls, then an answer. A small model made to call goes on calling (the same call again) once a
    call is in its context; ``once`` lets it finish. Anything else is a 400."""
    value = value.strip()
    names = [t["function"]["name"] for t in tools or []]
    if value in ("auto", "none"):
        return value
    if value in ("required", "once") and not names:
        return "auto"  # nothing to call
    if value == "required":
        return value
    if value == "once":
        last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1)
        answered = any(m["role"] == "tool" for m in messages[last_user + 1 :])
        return "none" if answered else "required"
    if value in names:
        return f"function:{value}"
    raise ApiError(
        400,
        f"the {TOOL_CHOICE_HEADER} header {shown(value)} is not one of auto, none, required, once "
        f"or a declared tool's name ({', '.join(names) or 'none declared'})",
        param="tool_choice",
    )


#: the engine's sampler settings (``app.engine.sampling.SamplingParams``) that are numbers, with the
#: ranges a request may set them in, by their names in OpenAI's body and Ollama's ``options``
#: (llama-server's and LM Studio's names for those OpenAI lacks)
SAMPLER_RANGES: tuple[tuple[str, float, float], ...] = (
    ("temperature", 0.0, 2.0),
    ("top_p", 0.0, 1.0),
    ("min_p", 0.0, 1.0),
    ("typical_p", 0.0, 1.0),
    ("repeat_penalty", 0.0, 10.0),
    ("presence_penalty", -2.0, 2.0),
    ("frequency_penalty", -2.0, 2.0),
    ("mirostat_tau", 0.0, 100.0),
    ("mirostat_eta", 0.0, 1.0),
)


#: the most tokens one ``logit_bias`` may name
MAX_LOGIT_BIAS = 1024


def read_logit_bias(value: Any) -> dict[int, float] | None:
    """``logit_bias``: token ids and each one's bias to its logit, -100 to 100 (-100 bans the
    token). OpenAI's object (``{"50256": -100}``), or llama-server's array too (``[[15043, 1.5],
    [50256, false]]``, false banning it). The ids are checked against the model's vocabulary when
    the request runs. None: no bias."""
    if value is None:
        return None
    if isinstance(value, dict):
        pairs = list(value.items())
    elif isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 for p in value):
        pairs = [(p[0], p[1]) for p in value]
    else:
        raise ApiError(
            400,
            f"logit_bias must be an object of token ids and biases, got {type_name(value)}",
            param="logit_bias",
        )
    if len(pairs) > MAX_LOGIT_BIAS:
        raise ApiError(
            400, f"logit_bias names {len(pairs)} tokens; at most {MAX_LOGIT_BIAS}", param="logit_bias"
        )
    out: dict[int, float] = {}
    for key, bias in pairs:
        try:
            token = int(key) if isinstance(key, int | str) and not isinstance(key, bool) else None
        except ValueError:
            token = None
        if token is None or token < 0:
            raise ApiError(
                400,
                f"logit_bias keys must be token ids (get them from /tokenize), got {shown(key)}",
                param="logit_bias",
            )
        if bias is False:
            bias = -100.0
        if isinstance(bias, bool) or not isinstance(bias, int | float) or not -100.0 <= bias <= 100.0:
            raise ApiError(
                400,
                f"logit_bias[{token}] must be a number from -100 to 100, got {shown(bias)}",
                param="logit_bias",
            )
        out[token] = float(bias)
    return out or None


def read_sampling(
    body: dict[str, Any],
    ranges: tuple[tuple[str, float, float], ...],
    *,
    top_k: bool = False,
    mirostat: bool = False,
    where: str = "",
) -> dict[str, Any]:
    """The sampler values a request sets, each checked against its range (``seed`` always read;
    ``top_k`` and ``mirostat``, the mode 0-2, where asked); ``where`` prefixes the names a 400
    gives (``options.``)."""
    s: dict[str, Any] = {}
    for key, lo, hi in ranges:
        v = check_number(body.get(key), where + key, lo=lo, hi=hi)
        if v is not None:
            s[key] = v
    if top_k and (k := check_int(body.get("top_k"), where + "top_k", lo=0)) is not None:
        s["top_k"] = k
    if mirostat and (mode := check_int(body.get("mirostat"), where + "mirostat", lo=0, hi=2)) is not None:
        s["mirostat_mode"] = mode
    seed = check_int(body.get("seed"), where + "seed")
    if seed is not None:
        s["seed"] = seed & 0xFFFFFFFF
    return s


def result_call_id(client_id: str, open_calls: Container[str], where: str, what: str) -> str:
    """The inner id of the call a tool result answers; 400 when no earlier assistant message made it."""
    inner = inner_call_id(client_id)
    if inner not in open_calls:
        raise ApiError(
            400,
            f"{where} is {what} for call {shown(client_id)}, but no earlier message made that call "
            "(no assistant message before it has a call with that id)",
            param=where,
        )
    return inner


def inner_call_id(client_id: str) -> str:
    """The id a template sees for a client's call id: the 9 alphanumerics of one this server issued
    (``call_XXXXXXXXX``, ``toolu_XXXXXXXXX``), else the client's id as is (the renderer maps ids that
    are not 9 alphanumerics to ones that are, consistently for a call and its result)."""
    m = _PREFIXED_ID.match(client_id)
    return m.group(1) if m else client_id


def used_ids(messages: list[dict[str, Any]]) -> set[str]:
    return {c["id"] for m in messages for c in m.get("tool_calls") or [] if c.get("id")}


class Turn:
    """One generation for one request: queued on the engine, events read with :meth:`events`."""

    def __init__(self, state: ServerState, req: TurnRequest):
        self.state = state
        self.req = req
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.cancel = threading.Event()
        self.model_id = ""
        self.entry: Any = None  # the catalog's entry of the model (set when the turn is queued)
        self.started = time.monotonic()
        self._pending: tuple[str, list[str]] | None = None
        self._first: tuple[str, Any] | None = None
        self._last_flush = 0.0
        #: the ``logprobs`` events :meth:`collect` saw ((kind, entries), in order), the prompt's
        #: (``prompt_logprobs``) and the prompt's text (``echo``)
        self.logprobs: list[tuple[str, list[Any]]] = []
        self.prompt_logprobs: list[Any] | None = None
        self.echo = ""
        #: the seconds the engine took to load the model for this request; None: it was loaded
        #: (set before the turn's first event)
        self.load_s: float | None = None
        self.last_end: TurnEnd | None = None  # how it ended (:meth:`log`)

    def _put(self, kind: str, value: Any) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, (kind, value))

    def _emit(self, kind: str, value: Any) -> None:
        """The engine thread's emit: text and reasoning pieces are handed over at once when they are
        the first, then coalesced at most every ``FLUSH_S`` (a wake-up of the event loop per token
        costs decode speed on a small machine, as the window's worker found); anything else goes
        at once, after what is pending, so order is kept."""
        if kind in ("text", "reasoning"):
            if self._pending and self._pending[0] != kind:
                self._flush()
            if self._pending:
                self._pending[1].append(value)
            else:
                self._pending = (kind, [value])
            now = time.monotonic()
            if now - self._last_flush >= FLUSH_S:
                self._flush()
                self._last_flush = now
            return
        self._flush()
        self._put(kind, value)

    def _flush(self) -> None:
        if self._pending:
            kind, parts = self._pending
            self._pending = None
            self._put(kind, "".join(parts))

    async def submit(self) -> None:
        """Resolve the model (404 with the names if unknown) and queue the turn (429 when full)."""
        tool_format = self.state.config.tool_format

        def run(model: Any) -> tuple[str, Any]:
            req = self.req  # (a made model's settings applied: :meth:`submit_fn`)
            used = used_ids(req.messages)
            self.state.metrics.saw(model.backend)
            try:
                end = run_turn(model, req, self._emit, self.cancel, tool_format=tool_format, used_ids=used)
            finally:
                self._flush()
            self.state.finished.append(end)
            self.state.metrics.record(end)
            return "end", end

        await self.submit_fn(run)

    async def submit_fn(self, fn: Callable[[Any], tuple[str, Any]]) -> None:
        """Queue ``fn(model)`` on the engine for the request's model; the event it returns is the
        request's last, put once the model's use has ended (so a client that has its reply finds the
        model idle, never still in use); its errors come as ``error``. A model made over the API
        (``app.server._presets``) sets :attr:`req`'s values where the request set none."""
        from starlette.concurrency import run_in_threadpool

        state = self.state
        try:
            entry = await run_in_threadpool(state.catalog.resolve, self.req.model, state.loaded_entry())
        except ApiError as err:  # (no such model, or none loaded): the log names what was asked
            if err.model is None and self.req.model:
                err.model = str(self.req.model)
            raise
        if entry.preset is not None:
            self.req = entry.preset.applied_to(self.req, state.config.max_tokens_limit)
        self.model_id, self.entry = entry.id, entry
        ended = _Once(state.reaper.end, state.reaper.begin(entry), self.req.idle_ttl)  # in use until it ends
        settings, exact = state.settings_for_context(entry, self.req.n_ctx)

        def run(_host: Any, model: Any) -> None:
            self.load_s = job.load_s
            try:
                last = fn(model)
            finally:
                ended()
            self._put(*last)

        def failed(err: BaseException) -> None:
            ended()
            self._put("error", as_api_error(err))

        job = Job(
            run=run,
            model=entry,
            cancel=self.cancel,
            on_error=failed,
            owner="server",
            settings=settings,
            exact=exact,  # loaded again for a context it needs (Ollama's num_ctx)
            batchable=True,  # on a model with slots, it streams beside the others
        )
        try:
            submit_job(state.host, job)
        except ApiError:
            ended()
            raise

    def _name_model(self, request: Request) -> None:
        """The request's log line names the model it was queued for (one refused names it too)."""
        if self.model_id:
            request.scope.setdefault("callisto.log", {})["model"] = self.model_id

    async def first(self, request: Request) -> None:
        """Wait for the turn's first event, so that what the engine refuses (the template, the
        context, a constraint) is an error status before a stream's headers go out. A client that
        leaves while its request waits cancels it."""
        self._name_model(request)
        watcher = asyncio.ensure_future(_watch_disconnect(request, self.cancel))
        try:
            item = await self.queue.get()
        finally:
            watcher.cancel()
        if item[0] == "error":
            raise item[1]
        self._first = item

    async def run(self, request: Request, fn: Callable[[Any, threading.Event], Any]) -> Any:
        """``fn(model, cancel)`` as the request's one job on its model (loaded if need be, queued as a
        turn is): its value, or its error raised. A client that leaves while it waits or runs sets
        ``cancel`` (``fn`` may look at it between parts of its work)."""
        await self.submit_fn(lambda model: ("end", fn(model, self.cancel)))
        await self.first(request)
        assert self._first is not None
        (_kind, value), self._first = self._first, None
        return value

    async def events(self) -> AsyncIterator[tuple[str, Any]]:
        """``("text"|"reasoning", str)``, ``("call", ToolCall)``, then ``("end", TurnEnd)``; an
        :class:`ApiError` from the engine is raised. A turn that asked for log probabilities also
        has ``("logprobs", (kind, entries))`` before each text, reasoning or call."""
        while True:
            if self._first is not None:
                (kind, value), self._first = self._first, None
            else:
                kind, value = await self.queue.get()
            if kind == "error":
                raise value
            yield kind, value
            if kind == "end":
                return

    async def collect(self, request: Request) -> tuple[str, str, list[Any], TurnEnd]:
        """The whole reply (text, reasoning, calls, end), cancelling if the client goes away; the
        log probabilities asked for are in :attr:`logprobs`."""
        self._name_model(request)
        watcher = asyncio.ensure_future(_watch_disconnect(request, self.cancel))
        text: list[str] = []
        reasoning: list[str] = []
        calls: list[Any] = []
        try:
            async for kind, value in self.events():
                if kind == "text":
                    text.append(value)
                elif kind == "reasoning":
                    reasoning.append(value)
                elif kind == "call":
                    calls.append(value)
                elif kind == "logprobs":
                    self.logprobs.append(value)
                elif kind == "prompt_logprobs":
                    self.prompt_logprobs = value
                elif kind == "echo":
                    self.echo = value
                elif kind == "end":
                    return "".join(text), "".join(reasoning), calls, value
        finally:
            watcher.cancel()
        raise ApiError(500, "the turn ended without a result")  # pragma: no cover

    def logprob_entries(self, kinds: tuple[str, ...]) -> list[Any]:
        """The collected reply's log probabilities of the tokens of ``kinds``, in order."""
        return [e for kind, entries in self.logprobs if kind in kinds for e in entries]

    def log(self, request: Request, end: TurnEnd | None, ncalls: int) -> None:
        """Note the turn's model, counts and calls in the request's log line; the turn and how it
        ended stay on the request (``callisto.turn``, :attr:`last_end`) for what wraps its handler."""
        self.last_end = end
        request.scope["callisto.turn"] = self
        entry = request.scope.setdefault("callisto.log", {})
        entry["model"] = self.model_id
        if end is not None:
            entry["prompt_tokens"] = end.prompt_tokens
            entry["completion_tokens"] = end.completion_tokens
        entry["tool_calls"] = ncalls


class _Once:
    """``fn(*args)`` on the first call only (a job's end is told by its run or by its error)."""

    def __init__(self, fn: Callable[..., None], *args: Any):
        self._call: tuple[Callable[..., None], tuple[Any, ...]] | None = (fn, args)
        self._lock = threading.Lock()

    def __call__(self) -> None:
        with self._lock:
            call, self._call = self._call, None
        if call is not None:
            call[0](*call[1])


async def _watch_disconnect(request: Request, cancel: threading.Event) -> None:
    try:
        while True:
            message = await request.receive()
            if message.get("type") == "http.disconnect":
                cancel.set()
                return
    except Exception:  # noqa: BLE001 - the request is over either way
        return


def call_arguments_json(call: Any) -> str:
    """A call's arguments as the JSON text every API sends (the same streamed and not)."""
    args = call.arguments
    if isinstance(args, str):
        return clean_text(args)
    return json_text(args)


def split_fragments(text: str, n: int = 3) -> list[str]:
    """``text`` in up to ``n`` pieces that concatenate back to it (streamed call arguments)."""
    if len(text) <= 8:
        return [text]
    step = -(-len(text) // n)
    return [text[i : i + step] for i in range(0, len(text), step)]


def convert_tools(tools: Any) -> list[dict[str, Any]] | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise ApiError(400, f"tools must be an array, got {type_name(tools)}", param="tools")
    out = []
    seen: set[str] = set()
    for i, t in enumerate(tools):
        w = f"tools[{i}]"
        if not isinstance(t, dict):
            raise ApiError(400, f"{w} must be an object, got {type_name(t)}", param=w)
        if t.get("type") != "function":
            raise ApiError(
                400, f"{w}.type {shown(t.get('type'))} is not supported (only 'function')", param=w
            )
        fn = t.get("function")
        if not isinstance(fn, dict):
            raise ApiError(400, f"{w}.function must be an object", param=w)
        out.append(
            declared_tool(
                fn.get("name"),
                fn.get("description", ""),
                fn.get("parameters", {"type": "object", "properties": {}}),
                where=f"{w}.function",
                schema_field="parameters",
                seen=seen,
            )
        )
    return out or None
