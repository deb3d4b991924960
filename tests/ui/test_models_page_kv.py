"""Issue 31: the Models page's memory estimates count the KV cache type of Settings -> Model
(``model.kv_type``), as the model will load with it; the hub's file listing takes it too."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

from app.engine.models.estimate import estimate_remote  # noqa: E402
from app.engine.models.hub import HubClient  # noqa: E402
from app.engine.models.library import Library  # noqa: E402
from app.engine.models.manager import ModelManager  # noqa: E402
from app.engine.models.recommended import recommended_models  # noqa: E402
from app.engine.models.tiny import write_tiny_gguf  # noqa: E402
from app.storage.settings import load_settings, save_settings  # noqa: E402
from app.ui.models_page import ModelsPage  # noqa: E402
from app.ui.models_page.search import kv_type_setting  # noqa: E402
from tests.support.fake_hub import FakeHub  # noqa: E402

REPO = "acme/Tiny-Chat-GGUF"


def _set_kv_type(kv_type: str) -> None:
    settings, _ = load_settings()
    settings.model.kv_type = kv_type  # type: ignore[assignment]
    save_settings(settings)


@pytest.fixture
def hub(tmp_path):
    h = FakeHub()
    h.add_repo(REPO, {"Tiny-Chat-Q8_0.gguf": write_tiny_gguf(tmp_path / "src.gguf", seed=1).read_bytes()})
    h.start()
    yield h
    h.stop()


def test_hub_listing_estimates_with_the_kv_type(hub):
    client = HubClient(hub.url)
    f16 = client.list_ggufs(REPO, n_ctx=8192)[0].estimate
    q4 = client.list_ggufs(REPO, n_ctx=8192, kv_type="q4_0")[0].estimate
    assert f16 is not None and q4 is not None
    assert q4.kv_bytes < f16.kv_bytes and q4.weights_bytes == f16.weights_bytes


@pytest.mark.parametrize("kv_type", ["q8_0", "q4_0"])
def test_recommended_estimates_follow_the_kv_type_setting(qtbot, hub, tmp_path, kv_type):
    _set_kv_type(kv_type)
    assert kv_type_setting() == kv_type
    lib = Library(models_dir=tmp_path / "models", manifest_path=tmp_path / "lib.json", hf_cache_dir=False)
    page = ModelsPage(ModelManager(hub=HubClient(hub.url), library=lib, backoff_base=0.01))
    qtbot.addWidget(page)
    try:
        n_ctx = page.ctx_spin.value()
        for row, r in enumerate(recommended_models()):
            shown = page.recommended.table.item(row, 3).toolTip()
            assert shown == estimate_remote(r.size_bytes, r.quantization, n_ctx, kv_type=kv_type).describe()
            assert shown != estimate_remote(r.size_bytes, r.quantization, n_ctx).describe()
    finally:
        page.shutdown()
