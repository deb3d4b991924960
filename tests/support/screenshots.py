"""Render every main state of the window to PNGs a person can look at.

    python -m tests.support.screenshots OUTDIR          (``make screenshots``)

Each state is a separate ``python -m app --screenshot OUTDIR/<state>.png --state <state>``
process with its own empty ``CALLISTO_HOME``, so it shows what a newcomer sees. States that
need a model use the offline demo model (SmolLM2, installed by ``make run`` / ``make test``);
the tool-call states (and ``theme-switch``, whose picture shows a call's card) use a scripted tiny
GGUF with Qwen 2.5's template that really calls the calculator, and ``image-chat`` a scripted GGUF
with a tiny vision projector beside it (:func:`write_vision_model`). Under Linux without a display it
runs itself under ``xvfb-run`` when available, else with Qt's offscreen platform.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from app.ui.application import STATES  # every state ``--state`` offers, in the order rendered

__all__ = ["STATES", "main", "render_all"]

REPO = Path(__file__).resolve().parents[2]
THEMES = ("light", "dark")


def _tool_model(folder: Path) -> Path:
    from tests.support.tool_done import write_tool_done_model

    call = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "17 * 23"}}\n</tool_call>'
    answer = "The calculator says **17 × 23 = 391**."
    return write_tool_done_model(
        folder / "Scripted-Tool-Caller.gguf", call, answer, name="Scripted tool caller (test model)"
    )


def _writing_model(folder: Path) -> Path:
    """Qwen 2.5's template: the reply opens a calculator call and writes its expression on and on
    (``17 * 23 * 17 * 23 ...``) until the max-tokens limit: the ``live-call`` state's model."""
    from tests.ui.scripted_gguf import write_scripted_gguf

    template = (REPO / "tests" / "fixtures" / "chat_templates" / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text()
    opening = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "'
    return write_scripted_gguf(
        folder / "Scripted-Call-Writer.gguf",
        chat_template=template,
        control_tokens=["<|im_start|>", "<|im_end|>", "<|endoftext|>"],
        user_tokens=[opening, "17 * 23", " * "],
        eos="<|im_end|>",
        script={"\n": opening, opening: "17 * 23", "17 * 23": " * ", " * ": "17 * 23"},
        default_next="\n",
        name="Scripted call writer (test model)",
        context_length=32768,  # the live-call state asks for 16,384 + 4,096
    )


VISION_ANSWER = (
    "A sunset over the sea: the sun sits on the horizon, the sky fades from deep blue to orange, "
    "and its light glitters on the water."
)


def write_vision_model(folder: Path) -> Path:
    """The ``image-chat`` state's model: a scripted ChatML GGUF that answers with
    :data:`VISION_ANSWER` (its next token depends on the current one alone, so the image's
    embeddings change nothing), and a tiny LLaVA projector (``tests.support.tiny_vision``) beside
    it in a folder of its own, where the engine finds it."""
    from tests.support.tiny_vision import write_tiny_projector
    from tests.ui.scripted_gguf import CHATML, write_scripted_gguf

    folder.mkdir(parents=True, exist_ok=True)
    model = write_scripted_gguf(
        folder / "Scripted-Vision.gguf",
        chat_template=CHATML,
        user_tokens=[VISION_ANSWER],
        script={"\n": VISION_ANSWER, VISION_ANSWER: "<|im_end|>"},
        default_next="<|im_end|>",
        name="Scripted vision model (test model)",
    )
    write_tiny_projector(folder / "mmproj-Scripted-Vision.gguf", text_embd=64)
    return model


def render_all(
    outdir: Path, *, theme: str = "auto", timeout_s: float = 90.0, states: tuple[str, ...] | None = None
) -> dict[str, int]:
    """Render each state; returns {state: exit code}."""
    outdir.mkdir(parents=True, exist_ok=True)
    codes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="callisto-shots-") as tmp:
        tool_model = _tool_model(Path(tmp))
        for state in states or STATES:
            home = Path(tmp) / f"home-{state}"
            env = {**os.environ, "CALLISTO_HOME": str(home)}
            cmd = [
                sys.executable,
                "-m",
                "app",
                "--screenshot",
                str(outdir / f"{state}.png"),
                "--state",
                state,
                "--quit-after",
                "150" if state == "check" else "60",
                "--theme",
                theme,
            ]
            if state in ("tool-call-with-panel", "remote", "reply-versions", "theme-switch"):
                cmd += ["--model", str(tool_model)]
            elif state == "image-chat":
                cmd += ["--model", str(write_vision_model(Path(tmp) / "vision"))]
            elif state == "live-call":
                cmd += ["--model", str(_writing_model(Path(tmp)))]
            elif state == "thinking":
                from tests.support.thinker import write_screenshot_thinker

                cmd += ["--model", str(write_screenshot_thinker(Path(tmp) / "Scripted-Thinker.gguf"))]
            try:
                proc = subprocess.run(
                    cmd,
                    cwd=REPO,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=timeout_s + (90 if state == "check" else 0),
                )  # a real check runs
                codes[state] = proc.returncode
                if proc.returncode != 0:
                    sys.stderr.write(f"{state}: exit {proc.returncode}\n{proc.stderr[-2000:]}\n")
                said = (
                    proc.stdout.strip().splitlines()[-1]
                    if proc.returncode == 0 and proc.stdout.strip()
                    else ""
                )
            except subprocess.TimeoutExpired:
                codes[state] = -1
                said = ""
                sys.stderr.write(f"{state}: timed out after {timeout_s} s\n")
            print(
                f"{state:>22}: {'ok' if codes[state] == 0 else 'FAILED'}  {said or outdir / (state + '.png')}"
            )
    return codes


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    theme = "both"  # every state in light and in dark (OUTDIR/light, OUTDIR/dark)
    if "--theme" in args:
        i = args.index("--theme")
        theme = args[i + 1]
        del args[i : i + 2]
    only = None
    if "--only" in args:
        i = args.index("--only")
        only = tuple(args[i + 1].split(","))
        del args[i : i + 2]
    outdir = Path(args[0] if args else ".screenshots")
    if (
        sys.platform.startswith("linux")
        and not os.environ.get("DISPLAY")
        and not os.environ.get("CALLISTO_IN_XVFB")
    ):
        xvfb = shutil.which("xvfb-run")
        if xvfb:
            env = {**os.environ, "CALLISTO_IN_XVFB": "1"}
            env.pop("QT_QPA_PLATFORM", None)
            cmd = [
                xvfb,
                "-a",
                "-s",
                "-screen 0 1400x900x24",
                sys.executable,
                "-m",
                "tests.support.screenshots",
                str(outdir),
                "--theme",
                theme,
            ] + (["--only", ",".join(only)] if only else [])
            return subprocess.call(cmd, cwd=REPO, env=env)
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    codes: dict[str, int] = {}
    for t in THEMES if theme == "both" else (theme,):
        for state, code in render_all(
            outdir / t if theme == "both" else outdir, theme=t, states=only
        ).items():
            codes[f"{t}/{state}"] = code
    return 0 if all(c == 0 for c in codes.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
