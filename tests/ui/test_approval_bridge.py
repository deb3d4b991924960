"""The window's approval bridge speaks the one vocabulary: an answer that is not a decision denies."""

from __future__ import annotations

import threading

from app.tools.types import ApprovalRequest
from app.ui.approval_bridge import ApprovalBridge


def _ask_answering(answer: str) -> str:
    bridge: ApprovalBridge

    def show(request: ApprovalRequest) -> None:
        threading.Thread(target=bridge.answer, args=(request.call_id, answer)).start()

    bridge = ApprovalBridge(show, default_timeout_s=30.0)
    return bridge.ask(ApprovalRequest("c1", "write_file", "Write a file", {"path": "a.txt"}))


def test_decisions_pass_and_anything_else_denies():
    assert [_ask_answering(a) for a in ("allow_once", "always", "deny")] == ["allow_once", "always", "deny"]
    assert _ask_answering("allow") == "deny"  # a policy word, not a decision


def test_refused_and_released_requests_deny():
    shown = threading.Event()
    bridge = ApprovalBridge(lambda _request: shown.set(), default_timeout_s=30.0)
    assert bridge.ask(ApprovalRequest("c0", "t", "", {}), refuse=True) == "deny"
    got: list[str] = []
    t = threading.Thread(target=lambda: got.append(bridge.ask(ApprovalRequest("c1", "t", "", {}))))
    t.start()
    assert shown.wait(30)
    bridge.release()
    t.join(30)
    assert got == ["deny"]
