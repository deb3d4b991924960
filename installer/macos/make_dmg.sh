#!/usr/bin/env bash
# Pack Callisto.app into a compressed, drag-to-install disk image (macOS only: hdiutil).
#
#   installer/macos/make_dmg.sh dist/Callisto.app dist/installer/Callisto-0.1.0-macos-arm64.dmg
#
# The .app comes from `pyinstaller installer/callisto.spec` on macOS, which writes its Info.plist
# (bundle id org.callisto.Callisto, version, LSMinimumSystemVersion 11.0). The image holds the
# app and a link to /Applications. The app is ad-hoc signed so Apple-silicon Macs will run it;
# set CODESIGN_IDENTITY to sign with a Developer ID instead (notarisation is a separate step).
set -euo pipefail

app="${1:?usage: make_dmg.sh PATH/Callisto.app OUT.dmg}"
out="${2:?usage: make_dmg.sh PATH/Callisto.app OUT.dmg}"
[ -d "$app" ] || { echo "no app bundle at $app (build it with pyinstaller installer/callisto.spec)" >&2; exit 1; }
/usr/libexec/PlistBuddy -c "Print :CFBundleIdentifier" "$app/Contents/Info.plist"
/usr/libexec/PlistBuddy -c "Print :LSMinimumSystemVersion" "$app/Contents/Info.plist"

codesign --force --deep --sign "${CODESIGN_IDENTITY:--}" "$app"
codesign --verify --deep --strict "$app"

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
cp -R "$app" "$stage/"
ln -s /Applications "$stage/Applications"
mkdir -p "$(dirname "$out")"
rm -f "$out"
hdiutil create -volname "Callisto" -srcfolder "$stage" -fs HFS+ -format UDZO -ov "$out"
hdiutil verify "$out"
echo "wrote $out"
