"""Settings file: defaults, round-trip, migrations, corrupt files, unknown keys, atomic writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.storage.paths import settings_path
from app.storage.settings import (
    SCHEMA_VERSION,
    ModelOverride,
    SamplingOverride,
    Settings,
    SettingsSaveError,
    effective_settings,
    load_settings,
    migrate,
    model_key,
    save_settings,
)

REPO = Path(__file__).resolve().parents[2]


def _backups(p: Path) -> list[Path]:
    return sorted(p.parent.glob(p.name + ".corrupt-*"))


def test_missing_file_gives_defaults_without_notice():
    s, notice = load_settings()
    assert notice is None
    assert s.schema_version == SCHEMA_VERSION
    assert s.chat.tool_format == "auto"
    assert s.tools.approval_for("read_file") == "ask"
    assert not settings_path().exists()  # loading does not write


def test_round_trip_every_section():
    s = Settings()
    s.chat.tool_format = "Hermes"  # normalised to lower case
    s.chat.system_prompt = "Be brief. ünïcode ✓"
    s.sampling.temperature = 0.2
    s.sampling.seed = 42
    s.model.context_length = 8192
    s.model.gpu_layers = -1
    s.model.threads = 2
    s.model.last_model_path = "/models/a.gguf"
    s.model.extra_model_folders = ["/m1", "/m2"]
    s.tools.workspace = "/work/space"
    s.tools.approvals = {"write_file": "allow", "shell": "ask"}
    s.tools.mcp_servers_path = "/cfg/mcp.json"
    s.window.geometry = "AdnQywAD"
    s.window.panels = {"tools": True, "log": False}
    s.set_override(model_key("/models/a.gguf"), ModelOverride(tool_format="none"))
    path = save_settings(s)
    assert path == settings_path()
    assert json.loads(path.read_text("utf-8"))["schema_version"] == SCHEMA_VERSION

    loaded, notice = load_settings()
    assert notice is None
    assert loaded == s
    assert loaded.chat.tool_format == "hermes"
    assert loaded.tools.approval_for("write_file") == "allow"
    assert loaded.tools.approval_for("unknown_tool") == "ask"


def test_invalid_values_are_rejected_in_code():
    s = Settings()
    with pytest.raises(ValidationError):
        s.sampling.top_p = 0.0
    with pytest.raises(ValidationError):
        s.chat.tool_format = "no spaces allowed"
    with pytest.raises(ValidationError):
        s.tools.approvals = {"x": "sometimes"}
    assert s.sampling.top_p is None and s.chat.tool_format == "auto"


def test_per_model_override_and_effective_settings(tmp_path):
    s = Settings()
    s.chat.tool_format = "auto"
    s.sampling.temperature = 0.7
    s.sampling.max_tokens = 512
    model = tmp_path / "models" / "qwen.gguf"
    s.set_override(
        model_key(model),
        ModelOverride(tool_format="qwen", sampling=SamplingOverride(temperature=0.1, top_k=5)),
    )
    s.set_override("ab" * 32, ModelOverride(tool_format="none"))

    eff = effective_settings(s, model)
    assert eff.tool_format == "qwen"
    assert eff.sampling.temperature == 0.1 and eff.sampling.top_k == 5
    assert eff.sampling.max_tokens == 512  # not overridden: global value
    assert set(eff.overridden) == {"tool_format", "sampling.temperature", "sampling.top_k"}
    # a relative path to the same file finds the same override
    rel = os.path.relpath(model)
    assert effective_settings(s, rel).tool_format == "qwen"
    # sha256 wins over the path (the file was moved or renamed)
    assert effective_settings(s, model, sha256="AB" * 32).tool_format == "none"
    # another model: globals
    other = effective_settings(s, tmp_path / "other.gguf")
    assert other.tool_format == "auto" and other.overridden == ()
    assert other.sampling == s.sampling
    # survives a save/load
    save_settings(s)
    loaded, _ = load_settings()
    assert effective_settings(loaded, model).to_dict() == eff.to_dict()
    # removing the override
    loaded.set_override(model_key(model), None)
    assert effective_settings(loaded, model).tool_format == "auto"


def test_effective_sampling_feeds_the_engine(tmp_path):
    """Unset sampler values leave the model's recommendations in force; set ones win."""
    from app.engine.sampling import resolve_sampling

    s = Settings()
    gguf = {"temp": 0.6, "top_k": 20, "top_p": 0.8}
    plain = effective_settings(s, tmp_path / "m.gguf")
    assert plain.sampler_overrides() == {}
    assert plain.max_tokens == 1024
    params = resolve_sampling(gguf, plain.sampler_overrides())
    assert (params.temperature, params.top_k, params.top_p) == (0.6, 20, 0.8)

    s.sampling.temperature = 0.3
    s.sampling.seed = 11
    s.sampling.max_tokens = 64
    s.set_override(
        model_key(tmp_path / "m.gguf"), ModelOverride(sampling=SamplingOverride(top_k=3, max_tokens=16))
    )
    eff = effective_settings(s, tmp_path / "m.gguf")
    assert eff.sampler_overrides() == {"temperature": 0.3, "seed": 11, "top_k": 3}
    assert eff.max_tokens == 16
    params = resolve_sampling(gguf, eff.sampler_overrides())
    assert (params.temperature, params.top_k, params.top_p, params.seed) == (0.3, 3, 0.8, 11)


def test_bad_json_is_backed_up_and_defaults_used():
    p = settings_path()
    p.write_text('{"chat": {"tool_format": "hermes",', "utf-8")
    s, notice = load_settings()
    assert s == Settings()
    assert notice is not None and notice.code == "corrupt"
    backups = _backups(p)
    assert backups == [notice.backup_path]
    assert backups[0].read_text("utf-8") == '{"chat": {"tool_format": "hermes",'  # nothing lost
    assert backups[0].name in notice.message
    assert not p.exists()
    # the next load is clean
    assert load_settings() == (Settings(), None)


@pytest.mark.parametrize("content", [b"[1, 2, 3]", b"\xff\xfe\x00garbage", b'{"schema_version": "two"}', b""])
def test_non_object_or_undecodable_file_is_backed_up(content):
    p = settings_path()
    p.write_bytes(content)
    s, notice = load_settings()
    assert s == Settings()
    assert notice is not None and notice.code == "corrupt"
    assert notice.backup_path.read_bytes() == content


def test_wrong_types_reset_only_those_fields_and_back_up():
    p = settings_path()
    data = {
        "schema_version": SCHEMA_VERSION,
        "chat": {"tool_format": "mistral", "system_prompt": 12},  # prompt must be a string
        "sampling": {"temperature": "hot", "top_k": 7},
        "model": {"context_length": 2048, "extra_model_folders": "not-a-list"},
        "tools": {"approvals": {"shell": "allow", "rm": "whenever"}},
        "window": "not-an-object",
    }
    p.write_text(json.dumps(data), "utf-8")
    s, notice = load_settings()
    assert notice is not None and notice.code == "fields_reset"
    # the good values are kept
    assert s.chat.tool_format == "mistral"
    assert s.sampling.top_k == 7
    assert s.model.context_length == 2048
    assert s.tools.approvals == {"shell": "allow"}
    # the bad ones take their defaults
    assert s.chat.system_prompt == ""
    assert s.sampling.temperature is None
    assert s.model.extra_model_folders == []
    assert s.window.panels == {}
    assert set(notice.reset_fields) == {
        "chat.system_prompt",
        "sampling.temperature",
        "model.extra_model_folders",
        "tools.approvals.rm",
        "window",
    }
    assert json.loads(notice.backup_path.read_text("utf-8")) == data
    assert "sampling.temperature" in notice.message


def test_unknown_keys_are_tolerated_and_kept():
    p = settings_path()
    data = Settings().model_dump(mode="json")
    data["future_feature"] = {"enabled": True}
    data["chat"]["voice"] = "calm"
    p.write_text(json.dumps(data), "utf-8")
    s, notice = load_settings()
    assert notice is None
    s.sampling.temperature = 0.3
    save_settings(s)
    saved = json.loads(p.read_text("utf-8"))
    assert saved["future_feature"] == {"enabled": True}
    assert saved["chat"]["voice"] == "calm"
    assert saved["sampling"]["temperature"] == 0.3


def test_newer_schema_loads_with_notice():
    p = settings_path()
    p.write_text(
        json.dumps({"schema_version": SCHEMA_VERSION + 5, "chat": {"tool_format": "gemma"}}), "utf-8"
    )
    s, notice = load_settings()
    assert s.chat.tool_format == "gemma"
    assert notice is not None and notice.code == "newer_version"
    assert not _backups(p)


def test_version_1_flat_file_is_migrated():
    p = settings_path()
    v1 = {
        "tool_format": "llama3",
        "system_prompt": "old prompt",
        "temperature": 0.4,
        "seed": 7,
        "n_ctx": 1024,
        "n_gpu_layers": 10,
        "model_path": "/m/old.gguf",
        "model_dirs": ["/m"],
        "always_allow": ["read_file"],
        "workspace": "/ws",
        "mystery": 1,
    }
    p.write_text(json.dumps(v1), "utf-8")  # no schema_version: version 1
    s, notice = load_settings()
    assert notice is not None and notice.code == "migrated"
    assert s.schema_version == SCHEMA_VERSION
    assert s.chat.tool_format == "llama3" and s.chat.system_prompt == "old prompt"
    assert s.sampling.temperature == 0.4 and s.sampling.seed == 7
    assert s.model.context_length == 1024 and s.model.gpu_layers == 10
    assert s.model.last_model_path == "/m/old.gguf" and s.model.extra_model_folders == ["/m"]
    assert s.tools.approvals == {"read_file": "allow"} and s.tools.workspace == "/ws"
    save_settings(s)
    again, notice2 = load_settings()
    assert notice2 is None and again == s
    assert json.loads(p.read_text("utf-8"))["mystery"] == 1


def test_migrate_rejects_bad_version():
    with pytest.raises(ValueError, match="schema_version"):
        migrate({"schema_version": 0})
    assert migrate({"schema_version": SCHEMA_VERSION, "x": 1}) == {"schema_version": SCHEMA_VERSION, "x": 1}


def test_failed_write_keeps_the_previous_file(tmp_path):
    """A real failing write (file-size limit reached, like a full disk) leaves the old file intact."""
    s = Settings()
    s.chat.system_prompt = "the good old prompt"
    p = save_settings(s)
    before = p.read_bytes()
    script = textwrap.dedent(
        """
        import resource, signal, sys
        from app.storage.settings import Settings, SettingsSaveError, save_settings
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # get EFBIG instead of being killed
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        s = Settings()
        s.chat.system_prompt = "x" * 100_000
        try:
            save_settings(s)
        except SettingsSaveError as exc:
            print("SAVE-ERROR", exc)
            sys.exit(0)
        print("SAVED")
        sys.exit(1)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SAVE-ERROR" in out.stdout and str(p) in out.stdout
    assert p.read_bytes() == before
    assert sorted(x.name for x in p.parent.iterdir()) == ["settings.json"]  # no temp file left behind
    assert load_settings()[0].chat.system_prompt == "the good old prompt"


def test_temp_file_cannot_be_created_keeps_previous_file(tmp_path):
    """The target folder cannot hold a new file (it is a file, not a folder): clear error, nothing changed."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("precious", "utf-8")
    with pytest.raises(SettingsSaveError, match="Could not save settings"):
        save_settings(Settings(), blocker / "settings.json")
    assert blocker.read_text("utf-8") == "precious"


def test_i32_the_tool_round_limit_is_a_setting_with_bounds():
    s = Settings()
    assert s.chat.max_tool_rounds == 8  # app.engine.chat.DEFAULT_MAX_ROUNDS
    from app.engine.chat import DEFAULT_MAX_ROUNDS

    assert s.chat.max_tool_rounds == DEFAULT_MAX_ROUNDS
    for bad in (0, -3, 101, "many"):
        with pytest.raises(ValidationError):
            s.chat.max_tool_rounds = bad
    s.chat.max_tool_rounds = 3
    save_settings(s)
    again, notice = load_settings()
    assert notice is None and again.chat.max_tool_rounds == 3
    settings_path().write_text(
        json.dumps({"schema_version": SCHEMA_VERSION, "chat": {"max_tool_rounds": 0}}), "utf-8"
    )
    reset, notice = load_settings()
    assert (
        reset.chat.max_tool_rounds == 8
        and notice is not None
        and "chat.max_tool_rounds" in notice.reset_fields
    )


def test_a_models_chat_template_is_kept_and_only_its_own(tmp_path):
    model = tmp_path / "m.gguf"
    s = Settings()
    s.set_override(model_key(model), ModelOverride(chat_template="{{ messages }}"))
    again = Settings.model_validate(json.loads(s.model_dump_json()))
    assert again.override_for(model).chat_template == "{{ messages }}"
    eff = effective_settings(again, model)
    assert eff.chat_template == "{{ messages }}" and "chat_template" in eff.overridden
    assert effective_settings(again, tmp_path / "other.gguf").chat_template is None
    assert ModelOverride(chat_template="  \n").chat_template is None  # empty: the model's own
    with pytest.raises(ValidationError):
        ModelOverride(chat_template="x" * 131_073)
