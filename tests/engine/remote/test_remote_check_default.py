"""``python -m app check --endpoint URL`` without ``--parser`` runs through Callisto's remote client
(API tools), the client ``chat --endpoint`` uses: against Callisto's own server on a free loopback
port, and against loopback servers that misbehave (the client's plain sentences reach the result);
the old flags (``--api-key``, ``--model-file``, ``--stack``, ``--timeout``) keep working."""

from __future__ import annotations

import json

import pytest

from app.cli import main
from tests.engine.remote.misbehaving import MisbehavingServer, openai_chunk
from tests.engine.remote.test_remote_check_parsers import NEGATIVE, SINGLE


@pytest.fixture
def scenarios(tmp_path):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "single.toml").write_text(SINGLE)
    (folder / "negative.toml").write_text(NEGATIVE)
    return folder


def _check(url, scenarios, out, *extra):
    return main(
        [
            "check",
            "--endpoint",
            url,
            "--model",
            "loop-hermes",
            "--scenarios",
            str(scenarios),
            "--out",
            str(out),
            *extra,
        ]
    )


def test_callisto_server_through_the_remote_client(
    callisto_server, remote_models, scenarios, tmp_path, capsys
):
    out = tmp_path / "r.json"
    rc = _check(
        callisto_server.url + "/v1",
        scenarios,
        out,
        "--stack",
        "callisto-serve",
        "--model-file",
        str(remote_models["loop"]),
        "--timeout",
        "30",
    )
    data = json.loads(out.read_text(encoding="utf-8"))
    rows = {r["id"]: r for r in data["results"]}
    # the scripted model calls get_weather(Oslo) whatever it is asked: one pass, one fail
    assert rc == 1 and rows["weather-in-a-named-city"]["outcome"] == "pass"
    assert rows["a-greeting-needs-no-tool"]["outcome"] == "fail"
    assert data["target"]["kind"] == "remote" and data["stack"]["parser"] == "api"
    assert data["stack"]["name"] == "callisto-serve · engine's parsing (API tools)"
    assert data["stack"]["endpoint"] == callisto_server.url
    assert data["model"]["sha256"]  # --model-file: the identity of the GGUF it serves
    assert "PASS" in capsys.readouterr().out


def test_a_refused_key_is_the_clients_sentence_and_never_written(scenarios, tmp_path, capsys):
    with MisbehavingServer(lambda req: req.status(401, {"error": {"message": "bad key"}})) as srv:
        rc = _check(srv.url, scenarios, tmp_path / "r.json", "--api-key", "sk-very-secret", "--json")
        seen = [r.headers.get("Authorization") for r in srv.requests]
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert rc == 4 and all(x["outcome"] == "error" for x in lines if x["type"] == "scenario")
    message = next(x["message"] for x in lines if x["type"] == "scenario")
    assert f"{srv.url} refused the API key (HTTP 401)" in message and "bad key" in message
    assert seen and set(seen) == {"Bearer sk-very-secret"}
    written = "".join(p.read_text(encoding="utf-8") for p in tmp_path.rglob("*") if p.is_file())
    assert "sk-very-secret" not in written


def test_a_stream_cut_mid_reply_is_an_error_row_and_the_check_goes_on(scenarios, tmp_path, capsys):
    def handle(req):
        req.start_stream()
        req.send(openai_chunk("Let me"))  # ... and the connection closes, no finish

    with MisbehavingServer(handle) as srv:
        rc = _check(srv.url, scenarios, tmp_path / "r.json", "--json")
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    rows = [x for x in lines if x["type"] == "scenario"]
    assert rc == 4 and len(rows) == 2 and {x["outcome"] for x in rows} == {"error"}
    assert all("was cut in the middle of the reply" in x["message"] for x in rows)


def test_a_server_error_is_retried_then_reported(scenarios, tmp_path, capsys):
    with MisbehavingServer(lambda req: req.status(503, {"error": {"message": "overloaded"}})) as srv:
        rc = _check(
            srv.url, scenarios, tmp_path / "r.json", "--json", "--scenario", "weather-in-a-named-city"
        )
        tries = len(srv.requests)
    (row,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if '"scenario"' in x][:1]
    assert rc == 4 and row["outcome"] == "error" and tries == 3  # one request, two bounded retries
    assert "failed with a server error (HTTP 503)" in row["message"] and "overloaded" in row["message"]
