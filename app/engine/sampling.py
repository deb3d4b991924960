"""Sampling settings: the model's recommended values when its GGUF carries them, else
llama-cpp-python's chat defaults, and the user's overrides on top."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

__all__ = [
    "BAN",
    "CHAT_DEFAULTS",
    "GGUF_SAMPLING_KEYS",
    "LogitBias",
    "SamplingParams",
    "bias_of",
    "resolve_sampling",
]

#: a bias at or below this bans its token (OpenAI's -100; llama-server's ``false``)
BAN = -100.0


def bias_of(gen: Any) -> LogitBias | None:
    """The logits processor of a generation's ``logit_bias``, None without one."""
    return LogitBias(gen.options.logit_bias) if gen.options.logit_bias else None


class LogitBias:
    """A logits processor (the first of a sampler chain, over the whole vocabulary in id order)
    that adds each token's bias to its logit, as OpenAI's and llama-server's ``logit_bias``; a
    bias of :data:`BAN` or less takes the token out. The log probabilities reported are read
    before it (``app.engine.logprobs``)."""

    def __init__(self, bias: Mapping[int, float]):
        import numpy as np

        self.ids = np.array(list(bias), dtype=np.intc)
        values = np.array([float(v) for v in bias.values()], dtype=np.float32)
        self.values = np.where(values <= BAN, -np.inf, values).astype(np.float32)

    def __call__(self, _input_ids: Any, scores: Any) -> Any:
        scores[self.ids] += self.values
        return scores


@dataclass(frozen=True)
class SamplingParams:
    """Sampler settings passed to llama.cpp. ``seed=None`` keeps the model's seed."""

    temperature: float = 0.2
    top_p: float = 0.95
    top_k: int = 40
    min_p: float = 0.05
    typical_p: float = 1.0
    repeat_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    mirostat_mode: int = 0
    mirostat_tau: float = 5.0
    mirostat_eta: float = 0.1
    seed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def llama_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``llama_cpp.Llama.generate``: every field but ``seed`` (the
        model's), ``temperature`` named ``temp``."""
        return {("temp" if k == "temperature" else k): v for k, v in asdict(self).items() if k != "seed"}


#: ``Llama.create_chat_completion``'s defaults in llama-cpp-python 0.3.36.
CHAT_DEFAULTS = SamplingParams()

#: ``general.sampling.<key>`` (llama.cpp's GGUF keys) -> SamplingParams field.
GGUF_SAMPLING_KEYS: dict[str, str] = {
    "temp": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "min_p": "min_p",
    "penalty_repeat": "repeat_penalty",
    "mirostat": "mirostat_mode",
    "mirostat_tau": "mirostat_tau",
    "mirostat_eta": "mirostat_eta",
}

_FIELDS = {f.name: f for f in fields(SamplingParams)}


def _coerce(name: str, value: Any) -> Any:
    if value is None:
        if name == "seed":
            return None
        raise ValueError(f"sampling.{name} cannot be empty")
    kind = _FIELDS[name].type
    if isinstance(value, bool):
        raise ValueError(f"sampling.{name} must be a number, got {value!r}")
    try:
        if "int" in str(kind) and "float" not in str(kind):
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(value)
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"sampling.{name} must be a number, got {value!r}") from None


def resolve_sampling(
    gguf_sampling: Mapping[str, Any] | None = None,
    overrides: SamplingParams | Mapping[str, Any] | None = None,
) -> SamplingParams:
    """Chat defaults, then the GGUF's ``general.sampling.*`` values, then ``overrides``.

    ``gguf_sampling`` uses the GGUF key suffixes (``temp``, ``top_k``...).
    ``overrides`` is a full SamplingParams (used as is) or a mapping of field names;
    a ``None`` value in the mapping means "not overridden".
    """
    if isinstance(overrides, SamplingParams):
        return overrides
    params = CHAT_DEFAULTS
    for key, value in (gguf_sampling or {}).items():
        name = GGUF_SAMPLING_KEYS.get(key)
        if name is not None:
            try:
                params = replace(params, **{name: _coerce(name, value)})
            except ValueError:
                continue  # a bad recommended value in a model file is ignored, not fatal
    for name, value in (overrides or {}).items():
        if name not in _FIELDS:
            raise ValueError(f"unknown sampling setting {name!r} (known: {', '.join(_FIELDS)})")
        if value is None and name != "seed":
            continue
        params = replace(params, **{name: _coerce(name, value)})
    return params
