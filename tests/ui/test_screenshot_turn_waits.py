"""``--screenshot --state turn-waits``: the server's requests hold every slot of the chat's model,
a chat turn waits for one, and the picture shows the reply and the toolbar saying what it waits
for, in both themes (a real process, the real server and engine)."""

from __future__ import annotations

import pytest

from tests.ui.test_screenshots import _mean_lightness, _png_size, _shoot


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_turn_waits_state_shows_the_wait_in_the_reply_and_the_toolbar(tmp_path, streaming_model, theme):
    said = _shoot(tmp_path, "turn-waits", "--model", str(streaming_model), "--theme", theme)
    waits = "Waiting for a free slot: 4 server requests are generating…"  # server.parallel: 4 slots
    assert f": turn-waits (model: stream.gguf; reply: {waits}; toolbar: {waits})" in said, said
    assert _png_size(tmp_path, "turn-waits") == (1200, 760)
    lightness = _mean_lightness(tmp_path, "turn-waits")  # the picture is in the requested theme
    assert lightness < 100 if theme == "dark" else lightness > 160, lightness
