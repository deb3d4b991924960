; Inno Setup 6 script: Callisto's Windows installer (per-user, no admin rights needed).
;
; Build by hand on Windows, after `pyinstaller --noconfirm --clean installer\callisto.spec`:
;     iscc /DAppVersion=0.1.0 installer\windows\callisto.iss
; (installer\windows\build.ps1 does both and runs the self-test.) The result is
; dist\installer\Callisto-<version>-windows-x64-setup.exe.
;
; Per-user install: PrivilegesRequired=lowest makes {autopf} = %LOCALAPPDATA%\Programs and
; {autoprograms} = the user's Start menu, and the uninstaller is registered under HKCU, so no UAC
; prompt ever appears. Uninstalling removes the program folder only: the user's conversations,
; settings, models and logs (in %LOCALAPPDATA%\Callisto) are kept.

#ifndef AppVersion
  #define AppVersion "0.1.0"
#endif
#define AppName "Callisto"
#define AppExe "Callisto.exe"
; paths below are relative to this script's folder (installer\windows)
#define Root "..\.."

[Setup]
; A fixed AppId keeps upgrades in place and pairs them with the same uninstaller entry.
AppId={{6E1A4B2C-8F3D-4C1B-9A57-3C0DCA11157B}
AppName={#AppName}
AppVersion={#AppVersion}
AppVerName={#AppName} {#AppVersion}
AppPublisher=Callisto
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir={#Root}\dist\installer
OutputBaseFilename={#AppName}-{#AppVersion}-windows-x64-setup
SetupIconFile={#Root}\resources\icons\callisto.ico
UninstallDisplayIcon={app}\{#AppExe}
UninstallDisplayName={#AppName} {#AppVersion}
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
CloseApplications=yes

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
; The whole PyInstaller one-folder app.
Source: "{#Root}\dist\Callisto\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\{#AppName}"; Filename: "{app}\{#AppExe}"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\{#AppExe}"; Tasks: desktopicon

[Run]
Filename: "{app}\{#AppExe}"; Description: "{cm:LaunchProgram,{#AppName}}"; Flags: nowait postinstall skipifsilent

[UninstallDelete]
; Python byte-code caches written next to the program at run time, if any.
Type: filesandordirs; Name: "{app}\_internal\__pycache__"
