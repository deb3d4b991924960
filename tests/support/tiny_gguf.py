"""Tiny real GGUF models for tests: the writer lives in ``app.engine.models.tiny`` (the bundle's
self-test needs it too); this module keeps the tests' import path and API unchanged."""

from __future__ import annotations

from app.engine.models.tiny import (
    BYTE_TOKENS,
    TOKEN_CONTROL,
    TOKEN_NORMAL,
    TOKEN_USER_DEFINED,
    TinySpec,
    byte_to_unicode,
    token_id,
    write_tiny_gguf,
)

__all__ = ["BYTE_TOKENS", "TinySpec", "byte_to_unicode", "write_tiny_gguf", "token_id"]

# Also importable from here, as before the move (not in __all__, as before).
_ = (TOKEN_CONTROL, TOKEN_NORMAL, TOKEN_USER_DEFINED)
