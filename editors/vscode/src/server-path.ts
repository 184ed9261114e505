// Where the extension looks for the `tandem` command, kept free of the `vscode` module so that tests run it in
// plain Node.
import * as fs from "fs";
import * as path from "path";

function executable(file: string): boolean {
  try { fs.accessSync(file, fs.constants.X_OK); return fs.statSync(file).isFile(); } catch { return false; }
}

// The server: the setting (a path, or a command looked up on PATH; machine-scoped, so never a workspace's), else
// a `tandem` in ~/.local/bin (pipx, uv tool) or on PATH. A VS Code started from a desktop often has a PATH without
// the user's shell additions, so the usual place is looked at too. Never a program the workspace holds (its
// `.venv/bin`): opening a folder must not run what came with it.
export function findServer(setting: string, envPath: string, home: string): string | undefined {
  const bin = process.platform === "win32" ? "tandem.exe" : "tandem";
  const onPath = (name: string) => envPath.split(path.delimiter).filter(Boolean)
    .map((d) => path.join(d, name)).find(executable);
  if (setting && setting !== "tandem") {
    if (setting.includes("/") || setting.includes("\\")) return executable(setting) ? setting : undefined;
    return onPath(setting);
  }
  const local = path.join(home, ".local", "bin", bin);
  return executable(local) ? local : onPath(bin);
}

