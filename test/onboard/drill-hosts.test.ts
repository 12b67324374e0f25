// portcullis drill against servers defined in host configurations, run as the real CLI: entries
// whose own command line holds "run … --" (npm, cargo, uv), and wrapped entries.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { unwrapped } from "../../src/onboard/drillServer.js";
import { removeDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { makeProject, type Project } from "../helpers/project.js";
import { passphraseEnv } from "../helpers/state.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) removeDir(d);
});

/** The inventory fixture at revision A, in a fake HOME (no real host file is ever read). */
function user(): { p: Project; env: Record<string, string> } {
  const p = makeProject("A");
  const home = dirname(p.dir);
  dirs.push(home);
  const env = {
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    APPDATA: join(home, "AppData"),
    CODEX_HOME: join(home, ".codex"),
  };
  return { p, env };
}

function write(file: string, value: unknown): string {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(value, null, 2));
  return file;
}

const drill = (u: { p: Project; env: Record<string, string> }, args: string[]) =>
  runCli(["drill", ...args], {
    cwd: u.p.dir,
    env: { ...passphraseEnv(), ...u.env },
    timeoutMs: 120_000,
  });

describe("portcullis drill: host configurations", () => {
  it("an entry whose own command line is 'npm run start … -- --verbose' is launched as written; a wrapped one by its command after run's '--'", async () => {
    const u = user();
    const pkg = join(u.p.dir, "package.json");
    writeFileSync(
      pkg,
      JSON.stringify({ ...JSON.parse(readFileSync(pkg, "utf8")), scripts: { start: "node dist/server.js" } }),
    );
    const mcp = write(join(u.p.dir, ".mcp.json"), {
      mcpServers: {
        "inv-npm": {
          command: "npm",
          args: ["run", "start", "--silent", "--", "--verbose"],
          env: { ...u.p.env, npm_config_update_notifier: "false" },
        },
      },
    });
    // steps 1 and 2 prove the launch: the gateway runs npm, which runs the server
    const r = await drill(u, ["inv-npm"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^✓ 2\. list the tools: 4 tools: read_status, /m);
    expect(r.stdout).toContain("drill: every step run passed");

    // the same entry as wrap writes it: the drill runs what follows run's '--', in its own state
    const wrap = await runCli(["wrap", mcp], {
      cwd: u.p.dir,
      env: { ...u.env, PORTCULLIS_HOME: join(u.env.HOME, "state") },
    });
    expect(wrap.code, wrap.stderr).toBe(0);
    const again = await drill(u, ["inv-npm"]);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^✓ 1\. /m);
  });

  it("only portcullis's own shapes are wrapped entries: cargo, uv and npm command lines with '--' are not", () => {
    expect(unwrapped(["cargo", "run", "--release", "--", "--stdio"])).toBeNull();
    expect(unwrapped(["uv", "run", "server.py", "--", "--verbose"])).toBeNull();
    expect(unwrapped(["npm", "run", "start", "--", "--verbose"])).toBeNull();
    expect(unwrapped(["node", "run.js", "run", "--", "x"])).toBeNull();
    // as wrap writes it, and as a human would
    expect(
      unwrapped([
        NODE,
        CLI,
        "run",
        "--state-dir",
        "/s",
        "--label",
        "l",
        "--",
        "npm",
        "run",
        "start",
        "--",
        "-v",
      ]),
    ).toEqual(["npm", "run", "start", "--", "-v"]);
    expect(unwrapped(["portcullis", "run", "--label", "l", "--", "uv", "run", "x"])).toEqual([
      "uv",
      "run",
      "x",
    ]);
    expect(unwrapped(["/usr/local/bin/portcullis", "run", "--url", "https://x"])).toEqual([]);
  });
});
