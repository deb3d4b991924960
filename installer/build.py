"""Build Callisto's bundles and installers; every step the release workflow runs, by hand.

Run from the repository root with the Python that has Callisto installed (``.venv``)::

    python installer/build.py bundle      # PyInstaller one-folder app: dist/Callisto/ (+ dist/Callisto.app on macOS)
    python installer/build.py selftest    # run the bundle's --self-test (offscreen); report in dist/selftest.txt
    python installer/build.py windows     # Inno Setup: dist/installer/Callisto-<v>-windows-x64-setup.exe
    python installer/build.py macos       # dist/installer/Callisto-<v>-macos-<arch>.dmg (hdiutil)
    python installer/build.py all         # bundle, selftest, then the installer of this OS

Before ``bundle`` on Windows/macOS, install llama-cpp-python as a portable build (see
``.github/workflows/release.yml`` and the README's "Build installers").
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["ROOT", "bundle_executable", "main", "version"]

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"


def version() -> str:
    sys.path.insert(0, str(ROOT))
    from app import __version__

    return __version__


def bundle_executable(dist: Path = DIST) -> Path:
    """The bundle's launcher of this OS."""
    if sys.platform == "win32":
        return dist / "Callisto" / "Callisto.exe"
    if sys.platform == "darwin" and (dist / "Callisto.app").is_dir():
        return dist / "Callisto.app" / "Contents" / "MacOS" / "Callisto"
    return dist / "Callisto" / "Callisto"


def _run(cmd: list[str], **kw) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, cwd=ROOT, **kw)


def bundle() -> None:
    _run([sys.executable, "-m", "PyInstaller", "--noconfirm", "--clean", "installer/callisto.spec"])


def selftest() -> None:
    exe = bundle_executable()
    if not exe.exists():
        raise SystemExit(f"{exe} does not exist: run `python installer/build.py bundle` first")
    report = DIST / "selftest.txt"
    report.unlink(missing_ok=True)
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    # subprocess waits for a windowed (GUI-subsystem) Windows executable too, and its report file
    # stands in for the stdout such an executable does not have.
    proc = subprocess.run(
        [str(exe), "--self-test", "--report", str(report)],
        cwd=ROOT,
        env=env,
        timeout=600,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )
    print(report.read_text(encoding="utf-8") if report.exists() else proc.stdout, end="")
    if proc.returncode != 0:
        raise SystemExit(f"the bundle's self-test failed (exit status {proc.returncode})")


def _iscc() -> str:
    found = shutil.which("iscc") or shutil.which("ISCC")
    if found:
        return found
    for base in (
        os.environ.get("ProgramFiles(x86)"),
        os.environ.get("ProgramFiles"),
        os.path.join(os.environ.get("LOCALAPPDATA", ""), "Programs"),
    ):
        if base and (p := Path(base) / "Inno Setup 6" / "ISCC.exe").exists():
            return str(p)
    raise SystemExit(
        "Inno Setup 6 (ISCC.exe) was not found: install it from https://jrsoftware.org/isinfo.php "
        "or `choco install innosetup`"
    )


def windows() -> Path:
    _run([_iscc(), f"/DAppVersion={version()}", "installer/windows/callisto.iss"])
    out = DIST / "installer" / f"Callisto-{version()}-windows-x64-setup.exe"
    if not out.exists():
        raise SystemExit(f"Inno Setup did not write {out}")
    return out


def macos() -> Path:
    arch = platform.machine() or "universal"
    out = DIST / "installer" / f"Callisto-{version()}-macos-{arch}.dmg"
    _run(["bash", "installer/macos/make_dmg.sh", "dist/Callisto.app", str(out)])
    return out


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    steps = {"bundle": bundle, "selftest": selftest, "windows": windows, "macos": macos}
    if not args or any(a not in (*steps, "all") for a in args):
        print(__doc__)
        return 2
    for a in args:
        if a == "all":
            bundle()
            selftest()
            if sys.platform == "win32":
                print(f"built {windows()}")
            elif sys.platform == "darwin":
                print(f"built {macos()}")
        else:
            result = steps[a]()
            if isinstance(result, Path):
                print(f"built {result}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
