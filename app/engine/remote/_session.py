"""A chat session with a remote model: the local :class:`~app.engine.chat.ChatSession` contract
(``send`` / ``regenerate`` yield the same events, ``messages`` are the same messages) over HTTP.

Two tool modes (``parser``):

* ``api``: the tools go to the endpoint as JSON; its ``tool_calls`` / ``tool_use`` are the calls.
* ``callisto``: the endpoint only completes raw text (llama-server's ``/completion``, any
  ``/v1/completions``, Ollama's raw ``/api/generate``); Callisto renders the conversation through
  the model's own template (from ``/props``, a GGUF or a ``tokenizer_config.json``), detects the
  family and reads the reply with that family's stream parser.
* ``auto`` (the default): the provider's ``mode``; where that is ``auto`` too, ``callisto`` when a
  template was given or the endpoint's ``/props`` has one in a known family, else ``api``.

``continue_reply`` goes on from a reply cut by its token limit, in the same message, where the
endpoint can (:meth:`RemoteChatSession.continues_in_place`): Callisto parsing writes the cut text
after the rendered prompt; the Anthropic and Ollama APIs and llama-server's (an OpenAI-compatible
endpoint whose ``/props`` answered: llama-server, Callisto) take it as a final assistant message,
the reply's start (a prefill). OpenAI's own API and vLLM (without a flag) would answer such a
message as a finished turn, so there the window asks for the rest in a message instead.

Calls always run here, through the local dispatcher (approvals included). Every call's parser is
recorded in ``DoneEvent.call_parsers`` (call id -> ``api:openai``, ``callisto:hermes``...). The
rounds are the one chat loop's (``app.engine.loop.run_rounds``); this session supplies one reply.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from app.calls import IncompleteCall, ToolCall
from app.engine.events import ChatEvent, DoneEvent, NoticeEvent
from app.engine.formats.events import ReasoningDelta, TextDelta, ToolCallDone, ToolCallIncomplete
from app.engine.loop import (
    CallIds,
    Continued,
    RoundEnd,
    cut_after_last_user,
    dispatcher_for,
    run_rounds,
    take_cut_reply,
)
from app.engine.messages import Message
from app.engine.remote._client import (
    MAX_TOKENS_SLACK,
    Provider,
    RemoteError,
    ReplyGuard,
    byte_size,
    fetch_props,
    open_stream,
)

__all__ = [
    "PARSERS",
    "RemoteChatSession",
    "RemoteTemplate",
    "is_repo_id",
    "load_template",
    "template_from_hub",
]

PARSERS = ("auto", "api", "callisto")
DEFAULT_MAX_ROUNDS = 8
#: ``budget_tokens`` sent to an Anthropic endpoint when thinking is on with no budget (the API's least)
ANTHROPIC_DEFAULT_BUDGET = 1024


@dataclass(frozen=True)
class RemoteTemplate:
    """The model's templates as Callisto parsing needs them; ``source`` says where they came from."""

    chat_template: str
    tool_use_template: str | None = None
    bos_token: str = ""
    eos_token: str = ""
    source: str = ""
    add_bos: bool | None = None  # whether the engine adds a BOS token to a prompt (None: not known)
    extra: dict[str, Any] = field(default_factory=dict)


def _token_text(value: Any) -> str:
    if isinstance(value, dict):  # tokenizer_config.json's AddedToken shape
        value = value.get("content")
    return value if isinstance(value, str) else ""


_REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")


def is_repo_id(value: str | Path) -> bool:
    """Whether ``value`` names a Hugging Face repository (``org/name``) rather than a file here."""
    text = str(value)
    return (
        bool(_REPO_ID.fullmatch(text)) and not Path(text).exists() and not text.endswith((".gguf", ".json"))
    )


def template_from_hub(
    repo_id: str,
    *,
    revision: str | None = None,
    token: str | None = None,
    cache_dir: str | Path | None = None,
) -> RemoteTemplate:
    """The chat template of a Hugging Face repository: its ``tokenizer_config.json`` (``chat_template``
    as a string or a named list, and the special tokens) and, when present, ``chat_template.jinja``
    or ``chat_template.json``, which take precedence as they do in transformers. Downloads through
    huggingface_hub (``HF_ENDPOINT`` and ``HF_TOKEN`` are honoured). ValueError names what is wrong:
    no such repository, a gated one, no template."""
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import (
            EntryNotFoundError,
            GatedRepoError,
            HfHubHTTPError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )
    except ImportError as exc:  # pragma: no cover - a pinned dependency
        raise ValueError(f"huggingface_hub is not installed ({exc})") from exc

    import os

    endpoint = os.environ.get("HF_ENDPOINT") or None  # read now (huggingface_hub reads it at import)
    if cache_dir is None and (os.environ.get("HF_HUB_CACHE") or os.environ.get("HF_HOME")):
        cache_dir = os.environ.get("HF_HUB_CACHE") or os.path.join(os.environ["HF_HOME"], "hub")

    def fetch(name: str) -> Path | None:
        try:
            return Path(
                hf_hub_download(
                    repo_id, name, revision=revision, token=token, endpoint=endpoint, cache_dir=cache_dir
                )
            )
        except GatedRepoError:
            raise ValueError(
                f"the Hugging Face repository {repo_id} is gated: accept its licence on the hub and set "
                "HF_TOKEN (or log in with `hf auth login`) to read its template"
            ) from None
        except RepositoryNotFoundError:
            raise ValueError(
                f"there is no Hugging Face repository {repo_id} (or it is private: set HF_TOKEN to read it)"
            ) from None
        except RevisionNotFoundError:
            raise ValueError(f"the Hugging Face repository {repo_id} has no revision {revision!r}") from None
        except EntryNotFoundError:
            return None
        except LocalEntryNotFoundError as exc:
            raise ValueError(
                f"cannot reach the Hugging Face hub to read {repo_id}'s template: {exc}"
            ) from None
        except HfHubHTTPError as exc:
            status = getattr(exc.response, "status_code", None)
            if status in (401, 403):
                raise ValueError(
                    f"the Hugging Face hub refused access to {repo_id} (HTTP {status}): set HF_TOKEN "
                    "to a token that may read it"
                ) from None
            raise ValueError(f"cannot read {repo_id}'s template from the Hugging Face hub: {exc}") from None

    config_path = fetch("tokenizer_config.json")
    config: dict[str, Any] = {}
    if config_path is not None:
        try:
            data = json.loads(config_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ValueError(f"{repo_id}'s tokenizer_config.json is not JSON: {exc}") from None
        config = data if isinstance(data, dict) else {}
    raw: Any = config.get("chat_template")
    jinja = fetch("chat_template.jinja")
    if jinja is not None:
        raw = jinja.read_text(encoding="utf-8")
    else:
        extra = fetch("chat_template.json")
        if extra is not None:
            try:
                raw = json.loads(extra.read_text(encoding="utf-8")).get("chat_template", raw)
            except (OSError, UnicodeDecodeError, ValueError, AttributeError) as exc:
                raise ValueError(f"{repo_id}'s chat_template.json is not readable: {exc}") from None
    if config_path is None and raw is None:
        raise ValueError(
            f"the Hugging Face repository {repo_id} has no tokenizer_config.json or chat template"
        )
    try:
        return _template_from_config({**config, "chat_template": raw}, f"hf:{repo_id}")
    except ValueError:
        raise ValueError(
            f"the Hugging Face repository {repo_id} has no chat template (no chat_template in its "
            "tokenizer_config.json, no chat_template.jinja or chat_template.json)"
        ) from None


def load_template(path: str | Path) -> RemoteTemplate:
    """The templates of a ``.gguf`` file, a ``tokenizer_config.json`` or a Hugging Face repository id
    (``org/name``: :func:`template_from_hub`). ValueError when it has none."""
    if is_repo_id(path):
        return template_from_hub(str(path))
    p = Path(path)
    if p.suffix.lower() == ".gguf":
        from app.engine.models.metadata import read_metadata

        meta = read_metadata(p)
        if not meta.chat_template:
            raise ValueError(f"{p.name} has no chat template")
        return RemoteTemplate(
            meta.chat_template,
            meta.tool_use_template,
            meta.bos_token or "",
            meta.eos_token or "",
            source=str(p),
            add_bos=meta.add_bos_token,
        )
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"cannot read the template file {p}: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{p} has no chat_template")
    return _template_from_config(data, str(p))


def _template_from_config(data: dict[str, Any], source: str) -> RemoteTemplate:
    p = source
    raw = data.get("chat_template")
    tool_use = None
    if isinstance(raw, list):  # [{"name": "default", "template": ...}, {"name": "tool_use", ...}]
        named = {t.get("name"): t.get("template") for t in raw if isinstance(t, dict)}
        raw, tool_use = named.get("default"), named.get("tool_use")
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError(f"{p} has no chat_template")
    add_bos = data.get("add_bos_token")
    return RemoteTemplate(
        raw,
        tool_use if isinstance(tool_use, str) else None,
        _token_text(data.get("bos_token")),
        _token_text(data.get("eos_token")),
        source=source,
        add_bos=add_bos if isinstance(add_bos, bool) else None,
    )


def _template_from_props(
    provider: Provider, props: dict[str, Any], model: str | None = None
) -> RemoteTemplate | None:
    chat = props.get("chat_template")
    if not isinstance(chat, str) or not chat.strip():
        return None
    tool_use = props.get("chat_template_tool_use")
    return RemoteTemplate(
        chat,
        tool_use if isinstance(tool_use, str) and tool_use.strip() else None,
        _token_text(props.get("bos_token")),
        _token_text(props.get("eos_token")),
        source=f"{provider.base}/props",
        add_bos=_adds_bos(provider, model),
        extra={"llama_server": True},
    )


def _adds_bos(provider: Provider, model: str | None = None) -> bool | None:
    """Whether llama-server adds a BOS token to a prompt: its ``/tokenize`` of nothing (for
    ``model``, on a server of several) says."""
    from app.engine.remote._client import _request_json

    body: dict[str, Any] = {"content": "", "add_special": True}
    if model:
        body["model"] = model
    try:
        data = _request_json(provider, "POST", "/tokenize", body)
    except RemoteError:
        return None
    tokens = data.get("tokens") if isinstance(data, dict) else None
    return bool(tokens) if isinstance(tokens, list) else None


def _after_rewritten(ev: TextDelta, rewritten: str) -> tuple[TextDelta, str]:
    """``ev`` without the start of ``rewritten`` it writes again (white space the cut text kept
    and the endpoint was sent without), and what of ``rewritten`` may still come ("" once the
    text differs from it)."""
    text = ev.text
    n = 0
    while n < min(len(text), len(rewritten)) and text[n] == rewritten[n]:
        n += 1
    if n == len(text):  # all of it was the white space again (so far)
        return TextDelta(""), rewritten[n:]
    return (TextDelta(text[n:]) if n else ev), ""


@dataclass
class _Meter:
    """How one remote generation went: when its pieces came, how the endpoint said it ended.
    With ``max_tokens``, more pieces than that (and ``MAX_TOKENS_SLACK``) end the reply: a piece
    is at most one token, so a server that sends more ignored the ``max_tokens`` it was sent."""

    finish: str = "stop"
    first_token_at: float | None = None
    last_token_at: float | None = None
    pieces: int = 0
    tokens: int = 0  # pieces that carry text (a call's opening, with its name only, does not)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    guard: ReplyGuard | None = None
    max_tokens: int | None = None
    where: str = ""

    @property
    def shown(self) -> bool:
        return self.pieces > 0

    def piece(self, token: bool = True) -> None:
        now = time.monotonic()
        self.first_token_at = self.first_token_at or now
        self.last_token_at = now
        self.pieces += 1
        if self.guard is not None:
            self.guard.progress()
        if token:
            self.tokens += 1
            if self.max_tokens is not None and self.tokens > self.max_tokens + MAX_TOKENS_SLACK:
                raise RemoteError(
                    "too_large",
                    f"{self.where} sent more than the {self.max_tokens} tokens asked for (max_tokens); "
                    "the reply was cut there.",
                    retry=False,
                )

    def usage(self, prompt: Any, completion: Any) -> None:
        self.prompt_tokens = prompt if isinstance(prompt, int) else self.prompt_tokens
        self.completion_tokens = completion if isinstance(completion, int) else self.completion_tokens

    def end(self, finish: str) -> RoundEnd:
        """The round's end for the loop (``tool_calls`` is a normal stop here: the calls run)."""
        first, last = self.first_token_at, self.last_token_at
        return RoundEnd(
            finish="stop" if finish == "tool_calls" else finish,
            prompt_tokens=self.prompt_tokens or 0,
            generated_tokens=self.completion_tokens if self.completion_tokens is not None else self.pieces,
            first_token_at=first,
            decode_s=last - first if first is not None and last is not None else 0.0,
        )


class RemoteChatSession:
    """One conversation with ``model`` on ``provider``. ``send()`` / ``regenerate()`` yield ChatEvents."""

    def __init__(
        self,
        provider: Provider,
        model: str,
        *,
        parser: str = "auto",
        template: RemoteTemplate | str | Path | None = None,
        tool_format: str = "auto",
        registry: Any = None,
        dispatcher: Any = None,
        system_prompt: str | None = None,
        sampling: Mapping[str, Any] | None = None,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        max_tokens: int = 1024,
        messages: list[Message] | None = None,
        tool_choice: Any = "auto",
        thinking: Any = None,
    ):
        from app.engine.thinking import parse_thinking

        if parser not in PARSERS:
            raise ValueError(f"unknown parser {parser!r} (choices: {', '.join(PARSERS)})")
        if max_rounds < 1:
            raise ValueError(f"max_rounds must be at least 1, got {max_rounds}")
        if (provider.mode if parser == "auto" else parser) == "callisto" and provider.kind == "anthropic":
            raise ValueError(
                "Callisto parsing needs an endpoint that completes raw text; the Anthropic API "
                "does not (use the openai or ollama kind, or the api parser)"
            )
        self.provider = provider
        self.model = model
        self.parser_choice = provider.mode if parser == "auto" else parser  # auto: as the provider says
        self.template = load_template(template) if isinstance(template, str | Path) else template
        self.tool_format = tool_format
        self.registry = registry
        self.dispatcher = dispatcher_for(registry, dispatcher)
        self.system_prompt = system_prompt
        self.sampling = dict(sampling or {})
        self.max_rounds = max_rounds
        self.max_tokens = max_tokens
        self.tool_choice = tool_choice
        # the thinking choice of every turn (None: the endpoint's default; app.engine.thinking)
        self.thinking = None if thinking is None else parse_thinking(thinking)
        self._turn_thinking: Any = self.thinking
        self.messages: list[Message] = list(messages or [])
        self.last_prompt: Any = None  # Callisto parsing: the RenderedPrompt of the latest generation
        self.last_raw_prompt: str | None = None  # ...and the text sent (the BOS the engine adds left out)
        self.last_grammar: str | None = None  # ...and the GBNF sent with it (None: the reply was free)
        self.parser: str | None = None  # "api" or "callisto" once resolved
        self.effective_format: str | None = None  # the family Callisto parsing reads
        self._notices_pending: list[NoticeEvent] = []
        self._open_notices: list[NoticeEvent] = []
        self._source = ""
        self._options: dict[str, Any] = {}
        self._turn_choice: Any = tool_choice  # the turn's tool choice (held in its first round)
        self._turn_sampling: dict[str, Any] = self.sampling  # ...its sampling and max_tokens
        self._turn_max_tokens = max_tokens
        self._parsers: dict[str, str] = {}  # the turn's call id -> parser
        self._ids = CallIds.of(self.messages)
        #: Continue: the text the next reply goes on from (its first generation's; None: none)
        self._prefix: str | None = None
        #: Continue on the Anthropic API: the white space the cut text was sent without, which the
        #: reply's text loses where it writes it again (the cut text shown keeps it)
        self._rewritten = ""
        #: whether this OpenAI-compatible endpoint reads a final assistant message as the reply's
        #: start (its /props answers: llama-server, Callisto); None: not asked yet
        self._reads_prefill: bool | None = None

    # -- public -------------------------------------------------------------------------

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        if self.registry is None:
            return None
        return self.registry.openai_tools() or None

    def send(
        self,
        text: str,
        *,
        cancel: threading.Event | None = None,
        tool_choice: Any = None,
        parallel_tool_calls: bool | None = None,
        response_format: Any = None,
        thinking: Any = None,
    ) -> Iterator[ChatEvent]:
        """Add a user message and reply. ``parallel_tool_calls`` and ``response_format`` are passed
        to an endpoint that takes them (API tools; OpenAI's and Ollama's APIs). ``thinking``: this
        turn's thinking choice (None: the session's; see :meth:`_add_thinking`)."""
        from app.engine.thinking import parse_thinking

        if not isinstance(text, str):
            raise TypeError("the message must be a string")
        self._turn_thinking = self.thinking if thinking is None else parse_thinking(thinking)
        self.messages.append(Message(role="user", content=text))
        return self._reply(
            cancel,
            self.tool_choice if tool_choice is None else tool_choice,
            {"parallel_tool_calls": parallel_tool_calls, "response_format": response_format},
        )

    def regenerate(
        self,
        *,
        cancel: threading.Event | None = None,
        tool_choice: Any = None,
        thinking: Any = None,
        sampling: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> Iterator[ChatEvent]:
        """Reply again to the last user message; the choices (None: the session's) are the ones the
        turn was first sent with: its tool choice, thinking, sampling and max_tokens."""
        from app.engine.thinking import parse_thinking

        self._turn_thinking = self.thinking if thinking is None else parse_thinking(thinking)
        cut_after_last_user(self.messages)
        return self._reply(
            cancel,
            self.tool_choice if tool_choice is None else tool_choice,
            {},
            sampling=sampling,
            max_tokens=max_tokens,
        )

    def continues_in_place(self) -> bool:
        """Whether :meth:`continue_reply` can go on from the reply that ends the conversation in
        that same message: the reply has no calls to run, and the endpoint reads the cut text as
        the start of its reply (see the module docstring). Before its first reply (a conversation
        opened again) a session knows that much without asking its endpoint: an Anthropic or
        Ollama endpoint goes on in either mode, an OpenAI-compatible one with Callisto parsing."""
        if not self.messages or self.messages[-1].role != "assistant" or self.messages[-1].tool_calls:
            return False
        parser = self.parser
        if parser is None:  # not resolved yet: no question to the endpoint from here (the UI asks)
            if self.parser_choice == "callisto":
                return True
            parser = "api" if self.provider.kind in ("anthropic", "ollama") else None
        if parser == "callisto":
            return True
        if parser != "api" or any(c.reason == "truncated" for c in self.messages[-1].incomplete_calls):
            return False  # (a call the API was writing is JSON, not text to go on from)
        if self.provider.kind in ("anthropic", "ollama"):
            return True
        return bool(
            (self.template is not None and self.template.extra.get("llama_server")) or self._reads_prefill
        )

    def continue_reply(
        self,
        *,
        cancel: threading.Event | None = None,
        tool_choice: Any = "auto",
        thinking: Any = None,
        sampling: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> Iterator[ChatEvent]:
        """Go on from the reply that ends the conversation (cut by its token limit): what the model
        writes joins that same message; no user message is added. The choices as
        :meth:`regenerate`'s. ValueError when the conversation does not end with such a reply, or
        the endpoint cannot go on from one (:meth:`continues_in_place`)."""
        from app.engine.thinking import parse_thinking

        try:
            self._resolve()  # (a conversation opened again: its mode is learnt here, on the engine's thread)
        except RemoteError as exc:
            raise ValueError(str(exc)) from exc
        if not self.continues_in_place():
            raise ValueError(
                f"{self._engine()} cannot go on from a reply in place: ask for the rest in a message"
            )
        continues = take_cut_reply(self.messages)
        if self.parser == "api":
            # a prefill: its reply does not think first (the APIs refuse thinking with one), and the
            # Anthropic API takes no final assistant text that ends in white space
            self._turn_thinking = None
            if self.provider.kind == "anthropic":
                sent = continues.prefix.rstrip()
                self._rewritten = continues.prefix[len(sent) :]  # the model is likely to write it again
                continues.prefix = sent
        else:
            self._turn_thinking = self.thinking if thinking is None else parse_thinking(thinking)
        self._prefix = continues.prefix
        return self._reply(
            cancel, tool_choice, {}, sampling=sampling, max_tokens=max_tokens, continues=continues
        )

    # -- resolving the mode ----------------------------------------------------------------

    def _resolve(self) -> None:
        if self.parser is not None:
            return
        choice = self.parser_choice
        if choice in ("auto", "callisto") and self.template is None and self.provider.kind != "anthropic":
            props = fetch_props(self.provider, self.model)
            self.template = _template_from_props(self.provider, props, self.model) if props else None
        if choice == "callisto" and self.template is None:
            raise ValueError(
                f"Callisto parsing needs the model's chat template: {self.provider.base} has no /props "
                "with one; give a GGUF, a tokenizer_config.json or a Hugging Face repository id (org/name)"
            )
        family = None
        if self.template is not None and choice != "api":
            from app.engine.chat import resolve_tool_format
            from app.engine.detection import detect_tool_format

            detected = detect_tool_format(
                self.template.chat_template,
                self.template.tool_use_template,
                bos_token=self.template.bos_token,
                eos_token=self.template.eos_token,
            )
            family, notices = resolve_tool_format(self.tool_format, detected)
            if choice == "callisto":
                self._notices_pending += notices
        if choice == "auto":
            choice = "callisto" if family is not None else "api"
        self.parser = choice
        self.effective_format = family if choice == "callisto" else None

    # -- the loop -------------------------------------------------------------------------

    def _history(self) -> list[Message]:
        sys = [Message(role="system", content=self.system_prompt)] if self.system_prompt else []
        return sys + self.messages

    def _reply(
        self,
        cancel: threading.Event | None,
        tool_choice: Any,
        options: dict[str, Any],
        *,
        sampling: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
        continues: Continued | None = None,
    ) -> Iterator[ChatEvent]:
        self._options = {k: v for k, v in options.items() if v is not None}
        self._turn_choice = tool_choice
        # the turn's sampling and max_tokens (Regenerate's: the turn's own; else the session's)
        self._turn_sampling = self.sampling if sampling is None else dict(sampling)
        self._turn_max_tokens = self.max_tokens if max_tokens is None else max_tokens
        self._parsers = {}
        try:
            self._resolve()
            if self._options.get("response_format") is not None and self.provider.kind == "anthropic":
                raise ValueError("a response format needs an OpenAI or Ollama endpoint")
        except (RemoteError, ValueError) as exc:
            if continues is not None:
                continues.join(self.messages, len(self.messages))  # the cut reply stays as it was
            yield self.finish_turn(DoneEvent(finish_reason="error", error=str(exc), rounds=0))
            return
        yield from self._notices_pending
        self._notices_pending = []
        yield from run_rounds(
            self,
            self.messages,
            dispatcher=self.dispatcher,
            max_rounds=self.max_rounds,
            cancel=cancel,
            continues=continues,
        )

    def generate_reply(self, round: int, cancel: threading.Event | None) -> Generator[Any, None, RoundEnd]:
        """One reply (``app.engine.loop.ReplySource``): the request, its stream read by the API's
        reader or by the family's parser; a failure keeps what was shown."""
        meter = _Meter(max_tokens=self._turn_max_tokens, where=self.provider.base)
        calls: list[ToolCall] = []
        choice = self._turn_choice if round == 1 else "auto"
        prefix, self._prefix = self._prefix, None  # Continue: the first reply's only
        rewritten, self._rewritten = self._rewritten, ""
        try:
            for ev in self._generate(meter, choice, cancel, prefix):
                if rewritten and isinstance(ev, TextDelta):
                    ev, rewritten = _after_rewritten(ev, rewritten)
                    if not ev.text:
                        continue
                if isinstance(ev, ToolCallDone):
                    calls.append(ev.call)
                yield ev
        except (RemoteError, ValueError) as exc:
            if cancel is not None and cancel.is_set():
                return meter.end("cancelled")
            end = meter.end("error")
            end.error, end.keep = str(exc), True
            end.error_code = exc.code if isinstance(exc, RemoteError) else "bad_request"
            end.generated_tokens = meter.pieces
            return end
        if cancel is not None and cancel.is_set():
            return meter.end("cancelled")
        label = (
            f"callisto:{self.effective_format}" if self.parser == "callisto" else f"api:{self.provider.kind}"
        )
        self._parsers.update((c.id, label) for c in calls)
        if round == 1:
            broken = self._choice_broken(choice, calls)
            if broken:
                yield broken
        return meter.end(meter.finish)

    def finish_turn(self, done: DoneEvent) -> DoneEvent:
        if done.finish_reason == "length":
            self._learn_prefill()  # a cut reply: whether Continue can go on in place
        return replace(
            done,
            remote=self.provider.kind,
            endpoint=self.provider.base,
            parser=self.parser,
            tool_format=self.effective_format,
            template_source=self.template.source
            if self.template is not None and self.parser == "callisto"
            else None,
            call_parsers=dict(self._parsers),
        )

    def _generate(
        self, meter: _Meter, tool_choice: Any, cancel: threading.Event | None, prefix: str | None = None
    ) -> Iterator[Any]:
        """One generation (``prefix``: the text it goes on from), retried (bounded) while nothing
        has been shown yet."""
        retries: list[NoticeEvent] = []

        def on_retry(err: RemoteError, attempt: int, wait: float) -> None:
            retries.append(
                NoticeEvent(
                    code="remote_retry",
                    message=(
                        f"{err.message} Trying again in {wait:.0f} s ({attempt} of {self.provider.max_retries})."
                    ),
                )
            )

        guard = ReplyGuard(self.provider)  # the reply's time bounds, across its retries
        meter.guard = guard
        attempt = 0
        while True:
            self._open_notices = []
            try:
                stream, reader = self._open(tool_choice, cancel, on_retry, guard, prefix)
            except RemoteError:
                yield from self._open_notices
                yield from retries
                raise
            yield from self._open_notices if attempt == 0 else ()
            yield from retries
            retries.clear()
            try:
                yield from reader(meter, stream.lines(), cancel)
                return
            except RemoteError as err:
                if (
                    meter.shown
                    or attempt >= self.provider.max_retries
                    or not (err.retryable or (err.code == "cut" and err.retry is None))
                    or guard.remaining() <= 0
                ):
                    if meter.shown:
                        err.add("The reply shown so far is kept.")
                    raise
                attempt += 1
                yield NoticeEvent(
                    code="remote_retry",
                    message=(f"{err.message} Trying again ({attempt} of {self.provider.max_retries})."),
                )
            finally:
                stream.close()

    def _open(
        self,
        tool_choice: Any,
        cancel: threading.Event | None,
        on_retry: Any,
        guard: ReplyGuard,
        prefix: str | None = None,
    ) -> tuple[Any, Any]:
        from app.engine.remote import _wire

        if self.parser == "api":
            tools = None if tool_choice == "none" else self.tools
            # Continue: the cut text is the final assistant message, which the endpoint goes on from
            prefill = [Message(role="assistant", content=prefix)] if prefix else []
            path, body = _wire.chat_request(
                self.provider.kind,
                self.model,
                self._history() + prefill,
                tools=tools,
                tool_choice=tool_choice,
                max_tokens=self._turn_max_tokens,
                sampling=self._turn_sampling,
            )
            _wire.add_options(self.provider.kind, body, self._options)
            self._add_thinking(body)
            stream = open_stream(self.provider, path, body, cancel=cancel, on_retry=on_retry, guard=guard)
            return stream, self._read_api
        prompt, fmt, tools = self._render(tool_choice)
        if prefix:  # Continue: the cut text after the prompt (a reasoning block it opened closed)
            from app.engine.chat import answer_after

            prompt = answer_after(prompt, fmt) + prefix
            self.last_raw_prompt = prompt
        llama_server = bool(self.template is not None and self.template.extra.get("llama_server"))
        path, body = _wire.raw_request(
            self.provider.kind,
            self.model,
            prompt,
            max_tokens=self._turn_max_tokens,
            sampling=self._turn_sampling,
            llama_server=llama_server,
        )
        grammar = self._grammar(tool_choice, prompt, fmt, tools)
        if grammar is not None:
            _wire.add_grammar(body, grammar, llama_server=llama_server)
        self.last_grammar = grammar
        stream = open_stream(self.provider, path, body, cancel=cancel, on_retry=on_retry, guard=guard)
        self._raw_state = (prompt, fmt, tools, prefix)
        return stream, self._read_callisto

    def _add_thinking(self, body: dict[str, Any]) -> None:
        """The turn's thinking choice in the endpoint's shape (API parsing; Callisto parsing renders
        it into the prompt): OpenAI-compatible servers (llama-server, vLLM, Callisto) take
        ``reasoning_effort`` (a level) and ``chat_template_kwargs.enable_thinking`` (on / off);
        Ollama ``think`` (true / false, or a level); Anthropic ``thinking`` (``disabled``, or
        ``enabled`` with ``budget_tokens``: the budget, or ANTHROPIC_DEFAULT_BUDGET, the API's least)."""
        think = self._turn_thinking
        if think is None or think.is_default:
            return
        kind = self.provider.kind
        if kind == "anthropic":
            if think.off:
                body["thinking"] = {"type": "disabled"}
            elif think.mode == "on" or think.effort is not None or think.budget:
                body["thinking"] = {
                    "type": "enabled",
                    "budget_tokens": think.budget or ANTHROPIC_DEFAULT_BUDGET,
                }
        elif kind == "ollama":
            if think.off:
                body["think"] = False
            elif think.effort is not None:
                body["think"] = think.effort
            elif think.mode == "on":
                body["think"] = True
        else:
            if think.effort is not None and not think.off:
                body["reasoning_effort"] = think.effort
            if think.off or think.mode == "on" or think.effort is not None:
                kwargs = dict(body.get("chat_template_kwargs") or {})
                kwargs["enable_thinking"] = not think.off
                body["chat_template_kwargs"] = kwargs

    def _learn_prefill(self) -> None:
        """Ask once whether this OpenAI-compatible endpoint (with API tools, and no template from
        its /props yet) is one that reads a final assistant message as the reply's start: one
        whose ``/props`` answers is llama-server (or Callisto). Asked only when a reply is cut, so
        an endpoint is never sent the question otherwise; an endpoint that cannot be reached
        now is not asked again."""
        if self.provider.kind != "openai" or self.parser != "api" or self._reads_prefill is not None:
            return
        if self.template is not None and self.template.extra.get("llama_server"):
            return
        try:
            self._reads_prefill = fetch_props(self.provider, self.model) is not None
        except RemoteError:
            self._reads_prefill = False

    def _engine(self) -> str:
        """The engine in words, for notices."""
        if self.template is not None and self.template.extra.get("llama_server"):
            return f"llama-server at {self.provider.base}"
        if self.parser == "callisto" and self.provider.kind == "ollama":
            return f"Ollama at {self.provider.base}"
        return f"the {self.provider.kind} endpoint at {self.provider.base}"

    def _grammar(self, tool_choice: Any, prompt: str, fmt: Any, tools: Any) -> str | None:
        """Callisto parsing: the GBNF that holds ``tool_choice`` (required, a named tool) or the
        response format, sent with the raw completion; None when nothing is held, or (with a notice)
        when this engine or this family's grammar cannot hold it."""
        from app.engine.constraints import parse_tool_choice
        from app.engine.errors import ConstraintError

        mode = parse_tool_choice(tool_choice).mode
        rf = self._options.get("response_format")
        forced = mode in ("required", "function") and bool(self.tools)
        if not forced and rf is None:
            return None
        what = "tool_choice" if forced else "response_format"
        if self.provider.kind == "ollama":
            self._open_notices.append(
                NoticeEvent(
                    code="tool_choice_not_held",
                    setting="chat.tool_choice",
                    message=(
                        f"{what} is not enforced by {self._engine()}: its raw completion takes no grammar, "
                        "so the model is asked for it but may answer otherwise."
                    ),
                )
            )
            return None
        from app.engine.constraints.remote import remote_grammar

        t = self.template
        assert t is not None
        try:
            return remote_grammar(
                family=fmt.name if fmt is not None else None,
                tools=tools,
                tool_choice=tool_choice if forced else "none",
                parallel_tool_calls=bool(self._options.get("parallel_tool_calls", True)),
                response_format=None if forced else rf,
                special_tokens=[x for x in (t.bos_token, t.eos_token) if x],
                reasoning=bool(fmt is not None and fmt.reasoning and fmt.reasoning[0] in self._source),
                in_reasoning=bool(fmt is not None and fmt.opens_in_reasoning(prompt)),
            )
        except ConstraintError as exc:
            self._open_notices.append(
                NoticeEvent(
                    code="tool_choice_not_held",
                    setting="chat.tool_choice",
                    message=(
                        f"{what} is not enforced by {self._engine()}: its grammar cannot be built ({exc}). "
                        "The reply is not held; the model is asked for it but may answer otherwise."
                    ),
                )
            )
            return None

    def _choice_broken(self, tool_choice: Any, calls: list[ToolCall]) -> NoticeEvent | None:
        """A notice when a reply breaks a forced tool choice (no call, or another tool's)."""
        from app.engine.constraints import parse_tool_choice

        choice = parse_tool_choice(tool_choice)
        if choice.mode not in ("required", "function") or not self.tools:
            return None
        if choice.mode == "required" and calls:
            return None
        if choice.mode == "function" and calls and all(c.name == choice.name for c in calls):
            return None
        wanted = "a call" if choice.mode == "required" else f"a call to {choice.name}"
        got = ", ".join(c.name for c in calls) if calls else "no call"
        engine = self._engine()
        if engine.startswith("the "):  # a sentence starts with a capital; llama-server keeps its name
            engine = "The" + engine[3:]
        return NoticeEvent(
            code="tool_choice_broken",
            setting="chat.tool_choice",
            message=f"{engine} did not hold tool_choice: it was asked for {wanted}, and the reply has {got}.",
        )

    # -- what both readers share ------------------------------------------------------------

    def _end_piece(self, meter: _Meter, piece: tuple[Any, ...]) -> bool:
        """A usage, finish or error piece (the others are the reader's); True when the reply finished."""
        kind = piece[0]
        if kind == "usage":
            meter.usage(piece[1], piece[2])
        elif kind == "finish":
            meter.finish = str(piece[1])
            return True
        elif kind == "error":
            raise RemoteError(
                "server_error",
                f"{self.provider.base} reported an error in the middle of the reply: {piece[1]}",
            )
        return False

    def _too_many_calls(self) -> RemoteError:
        return RemoteError(
            "too_large",
            f"{self.provider.base} sent more than {self.provider.max_calls} tool calls in one reply; "
            "it was cut there and none was run.",
            retry=False,
        )

    def _cut(self) -> RemoteError:
        return RemoteError(
            "cut", f"The connection to {self.provider.base} was cut in the middle of the reply."
        )

    # -- API tools ------------------------------------------------------------------------

    def _read_api(self, meter: _Meter, lines: Iterator[str], cancel: threading.Event | None) -> Iterator[Any]:
        from app.engine.remote import _wire

        reader = {
            "openai": _wire.read_openai,
            "anthropic": _wire.read_anthropic,
            "ollama": _wire.read_ollama,
        }[self.provider.kind]
        pending: dict[Any, list[Any]] = {}  # key -> [id, name, args parts or dict]
        ended = False
        for piece in reader(lines):
            if cancel is not None and cancel.is_set():
                return
            kind = piece[0]
            if kind == "text" and piece[1]:
                meter.piece()
                yield TextDelta(piece[1])
            elif kind == "reasoning" and piece[1]:
                meter.piece()
                yield ReasoningDelta(piece[1])
            elif kind == "call":
                _, key, cid, name, args = piece
                meter.piece(token=bool(args))
                if key not in pending and len(pending) >= self.provider.max_calls:
                    raise self._too_many_calls()
                slot = pending.setdefault(key, [None, None, [], 0])
                slot[0] = slot[0] or cid
                slot[1] = slot[1] or name
                text = json.dumps(args, ensure_ascii=False) if isinstance(args, dict) else args
                size = len(text.encode("utf-8", "surrogatepass"))
                slot[3] = size if isinstance(args, dict) else slot[3] + size
                if slot[3] > self.provider.max_call_args_bytes:
                    raise RemoteError(
                        "too_large",
                        f"{self.provider.base} sent a tool call with arguments longer than "
                        f"{byte_size(self.provider.max_call_args_bytes)}; it was cut there and no call was run.",
                        retry=False,
                    )
                if isinstance(args, dict):
                    slot[2] = args
                elif isinstance(slot[2], list):
                    slot[2].append(args)
            else:
                ended = self._end_piece(meter, piece) or ended
        if cancel is not None and cancel.is_set():
            return
        if not ended:
            raise self._cut()
        declared = set(self.registry.names()) if self.registry is not None else set()
        for index, (cid, name, args, _bytes) in enumerate(pending.values()):
            text = json.dumps(args, ensure_ascii=False) if isinstance(args, dict) else "".join(args)
            arguments: dict[str, Any] | str = args if isinstance(args, dict) else text
            if isinstance(arguments, str):
                try:
                    parsed = json.loads(arguments) if arguments.strip() else {}
                    arguments = parsed if isinstance(parsed, dict) else arguments
                except ValueError:
                    pass
            name = str(name or "")
            if name not in declared:
                inc = IncompleteCall(raw=f"{name}({text})", name=name or None, reason="undeclared")
                yield ToolCallIncomplete(inc)
                continue
            call = ToolCall(id=self._ids.keep(cid), name=name, arguments=arguments, raw=text)
            yield ToolCallDone(index, call)

    # -- Callisto parsing -----------------------------------------------------------------

    def _render(self, tool_choice: Any) -> tuple[str, Any, list[dict[str, Any]] | None]:
        from app.engine.render import render_messages

        assert self.template is not None
        fmt = None
        tools = None if tool_choice == "none" else self.tools
        if self.effective_format is not None and tools:
            from app.engine.formats import FORMATS

            fmt = FORMATS[self.effective_format]
        else:
            tools = None
        t = self.template
        source, name = (
            (t.tool_use_template, "tool_use")
            if tools and t.tool_use_template
            else (t.chat_template, "chat_template")
        )
        markers = None
        if self.effective_format is not None:
            from app.engine.formats import FORMATS

            markers = FORMATS[self.effective_format].thinking_tags()
        rendered = render_messages(
            source,
            self._history(),
            tools=tools,
            bos_token=t.bos_token,
            eos_token=t.eos_token,
            template_name=name,
            tool_format=self.effective_format,
            thinking=self._turn_thinking,
            reasoning_markers=markers,
        )
        self.last_prompt = rendered
        text = rendered.text
        adds_bos = t.add_bos if t.add_bos is not None else "bos_token" in source
        if t.bos_token and adds_bos and text.startswith(t.bos_token):
            # The engine adds the BOS token itself when it tokenizes the prompt (llama-server, vLLM,
            # SGLang): the template's own BOS text would make it two.
            text = text[len(t.bos_token) :]
        self.last_raw_prompt = text
        self._source = source
        return text, fmt, tools

    def _read_callisto(
        self, meter: _Meter, lines: Iterator[str], cancel: threading.Event | None
    ) -> Iterator[Any]:
        from app.engine.formats import PlainStream
        from app.engine.remote import _wire

        prompt, fmt, tools, prefix = self._raw_state
        if fmt is not None:
            # a reply that goes on from a cut one began as that answer (as the local engine's Continue)
            stream = fmt.stream(
                tools or [],
                in_reasoning=not prefix and fmt.opens_in_reasoning(prompt),
                orphan_close=not prefix and fmt.expects_orphan_close(self._source, prompt),
                after_reasoning=not prefix and fmt.closes_in_prompt(prompt),
            )
            stream.call_ids = self._ids.issue
        else:
            stream = PlainStream(False) if prefix else PlainStream.for_prompt(prompt)
        if prefix:
            list(stream.feed(prefix))  # the parser reads on from the cut (that text was shown before)
        ended = False
        calls = 0

        def counted(events: Iterator[Any]) -> Iterator[Any]:
            nonlocal calls
            for ev in events:
                if isinstance(ev, ToolCallDone | ToolCallIncomplete):
                    calls += 1
                    if calls > self.provider.max_calls:
                        raise self._too_many_calls()
                yield ev

        for piece in _wire.read_raw(lines, kind=self.provider.kind):
            if cancel is not None and cancel.is_set():
                return
            kind = piece[0]
            if kind == "text":
                meter.piece()
                yield from counted(stream.feed(piece[1]))
            else:
                ended = self._end_piece(meter, piece) or ended
        if cancel is not None and cancel.is_set():
            return
        if not ended:
            yield from counted(stream.finish(truncated=True))
            raise self._cut()
        yield from counted(stream.finish(truncated=meter.finish != "stop"))
