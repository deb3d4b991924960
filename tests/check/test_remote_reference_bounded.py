"""Issue 29 (N5 class): the check's reference request (a streamed scenario asked once more without
streaming) reads its answer bounded, like every other read of the remote client: a real loopback
server that answers it with an oversized body gives an error in the transcript, never the whole
body in memory."""

from __future__ import annotations

from app.check.corpus import load_corpus
from app.check.reference import ReferenceServer, expected_reply
from app.check.remote_target import RemoteTarget
from app.check.runner import load_result, read_transcript, run_check, write_result
from app.engine.remote import Provider
from app.engine.remote._client import MAX_REPLY_BYTES

CORPUS = load_corpus()
STREAMED = "stream-single-string"


def test_n5_the_reference_answer_is_read_bounded(tmp_path):
    def reply_for(scenario, turn, body):
        reply = expected_reply(scenario, turn)
        if body.get("stream"):
            return reply
        return {**reply, "content": "x" * (MAX_REPLY_BYTES + 1024)}  # one answer, too big

    with ReferenceServer(CORPUS, reply_for=reply_for) as srv:
        target = RemoteTarget(Provider(srv.url, retry_backoff_s=0.01), "big")
        result = run_check(target, [CORPUS.by_id(STREAMED)])
        target.close()
        assert any(r["body"].get("stream") is False for r in srv.requests)  # the reference was asked
    assert result["results"][0]["outcome"] == "pass"  # the streamed reply itself was fine
    write_result(result, tmp_path / "r.json")
    loaded = load_result(tmp_path / "r.json")
    transcript, intact = read_transcript(loaded, loaded["results"][0])
    assert intact and transcript is not None
    (entry,) = transcript["reference"]
    assert entry["response"] == {"status": 200}  # the body was not kept: it was not read whole
    assert "error" in entry and "MiB" in entry["error"], entry.get("error")
