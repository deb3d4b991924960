"""The installer: the bundle's self-test (in source and from a real PyInstaller bundle built
here), the PyInstaller spec, the Inno Setup script, the macOS recipe, the release workflow and
the icon files. Qt-free: windows are only rendered inside the bundle's own process."""

from __future__ import annotations

import configparser
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from installer.make_icons import ICNS_TYPES, ICO_SIZES, icns_bytes, ico_bytes

REPO = Path(__file__).resolve().parent.parent
INSTALLER = REPO / "installer"
ICONS = REPO / "resources" / "icons"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# --- the self-test, from source -----------------------------------------------------------------


def test_engine_self_test_runs_a_tool_call_through_real_llama_cpp(tmp_path):
    from app.selftest import EXPECTED_RESULT, check_engine

    res = check_engine(tmp_path)
    assert res.ok and res.name == "engine"
    assert f"-> {EXPECTED_RESULT}" in res.detail
    assert res.facts["rounds"] == 2  # the call, then the answer after the tool result
    assert res.facts["detected_format"] == "hermes"  # the Qwen2.5 template is detected as Hermes
    assert "tool_format_override" not in res.facts["notices"]


def test_self_test_command_exits_zero_and_writes_its_report(tmp_path):
    report = tmp_path / "report.txt"
    proc = subprocess.run(
        [sys.executable, "-m", "app", "--self-test", "--skip-window", "--report", str(report)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = report.read_text(encoding="utf-8")
    assert text == proc.stdout
    assert "ok   engine:" in text and text.rstrip().endswith("self-test passed")
    assert "ok   server: API server on http://127.0.0.1:" in text


# --- static checks of the recipes ---------------------------------------------------------------


def test_spec_is_one_folder_windowed_with_icon_llama_libs_and_trimmed_qt():
    spec = (INSTALLER / "callisto.spec").read_text(encoding="utf-8")
    compile(spec, "callisto.spec", "exec")
    assert "exclude_binaries=True" in spec and "COLLECT(" in spec  # one-folder
    assert "console=False" in spec
    assert 'collect_dynamic_libs("llama_cpp")' in spec
    assert "icon=ICON" in spec and "callisto.ico" in spec and "callisto.icns" in spec
    assert "bundle_identifier=BUNDLE_ID" in spec and '"LSMinimumSystemVersion": MIN_MACOS' in spec
    assert '"CFBundleShortVersionString": VERSION' in spec
    for plugin in ("qoffscreen", "qxcb", "qwindows", "qcocoa"):
        assert plugin in spec
    for dropped in (
        "PySide6.QtQml",
        "PySide6.QtQuick",
        "PySide6.QtWebEngineCore",
        "PySide6.Qt3DCore",
        "PySide6.QtMultimedia",
    ):
        assert dropped in spec
    entry = (INSTALLER / "callisto_main.py").read_text(encoding="utf-8")
    assert "from app.__main__ import main" in entry


def test_spec_leaves_the_development_tools_out():
    """The --screenshot states (``app.ui.dev``) are a development tool: neither collected nor
    followed by PyInstaller's import analysis."""
    import ast
    import importlib.util

    spec = (INSTALLER / "callisto.spec").read_text(encoding="utf-8")
    dev_only = next(
        ast.literal_eval(node.value)
        for node in ast.walk(ast.parse(spec))
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "DEV_ONLY" for t in node.targets)
    )
    assert "app.ui.dev" in dev_only
    assert all(importlib.util.find_spec(name) is not None for name in dev_only)  # real packages
    assert importlib.util.find_spec("app.ui.dev.screenshots") is not None
    assert 'collect_submodules("app", filter=_shipped)' in spec and "*DEV_ONLY," in spec


def test_inno_setup_script_installs_per_user_with_start_menu_and_uninstaller():
    text = (INSTALLER / "windows" / "callisto.iss").read_text(encoding="utf-8")
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith((";", "#")))
    ini = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    ini.optionxform = str  # Inno directives are case-sensitive names
    ini.read_string(body.split("[Languages]")[0])  # [Setup] holds key=value directives only
    setup = ini["Setup"]
    assert setup["PrivilegesRequired"] == "lowest"  # no admin rights
    assert setup["DefaultDirName"].startswith("{autopf}")  # = %LOCALAPPDATA%\Programs when per-user
    assert setup["SetupIconFile"].endswith(r"resources\icons\callisto.ico")
    assert setup["UninstallDisplayIcon"] == r"{app}\{#AppExe}"
    assert "Uninstallable" not in setup or setup["Uninstallable"] != "no"
    assert re.search(r'^Name: "\{autoprograms\}\\\{#AppName\}"; Filename: "\{app\}\\\{#AppExe\}"', text, re.M)
    assert re.search(r'^Source: "\{#Root\}\\dist\\Callisto\\\*"; .*recursesubdirs', text, re.M)
    # the paths it names exist relative to the script
    root = (INSTALLER / "windows" / ".." / "..").resolve()
    assert root == REPO
    assert (root / "resources" / "icons" / "callisto.ico").is_file()


def test_macos_recipe_builds_a_metal_llama_and_a_dmg():
    build = (INSTALLER / "macos" / "build.sh").read_text(encoding="utf-8")
    assert "-DGGML_METAL=on" in build and "-DGGML_NATIVE=OFF" in build
    dmg = (INSTALLER / "macos" / "make_dmg.sh").read_text(encoding="utf-8")
    assert "hdiutil create" in dmg and "/Applications" in dmg and "UDZO" in dmg
    for script in ("build.sh", "make_dmg.sh"):
        path = INSTALLER / "macos" / script
        assert os.access(path, os.X_OK)
        subprocess.run(["bash", "-n", str(path)], check=True)  # syntax


def test_release_workflow_builds_windows_and_macos_with_selftest_and_upload():
    wf = yaml.safe_load((REPO / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8"))
    jobs = wf["jobs"]
    assert jobs["windows"]["runs-on"] == "windows-latest"
    mac_matrix = jobs["macos"]["strategy"]["matrix"]["include"]
    assert {(m["os"], m["arch"]) for m in mac_matrix} == {("macos-latest", "arm64"), ("macos-13", "x86_64")}
    assert jobs["macos"]["runs-on"] == "${{ matrix.os }}"
    build_steps = {"bundle", "selftest", "windows", "macos"}
    for name, job in jobs.items():
        steps = job["steps"]
        runs = "\n".join(s.get("run", "") for s in steps)
        cmake = " ".join(str(s.get("env", {}).get("CMAKE_ARGS", "")) for s in steps)
        assert "-DGGML_NATIVE=OFF" in cmake
        assert ("-DGGML_METAL=on" in cmake) == (name == "macos")
        assert "--no-binary llama-cpp-python" in runs  # built from source with CMAKE_ARGS
        order = [m.group(1) for m in re.finditer(r"installer/build\.py (\w+)", runs)]
        assert set(order) <= build_steps
        assert (
            order.index("bundle")
            < order.index("selftest")
            < order.index("windows" if name == "windows" else "macos")
        )
        upload = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
        assert len(upload) == 1 and upload[0]["with"]["if-no-files-found"] == "error", name
        assert "dist/selftest.txt" in upload[0]["with"]["path"]
    # each step the workflow runs exists as a command of installer/build.py
    proc = subprocess.run(
        [sys.executable, str(INSTALLER / "build.py"), "nonsense"], capture_output=True, text=True, cwd=REPO
    )
    assert proc.returncode == 2
    for step in build_steps:
        assert f"installer/build.py {step}" in proc.stdout


# --- icons --------------------------------------------------------------------------------------


def _ico_entries(data: bytes) -> list[tuple[int, bytes]]:
    reserved, kind, count = struct.unpack_from("<HHH", data, 0)
    assert (reserved, kind) == (0, 1)
    out = []
    for i in range(count):
        w, _h, _c, _r, _planes, _bpp, size, offset = struct.unpack_from("<BBBBHHII", data, 6 + 16 * i)
        out.append((w or 256, data[offset : offset + size]))
    return out


def _icns_entries(data: bytes) -> dict[bytes, bytes]:
    assert data[:4] == b"icns" and struct.unpack(">I", data[4:8])[0] == len(data)
    out, i = {}, 8
    while i < len(data):
        kind, length = data[i : i + 4], struct.unpack(">I", data[i + 4 : i + 8])[0]
        out[kind] = data[i + 8 : i + length]
        i += length
    assert i == len(data)
    return out


def test_icon_files_are_valid_ico_icns_and_png():
    ico = _ico_entries((ICONS / "callisto.ico").read_bytes())
    assert [w for w, _ in ico] == list(ICO_SIZES)
    assert all(png.startswith(PNG_MAGIC) for _, png in ico)
    icns = _icns_entries((ICONS / "callisto.icns").read_bytes())
    assert set(icns) == set(ICNS_TYPES.values())
    assert all(png.startswith(PNG_MAGIC) for png in icns.values())
    png = (ICONS / "callisto.png").read_bytes()
    assert png.startswith(PNG_MAGIC) and struct.unpack(">II", png[16:24]) == (256, 256)
    assert (ICONS / "callisto.svg").read_text(encoding="utf-8").lstrip().startswith("<?xml")


def test_icon_containers_round_trip():
    pngs = {16: PNG_MAGIC + b"a" * 10, 256: PNG_MAGIC + b"b" * 300}
    assert _ico_entries(ico_bytes(pngs)) == [(16, pngs[16]), (256, pngs[256])]
    assert _icns_entries(icns_bytes(pngs)) == {b"icp4": pngs[16], b"ic08": pngs[256]}


# --- the real bundle ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """Build the one-folder app with PyInstaller from this checkout (as `make bundle` does)."""
    if shutil.which("pyinstaller", path=str(Path(sys.executable).parent)) is None:
        pytest.fail("PyInstaller is missing: `make test` installs it with the dev extras")
    work = tmp_path_factory.mktemp("bundle")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "PyInstaller",
            "--noconfirm",
            "--distpath",
            str(work / "dist"),
            "--workpath",
            str(work / "build"),
            str(INSTALLER / "callisto.spec"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    yield work / "dist" / "Callisto"
    shutil.rmtree(work, ignore_errors=True)  # ~270 MB


def _run_bundle(exe: Path, *args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "CALLISTO_HOME": str(home)}
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=300, env=env, cwd=home)


@pytest.mark.slow
# The bundle fixture's PyInstaller build runs inside this test's time: on a loaded machine it takes
# far longer than the suite's 300 s per test (its own subprocess limit is 1,200 s).
@pytest.mark.timeout(1800)
def test_bundle_self_test_loads_a_model_calls_a_tool_and_renders_the_window(bundle, tmp_path):
    exe = bundle / ("Callisto.exe" if sys.platform == "win32" else "Callisto")
    assert exe.is_file()
    internal = bundle / "_internal"
    assert list((internal / "llama_cpp" / "lib").glob("*llama*")), "llama.cpp's libraries are not bundled"
    assert (internal / "resources" / "light.qss").is_file()
    plugins = {p.name for p in (internal / "PySide6" / "Qt" / "plugins").rglob("*") if p.is_file()}
    assert any("qoffscreen" in p for p in plugins)
    assert not any(re.search(r"qwayland|qeglfs|qvnc|qpdf|qtiff", p) for p in plugins), plugins
    assert not list(internal.rglob("*Qt6Quick*")) and not list(internal.rglob("*Qt6Qml*"))

    shot = tmp_path / "window.png"
    proc = _run_bundle(exe, "--self-test", "--screenshot", str(shot), home=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "self-test (bundle;" in proc.stdout
    assert "ok   engine:" in proc.stdout and "calculator('6*7') -> 42" in proc.stdout
    assert "ok   window: main window rendered" in proc.stdout
    assert proc.stdout.rstrip().endswith("self-test passed")
    assert shot.read_bytes().startswith(PNG_MAGIC)
    assert _run_bundle(exe, "--version", home=tmp_path).stdout.strip().startswith("Callisto ")

    # A bundle without llama.cpp's libraries (what the spec prevents) fails with a clear message.
    lib = internal / "llama_cpp" / "lib"
    hidden = tmp_path / "hidden-lib"
    shutil.move(str(lib), str(hidden))
    try:
        broken = _run_bundle(exe, "--self-test", "--skip-window", home=tmp_path)
    finally:
        shutil.move(str(hidden), str(lib))
    assert broken.returncode == 1
    assert "FAIL" in broken.stdout and "llama" in broken.stdout.lower()
    assert broken.stdout.rstrip().endswith("self-test FAILED (1 check(s))")
