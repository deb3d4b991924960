"""The engine's errors: one root, the built-in bases callers catch, and one table each for HTTP and
the command line."""

from __future__ import annotations

import pickle

import pytest

from app.engine import errors
from app.engine.errors import (
    ConstraintError,
    ContextOverflowError,
    EmbeddingInputError,
    EmbeddingModelError,
    EngineBusy,
    EngineCrashedError,
    EngineError,
    GbnfError,
    GenerationError,
    GrammarError,
    JobCancelled,
    ModelLoadError,
    PromptRenderError,
    TemplateRenderError,
    ToolSetupError,
)
from app.engine.models.errors import DownloadError, ModelsError


def test_every_engine_error_has_the_one_root_and_keeps_its_builtin_base():
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), EngineError), name
    assert issubclass(ModelsError, EngineError) and issubclass(DownloadError, EngineError)
    for kind, base in (
        (ModelLoadError, RuntimeError),
        (GenerationError, RuntimeError),
        (GrammarError, ValueError),
        (GrammarError, GenerationError),
        (ContextOverflowError, GenerationError),
        (EngineCrashedError, GenerationError),
        (ConstraintError, ValueError),
        (GbnfError, ConstraintError),
        (PromptRenderError, RuntimeError),
        (ToolSetupError, ValueError),
        (JobCancelled, RuntimeError),
        (EngineBusy, RuntimeError),
        (EmbeddingInputError, ValueError),
        (EmbeddingModelError, ValueError),
    ):
        assert issubclass(kind, base), (kind, base)
    assert not issubclass(TemplateRenderError, RuntimeError)


def test_the_errors_an_engine_process_sends_survive_pickling():
    load = pickle.loads(pickle.dumps(ModelLoadError("/m.gguf", "it is truncated")))
    assert (load.path, load.problem, str(load)) == (
        "/m.gguf",
        "it is truncated",
        "Cannot load /m.gguf: it is truncated",
    )
    crash = pickle.loads(pickle.dumps(EngineCrashedError("gone", stage="loading", exit="SIGKILL", model="m")))
    assert (str(crash), crash.stage, crash.exit, crash.model) == ("gone", "loading", "SIGKILL", "m")
    busy = pickle.loads(pickle.dumps(EngineBusy(3, 7)))
    assert (busy.waiting, busy.retry_after_s) == (3, 7) and "3 requests" in str(busy)
    bad = pickle.loads(pickle.dumps(EmbeddingInputError(2, "is empty")))
    assert (bad.index, bad.problem, str(bad)) == (2, "is empty", "input[2] is empty")


@pytest.mark.parametrize(
    ("exc", "status", "code"),
    [
        (ModelLoadError("/m.gguf", "bad"), 500, "model_load_failed"),
        (JobCancelled("dropped"), 503, None),
        (EngineCrashedError("it died"), 500, "engine_crashed"),
        (GrammarError("bad grammar"), 500, None),
        (ContextOverflowError("too long"), 500, None),
        (EmbeddingInputError(0, "is empty"), 400, "invalid_input"),
        (EmbeddingModelError("m is a reranking model"), 400, "model_cannot_embed"),
    ],
)
def test_the_server_maps_engine_errors_in_one_table(exc, status, code):
    from app.server._errors import engine_api_error

    err = engine_api_error(exc)
    assert (err.status, err.code, err.message) == (status, code, str(exc))


def test_the_server_passes_its_own_errors_through_and_words_the_rest():
    from app.server._errors import ApiError, engine_api_error

    own = ApiError(400, "bad request")
    assert engine_api_error(own) is own
    other = engine_api_error(KeyError("x"))
    assert (other.status, other.message) == (500, "the engine failed: 'x'")


def test_the_cli_maps_engine_errors_to_exit_statuses_in_one_table():
    from app.cli import EXIT_ENGINE_CRASHED, exit_code_for

    assert exit_code_for(EngineCrashedError("it died")) == EXIT_ENGINE_CRASHED == 3
    assert exit_code_for(ModelLoadError("/m.gguf", "bad")) == 1
    assert exit_code_for(ToolSetupError("no workspace")) == 2
    assert exit_code_for(ConstraintError("no such tool")) == 2
    assert exit_code_for(GenerationError("failed")) == 1
    assert exit_code_for(ValueError("bad flag"), default=2) == 2
