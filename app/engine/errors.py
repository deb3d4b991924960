"""Every error the engine raises on purpose, under one root: :class:`EngineError`.

This module imports nothing of the app: every layer of the engine (and the server, the check,
the CLI and the window, which map these errors to their own terms in one table each) imports it.

Each class also keeps the built-in base it always had (``RuntimeError``, ``ValueError``), so code
that catches those still catches these. The tables that turn them into an answer:

* HTTP: ``app.server._errors.engine_api_error`` (status and error code);
* CLI: ``app.cli.exit_code_for`` (exit status);
* window: ``app.ui`` maps them to the words and the setting it shows.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

__all__ = [
    "ConstraintError",
    "ContextOverflowError",
    "EngineBusy",
    "EmbeddingInputError",
    "EmbeddingModelError",
    "EmbeddingOnlyError",
    "EngineCrashedError",
    "EngineError",
    "GbnfError",
    "GenerationError",
    "GrammarError",
    "ImageError",
    "JobCancelled",
    "ModelLoadError",
    "NoProjectorError",
    "PromptRenderError",
    "TemplateRenderError",
    "TokenIdError",
    "ToolSetupError",
]


class EngineError(Exception):
    """The root of the engine's errors: ``str()`` says what went wrong, in plain words."""


# -- loading -------------------------------------------------------------------------------------


class ModelLoadError(EngineError, RuntimeError):
    """The model could not be loaded. ``str()`` names the file and the problem."""

    def __init__(self, path: str | os.PathLike[str], problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"Cannot load {self.path}: {problem}")

    def __reduce__(self):  # the engine process sends it to the app
        return (ModelLoadError, (self.path, self.problem))


# -- templates and prompts ----------------------------------------------------------------------


class TemplateRenderError(EngineError):
    """The chat template could not be rendered; the message says why."""


class PromptRenderError(EngineError, RuntimeError):
    """The model's chat template failed on this conversation (the message says how)."""


# -- constraints ---------------------------------------------------------------------------------


class ConstraintError(EngineError, ValueError):
    """A constraint cannot be built; the message names the problem (tool, schema part, family)."""


class GbnfError(ConstraintError):
    """A Lark construct with no GBNF translation here; the message names it."""


# -- generation ----------------------------------------------------------------------------------


class GenerationError(EngineError, RuntimeError):
    """Generation could not run (the message says why)."""


class GrammarError(GenerationError, ValueError):
    """The GBNF grammar was rejected before llama.cpp saw it."""


class EmbeddingOnlyError(GenerationError, ValueError):
    """The model cannot write text: an embedding model (BERT and its kin) gives vectors only.
    ``str()`` names it and says where its vectors are asked for."""


class ContextOverflowError(GenerationError):
    """The prompt does not fit in the model's context."""


class TokenIdError(GenerationError, ValueError):
    """A token id outside the model's vocabulary, in a prompt of token ids, a ``logit_bias`` or the
    tokens to detokenize; ``param`` names where (``prompt``, ``logit_bias`` or ``tokens``: an API's
    field of the same name)."""

    def __init__(self, message: str, param: str = "prompt"):
        super().__init__(message)
        self.param = param

    def __reduce__(self) -> tuple[Any, ...]:  # crosses from the engine process with its param
        return (type(self), (str(self), self.param))

    @classmethod
    def check(cls, ids: Iterable[int], n_vocab: int, where: str, *, images: bool = False) -> None:
        """Raise one naming ``where`` for the first of ``ids`` outside a vocabulary of ``n_vocab``
        tokens (``images``: a negative id passes, an image's position in a model that reads them)."""
        bad = next((t for t in ids if int(t) >= n_vocab or (int(t) < 0 and not images)), None)
        if bad is not None:
            raise cls(
                f"{where} holds token id {bad}, outside the model's vocabulary (0 to {n_vocab - 1})", where
            )


class ImageError(EngineError, ValueError):
    """An image that cannot be used (too large, truncated, damaged, not an image, or no projector to
    read it): ``str()`` says which, in one sentence (``app.engine.vision``)."""


class EmbeddingInputError(EngineError, ValueError):
    """One input of an embeddings request that cannot be embedded (empty, too long for the
    context, a token id outside the vocabulary): ``index`` is its place in the request, ``problem``
    what is wrong with it, in words that follow "input[N]"."""

    def __init__(self, index: int, problem: str):
        self.index = index
        self.problem = problem
        super().__init__(f"input[{index}] {problem}")

    def __reduce__(self):  # the engine process sends it to the app
        return (EmbeddingInputError, (self.index, self.problem))


class EmbeddingModelError(EngineError, ValueError):
    """The model cannot give embeddings (a reranking model scores pairs of texts instead):
    ``str()`` names it and says why."""


class NoProjectorError(ImageError):
    """The model was given an image but has no vision projector (``mmproj``) loaded: ``str()``
    names the model and the projector file it needs (beside it, or chosen in the library)."""


class EngineCrashedError(GenerationError):
    """The engine process of a model died. ``str()`` says what happened, in plain words;
    ``stage`` is ``loading`` or ``generating`` (any call after load counts as generating),
    ``exit`` describes how it ended (a signal or an exit code), ``model`` names the model."""

    def __init__(self, message: str, *, stage: str = "generating", exit: str = "", model: str = ""):
        super().__init__(message)
        self.stage = stage
        self.exit = exit
        self.model = model

    def __reduce__(self):  # pragma: no cover - raised in the parent only
        return (_crashed, (str(self), self.stage, self.exit, self.model))


def _crashed(message: str, stage: str, exit: str, model: str) -> EngineCrashedError:
    return EngineCrashedError(message, stage=stage, exit=exit, model=model)


# -- sessions and the shared engine ----------------------------------------------------------------


class ToolSetupError(EngineError, ValueError):
    """A tool choice that cannot be honoured (with ``strict=True``): one clear sentence."""


class JobCancelled(EngineError, RuntimeError):
    """A job that never ran: cancelled while it waited, or dropped when the engine stopped."""


class EngineBusy(EngineError, RuntimeError):
    """The queue is full: ``retry_after_s`` estimates when a place frees up."""

    def __init__(self, waiting: int, retry_after_s: int):
        self.waiting = waiting
        self.retry_after_s = retry_after_s
        super().__init__(
            f"the engine is busy: {waiting} requests are already waiting; retry in about {retry_after_s} s"
        )

    def __reduce__(self):
        return (EngineBusy, (self.waiting, self.retry_after_s))
