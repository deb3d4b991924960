"""The foundation: entry points, the Qt-free core, the import contracts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from app import __version__

REPO = Path(__file__).resolve().parent.parent
CORE = ["app", "app.engine", "app.tools", "app.storage"]


def _run(
    *args: str, env: dict | None = None, cwd: Path = REPO, timeout: float = 120
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout
    )


def test_version_flag_prints_version():
    out = _run("-m", "app", "--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"Callisto {__version__}"


def test_core_imports_without_qt():
    """Import every core module in a fresh interpreter: PySide6 must never be loaded."""
    code = (
        "import importlib, pkgutil, sys\n"
        "import app\n"
        "for pkg in ('app.engine', 'app.tools', 'app.storage', 'app.server', 'app.check'):\n"
        "    m = importlib.import_module(pkg)\n"
        "    for info in pkgutil.walk_packages(m.__path__, pkg + '.'):\n"
        "        importlib.import_module(info.name)\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] in ('PySide6', 'shiboken6') or n.startswith('app.ui'))\n"
        "print('QT:' + ','.join(bad))\n"
    )
    out = _run("-c", code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "QT:", out.stdout


def test_import_contracts_catch_qt_in_core(tmp_path):
    """A copy of the project with one Qt import in the engine must fail lint-imports; the real one passes."""
    lint = Path(sys.executable).with_name("lint-imports")
    ok = subprocess.run([str(lint), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stdout + ok.stderr

    copy = tmp_path / "proj"
    shutil.copytree(REPO / "app", copy / "app", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", copy / "pyproject.toml")
    (copy / "app" / "engine" / "_sneaky.py").write_text("from PySide6.QtCore import QObject\n")
    env = {**os.environ, "PYTHONPATH": str(copy)}
    bad = subprocess.run(
        [str(lint), "--no-cache"], cwd=copy, env=env, capture_output=True, text=True, timeout=300
    )
    assert bad.returncode != 0
    assert "app.engine._sneaky" in bad.stdout and "PySide6" in bad.stdout


def test_layers_contract_catches_an_upward_import(tmp_path):
    """Tools importing the engine, formats importing storage, an inner layer of the engine importing
    an outer one (even inside a function), or one server API importing another break the contracts."""
    lint = Path(sys.executable).with_name("lint-imports")
    for module, line, expect in (
        ("app/tools/_upward.py", "import app.engine.chat\n", "app.tools._upward"),
        ("app/engine/formats/_stored.py", "import app.storage.history\n", "app.engine.formats._stored"),
        (
            "app/engine/grammar/_upward.py",
            "def f():\n    import app.engine.formats\n",
            "app.engine.grammar._upward",
        ),
        (
            "app/engine/formats/_render.py",
            "from app.engine.render import render_prompt\n",
            "app.engine.formats._render",
        ),
        (
            "app/engine/templates.py",
            "+def _up():\n    from app.engine.llm import load_model\n",
            "app.engine.templates",
        ),
        ("app/server/_ollama.py", "+from app.server import _openai\n", "app.server._ollama"),
    ):
        copy = tmp_path / module.replace("/", "_")
        shutil.copytree(REPO / "app", copy / "app", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(REPO / "pyproject.toml", copy / "pyproject.toml")
        if line.startswith("+"):  # added to an existing module
            target = copy / module
            target.write_text(target.read_text() + "\n\n" + line[1:])
        else:
            (copy / module).write_text(line)
        env = {**os.environ, "PYTHONPATH": str(copy)}
        bad = subprocess.run(
            [str(lint), "--no-cache"], cwd=copy, env=env, capture_output=True, text=True, timeout=300
        )
        assert bad.returncode != 0, bad.stdout
        assert expect in bad.stdout


def test_makefile_and_ci_are_the_whole_setup():
    make = (REPO / "Makefile").read_text()
    assert "\nrun:" in make and "\ntest:" in make
    ci = (REPO / ".ci" / "run").read_text()
    assert "make test" in ci and "set -euo pipefail" in ci
    readme = (REPO / "README.md").read_text()
    assert "make run" in readme and "make test" in readme


def test_workflow_runs_the_tests_on_every_push_on_each_shipping_platform():
    import yaml

    wf = yaml.safe_load((REPO / ".github" / "workflows" / "test.yml").read_text(encoding="utf-8"))
    triggers = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` key as True
    assert "push" in triggers and "pull_request" in triggers
    linux = wf["jobs"]["linux"]
    assert linux["runs-on"].startswith("ubuntu") and any(
        "make test" in s.get("run", "") for s in linux["steps"]
    )
    core = wf["jobs"]["core"]
    assert set(core["strategy"]["matrix"]["os"]) == {"windows-latest", "macos-latest"}
    run = " ".join(s.get("run", "") for s in core["steps"])
    assert "pytest" in run and "tests/engine" in run and "constraints.txt" in run
    assert (REPO / "constraints.txt").is_file()
