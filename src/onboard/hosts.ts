import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { homeDirectory, xdgAbsolute } from "../util/xdg.js";

/** How a host's configuration file is written: JSON with comments, or TOML (Codex CLI). */
export type HostFormat = "jsonc" | "toml";

export interface HostFile {
  host: string;
  file: string;
  format: HostFormat;
  /**
   * Where the server tables sit in the document, in the order the host reads them: an entry
   * found in an earlier table shadows one of the same name in a later table.
   */
  tables: string[][];
}

export const HOSTS = ["claude-code", "claude-desktop", "cursor", "vscode", "codex"] as const;
export type HostName = (typeof HOSTS)[number];

/** HOME when absolute, else the user's own home (xdg.ts): an empty or relative HOME is passed over. */
function home(): string {
  return homeDirectory();
}

/** `$XDG_CONFIG_HOME` when absolute (a relative one is ignored, as the XDG rule says: xdg.ts), else `~/.config`. */
function xdgConfig(): string {
  return xdgAbsolute("XDG_CONFIG_HOME") ?? join(home(), ".config");
}

function claudeDesktopFile(): string {
  if (process.platform === "darwin")
    return join(home(), "Library", "Application Support", "Claude", "claude_desktop_config.json");
  if (process.platform === "win32" && process.env.APPDATA)
    return join(process.env.APPDATA, "Claude", "claude_desktop_config.json");
  return join(xdgConfig(), "Claude", "claude_desktop_config.json");
}

/**
 * Every place a host keeps MCP servers, project files first. HOME, XDG_CONFIG_HOME, APPDATA and
 * CODEX_HOME are read each time so that tests can point them at temporary directories.
 */
export function hostFiles(host: HostName, cwd: string): HostFile[] {
  const json = (file: string, tables: string[][] = [["mcpServers"]]): HostFile => ({
    host,
    file,
    format: "jsonc",
    tables,
  });
  switch (host) {
    case "claude-code":
      // ~/.claude.json holds the user's servers and, under projects[<absolute path>], each
      // project's own ("local" scope, what `claude mcp add` writes by default), which win.
      return [
        json(join(cwd, ".mcp.json")),
        json(join(home(), ".claude.json"), [["projects", resolve(cwd), "mcpServers"], ["mcpServers"]]),
      ];
    case "claude-desktop":
      return [json(claudeDesktopFile())];
    case "cursor":
      return [json(join(cwd, ".cursor", "mcp.json")), json(join(home(), ".cursor", "mcp.json"))];
    case "vscode":
      return [json(join(cwd, ".vscode", "mcp.json"), [["servers"]])];
    case "codex": {
      const dir = process.env.CODEX_HOME ? resolve(process.env.CODEX_HOME) : join(home(), ".codex");
      return [{ host, file: join(dir, "config.toml"), format: "toml", tables: [["mcp_servers"]] }];
    }
  }
}

/** The host files that exist, for every host. */
export function foundHostFiles(cwd: string): HostFile[] {
  return HOSTS.flatMap((h) => hostFiles(h, cwd)).filter((f) => existsSync(f.file));
}

/** A file given by path: its format and server key guessed from its name. */
export function hostFileFromPath(path: string): HostFile {
  const file = resolve(path);
  if (file.endsWith(".toml")) return { host: "codex", file, format: "toml", tables: [["mcp_servers"]] };
  const vscode = /[\\/]\.vscode[\\/]mcp\.json$/.test(file);
  return {
    host: vscode ? "vscode" : "file",
    file,
    format: "jsonc",
    tables: [[vscode ? "servers" : "mcpServers"]],
  };
}
