// A fake user for the onboarding tests: HOME, XDG_CONFIG_HOME, APPDATA and CODEX_HOME point into a
// temp directory, a project directory beside it, and the host fixtures copied into place. The real
// user's files are never read or written.
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach } from "vitest";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { REPO } from "../helpers/paths.js";

export const HOST_FIXTURES = join(REPO, "test", "fixtures", "hosts");

export interface FakeUser {
  root: string;
  home: string;
  project: string;
  stateDir: string;
  env: Record<string, string>;
  /** where each host's fixture was copied */
  files: Record<"claude-code" | "claude-desktop" | "cursor" | "vscode" | "codex", string>;
  cli(args: string[], cwd?: string): ReturnType<typeof runCli>;
}

function place(from: string, to: string): string {
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(join(HOST_FIXTURES, from), to);
  return to;
}

export function fakeUser(): FakeUser {
  const root = tempDir("portcullis-onboard-");
  const home = join(root, "home");
  const project = join(root, "project");
  const stateDir = join(root, "state");
  const config = join(home, ".config");
  mkdirSync(project, { recursive: true });
  const files = {
    "claude-code": place("claude-code/.mcp.json", join(project, ".mcp.json")),
    "claude-desktop": place(
      "claude-desktop/claude_desktop_config.json",
      join(config, "Claude", "claude_desktop_config.json"),
    ),
    cursor: place("cursor/mcp.json", join(project, ".cursor", "mcp.json")),
    vscode: place("vscode/mcp.json", join(project, ".vscode", "mcp.json")),
    codex: place("codex/config.toml", join(home, ".codex", "config.toml")),
  };
  const env = {
    HOME: home,
    XDG_CONFIG_HOME: config,
    APPDATA: join(home, "AppData"),
    CODEX_HOME: join(home, ".codex"),
    PORTCULLIS_HOME: stateDir,
  };
  return {
    root,
    home,
    project,
    stateDir,
    env,
    files,
    cli: (args, cwd = project) => runCli(args, { env, cwd }),
  };
}

export const read = (f: string): string => readFileSync(f, "utf8");

/**
 * A maker of fake users for one test file: each user made during a test is removed after it (the
 * afterEach is registered in the calling file).
 */
export function fakeUsersOfEachTest(): () => FakeUser {
  const users: FakeUser[] = [];
  afterEach(() => {
    for (const u of users.splice(0)) removeDir(u.root);
  });
  return () => {
    const u = fakeUser();
    users.push(u);
    return u;
  };
}

/** unwrap's last line once it restored a server (src/cli/wrap.ts), with its newline */
export const UNWRAP_NEXT =
  "next: restart the host (or reconnect these servers in it) so that it starts them without portcullis; until then it runs them through the gateways it started\n";
