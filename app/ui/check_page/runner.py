"""The Check page's run: one check on its own thread, reported by Qt signals.

:class:`CheckRunner` stays a ``QThread`` rather than a task of ``app.ui.tasks.BackgroundTasks``:
a check streams its progress (one signal per scenario), can be stopped between scenarios, and the
page (and its tests) wait for the thread itself to end.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from PySide6.QtCore import QThread, Signal

__all__ = ["QUICK", "CheckRunner", "HostedTarget"]

QUICK = "quick"


class HostedTarget:
    """An in-process target whose every scenario runs as a job on the window's engine (``host``):
    the model is the engine's (loaded there if it is not), never a copy of the check's own, and
    the check's scenarios wait in the same queue as the window's turns and the server's requests."""

    kind = "in_process"

    def __init__(self, host: Any, path: str, settings: Any, **target: Any):
        from app.check.targets import InProcessTarget

        self.host, self.path, self.settings = host, path, settings
        model = host.call(lambda m: m, model=path, owner="check", settings=settings)
        self.inner = InProcessTarget(model, **target)

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    def run(self, scenario: Any, *, cancel: threading.Event | None = None) -> Any:
        def job(model: Any) -> Any:
            self.inner.model = model  # the engine's current object for the file (it may have reloaded it)
            return self.inner.run(scenario, cancel=cancel)

        return self.host.call(job, model=self.path, owner="check", settings=self.settings)

    def stop(self) -> None:
        self.inner.stop()

    def close(self) -> None:
        """The model is the engine's: it stays loaded for whoever uses it next."""


def _open_target(spec: dict[str, Any], host: Any) -> tuple[Any, Any, str | None]:
    """(target, the model this thread loaded or None, the GGUF whose template is linted or None)."""
    if spec["kind"] == "endpoint":
        from app.check.remote_target import RemoteTarget
        from app.engine.remote import Provider

        # the remote client chat --endpoint and check --endpoint use; API tools by default
        provider = Provider(
            spec["endpoint"], kind=spec.get("api") or "openai", api_key=spec.get("api_key") or None
        )
        target = RemoteTarget(
            provider,
            spec["model"],
            parser=spec.get("parser") or "api",
            max_tokens=spec.get("max_tokens", 256),
            model_file=spec.get("model_file"),
            stack_name=spec.get("stack"),
        )
        return target, None, spec.get("model_file")
    options = {
        "tool_format": spec.get("tool_format", "auto"),
        "max_tokens": spec.get("max_tokens", 256),
        "grammar": spec.get("grammar"),
    }
    if host is not None:
        from app.engine.llm import LoadSettings

        settings = LoadSettings(n_ctx=spec.get("n_ctx", 4096)) if spec.get("n_ctx") else None
        return HostedTarget(host, spec["path"], settings, **options), None, spec["path"]
    from app.check.targets import InProcessTarget
    from app.engine.llm import load_model

    model = load_model(spec["path"], n_ctx=spec.get("n_ctx", 4096))
    try:
        return InProcessTarget(model, **options), model, spec["path"]
    except BaseException:
        model.close()
        raise


def _forensics(gguf: str | None) -> list[dict[str, Any]]:
    if not gguf:
        return []
    try:
        from app.check.forensics import lint_gguf

        return lint_gguf(gguf)["findings"]
    except Exception:  # noqa: BLE001 - forensics never stops a check
        return []


class CheckRunner(QThread):
    """Runs one check on its own thread and reports by signals. With the window's engine
    (``host``) the model's scenarios run there; without one the model is loaded on this thread."""

    sig_progress = Signal(int, int, str, str)  # index (0-based), total, category, scenario id
    sig_scenario = Signal(object)  # a finished scenario's row
    sig_finished = Signal(object)  # the written result (with "_path")
    sig_failed = Signal(str)

    def __init__(self, spec: dict[str, Any], parent: Any = None, *, host: Any = None):
        super().__init__(parent)
        self.spec = spec
        self.host = host
        self._stop = threading.Event()
        self._target: Any = None

    def stop(self) -> None:
        self._stop.set()
        t = self._target
        if t is not None and hasattr(t, "stop"):
            t.stop()

    def _scenarios(self) -> tuple[Any, list[Any]]:
        from app.check.corpus import load_corpus

        corpus = load_corpus(self.spec.get("scenarios_dir"))
        which = self.spec.get("selection") or "all"
        if which == QUICK:
            return corpus, corpus.quick()
        if which == "all":
            return corpus, list(corpus.scenarios)
        return corpus, corpus.select([which])

    def _progress(self, i: int, n: int, sc: Any, res: Any) -> None:
        if res is None:
            self.sig_progress.emit(i, n, sc.category, sc.id)
        else:
            self.sig_scenario.emit(res.to_dict("", ""))

    def run(self) -> None:  # noqa: D401 - QThread API
        from app.check.runner import run_check, write_result
        from app.check.scores import record_score, results_dir

        model = None
        try:
            corpus, scenarios = self._scenarios()
            spec = self.spec
            self._target, model, lint = _open_target(spec, self.host)
            result = run_check(
                self._target,
                scenarios,
                corpus_sha256=corpus.sha256,
                corpus_dir=str(corpus.directory),
                progress=self._progress,
                stop=self._stop,
                forensics=_forensics(lint),
                settings={
                    "max_tokens": spec.get("max_tokens", 256),
                    "temperature": 0.0,
                    "seed": 0,
                    "selection": spec.get("selection") or "all",
                },
            )
            out = Path(spec.get("out_dir") or results_dir()) / f"{result['run_id']}.json"
            write_result(result, out)
            record_score(result, out)
            result["_path"] = str(out)
            self.sig_finished.emit(result)
        except Exception as exc:  # noqa: BLE001 - any failure is the run's, shown on the page
            self.sig_failed.emit(f"{type(exc).__name__}: {exc}")
        finally:
            if self._target is not None:
                self._target.close()
            if model is not None:
                model.close()
