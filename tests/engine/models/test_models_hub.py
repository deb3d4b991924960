"""Search and file listing through huggingface-hub's real HfApi against a local HTTP hub."""

from __future__ import annotations

import socket

import pytest

from app.engine.models.errors import HubNotFoundError, HubOfflineError, HubUnavailableError
from app.engine.models.estimate import FITS, TIGHT, TOO_LARGE
from app.engine.models.hub import HubClient, RemotePart, group_gguf_files


def test_search_lists_gguf_repos_by_downloads(hub):
    results = HubClient(hub.url).search("tiny")
    assert [r.repo_id for r in results] == ["acme/Other-Tiny-GGUF", "acme/Tiny-Chat-GGUF"]
    assert results[0].downloads == 9000
    # the filter and sort really went to the server
    method, path, _ = hub.requests[-1]
    assert (method, path) == ("GET", "/api/models")


def test_search_without_query_excludes_non_gguf(hub):
    ids = [r.repo_id for r in HubClient(hub.url).search("")]
    assert "acme/not-gguf" not in ids and len(ids) == 2


def test_file_listing_groups_split_files_with_sizes_quant_and_fit(hub):
    ggufs = HubClient(hub.url).list_ggufs("acme/Tiny-Chat-GGUF", n_ctx=2048)
    by_name = {g.name: g for g in ggufs}
    assert set(by_name) == {"Tiny-Chat-Q4_K_M", "Tiny-Chat-Q8_0", "Tiny-Chat-F16"}
    split = by_name["Tiny-Chat-F16"]
    files = hub.repos["acme/Tiny-Chat-GGUF"].files
    assert split.is_split and split.complete
    assert [p.filename for p in split.parts] == [
        "split/Tiny-Chat-F16-00001-of-00002.gguf",
        "split/Tiny-Chat-F16-00002-of-00002.gguf",
    ]
    assert split.size == len(files["split/Tiny-Chat-F16-00001-of-00002.gguf"]) + len(
        files["split/Tiny-Chat-F16-00002-of-00002.gguf"]
    )
    assert split.quantization == "F16"
    q4 = by_name["Tiny-Chat-Q4_K_M"]
    assert q4.quantization == "Q4_K_M"
    assert q4.parts[0].sha256 == hub.sha256("acme/Tiny-Chat-GGUF", "Tiny-Chat-Q4_K_M.gguf")
    assert q4.estimate is not None and q4.estimate.n_ctx == 2048
    assert q4.estimate.fit == FITS  # a few hundred KB fits on any machine


def test_fit_badges_against_given_ram():
    gib = 1024**3
    parts = [
        RemotePart("a-Q4_K_M.gguf", 1 * gib, None),
        RemotePart("b-Q4_K_M.gguf", 6 * gib, None),
        RemotePart("c-Q4_K_M.gguf", 20 * gib, None),
    ]
    fits = {
        g.name: g.estimate.fit
        for g in group_gguf_files("r/x", "main", parts, n_ctx=4096, ram=(10 * gib, 8 * gib))
    }
    assert fits == {"a-Q4_K_M": FITS, "b-Q4_K_M": TIGHT, "c-Q4_K_M": TOO_LARGE}


def test_offline_mode_gives_a_clear_error_without_network(hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = len(hub.requests)
    with pytest.raises(HubOfflineError, match="offline mode"):
        HubClient(hub.url).search("tiny")
    assert len(hub.requests) == before


def test_unreachable_hub_is_a_clear_error():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(HubUnavailableError, match="Cannot reach"):
        HubClient(f"http://127.0.0.1:{port}").search("x")


def test_hub_errors_that_are_not_oserror_are_caught(hub):
    hub.api_garbage = True  # JSONDecodeError: a ValueError, not an OSError
    with pytest.raises(HubUnavailableError, match="not understood"):
        HubClient(hub.url).search("tiny")


def test_missing_repo_is_a_clear_error(hub):
    with pytest.raises(HubNotFoundError, match="does not exist"):
        HubClient(hub.url).list_ggufs("acme/nope")
    hub.api_fail = (
        400  # the hub failing is not "not found" (a 5xx too: the hub client retries those for 20 s)
    )
    with pytest.raises(HubUnavailableError, match="answered 400") as err:
        HubClient(hub.url).list_ggufs("acme/nope")
    assert not isinstance(err.value, HubNotFoundError)


def test_server_error_from_the_api_is_caught(hub):
    hub.api_fail = 404
    with pytest.raises(HubUnavailableError, match="404"):
        HubClient(hub.url).search("tiny")
