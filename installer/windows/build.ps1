# Build Callisto's Windows installer by hand (what release.yml's Windows job runs).
#
#   powershell -ExecutionPolicy Bypass -File installer\windows\build.ps1
#
# Needs Python 3.11+, Visual Studio Build Tools (C++; llama.cpp is compiled) and Inno Setup 6.
# llama.cpp is built without native CPU tuning so the installer runs on any x64 PC.
$ErrorActionPreference = "Stop"
Set-Location (Join-Path $PSScriptRoot "..\..")
if (-not (Test-Path .venv\Scripts\python.exe)) { python -m venv .venv }
$py = ".venv\Scripts\python.exe"
& $py -m pip install --upgrade pip; if ($LASTEXITCODE) { exit $LASTEXITCODE }
$env:CMAKE_ARGS = "-DGGML_NATIVE=OFF"
& $py -m pip install --no-cache-dir --force-reinstall --no-deps --no-binary llama-cpp-python "llama-cpp-python==0.3.36"
if ($LASTEXITCODE) { exit $LASTEXITCODE }
& $py -m pip install -c constraints.txt -e ".[bundle]"; if ($LASTEXITCODE) { exit $LASTEXITCODE }
& $py installer\build.py all; exit $LASTEXITCODE
