// portcullis drill against servers defined in host configurations, run as the real CLI: entries
// whose own command line holds "run … --" (npm, cargo, uv), wrapped entries, the variables hosts
// expand, a label defined in several files, and the order of the label check and the passphrase.
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: host files hold ${…} for the host to expand
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { findDrillServer, unwrapped } from "../../src/onboard/drillServer.js";
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
function user(): { p: Project; env: Record<string, string> & { HOME: string } } {
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

  it("a Claude Desktop entry without cwd starts in /, as Desktop may start it: a relative path fails there as under Desktop; the build runs in the project", async () => {
    const u = user();
    const desktop = write(join(u.env.HOME, ".config", "Claude", "claude_desktop_config.json"), {
      mcpServers: {
        "inv-rel": { command: NODE, args: ["dist/server.js"], env: u.p.env },
        "inv-abs": { command: NODE, args: [join(u.p.dir, "dist", "server.js")], env: u.p.env },
        "inv-cwd": { command: NODE, args: ["dist/server.js"], cwd: u.p.dir, env: u.p.env },
      },
    });
    const rel = findDrillServer("inv-rel", u.p.dir, desktop);
    expect(rel.launch).toMatchObject({ cwd: "/", buildCwd: u.p.dir });
    expect(rel.launch).toHaveProperty(
      "note",
      expect.stringContaining("started in /, as Claude Desktop may start it"),
    );
    // an entry that names its directory: taken as written (Desktop may ignore it; doctor says so)
    expect(findDrillServer("inv-cwd", u.p.dir, desktop).launch).toMatchObject({ cwd: u.p.dir });
    expect(findDrillServer("inv-cwd", u.p.dir, desktop).launch).not.toHaveProperty("note");

    const failed = await drill(u, ["inv-rel", "--file", desktop]);
    expect(failed.code, failed.stdout + failed.stderr).toBe(1);
    expect(failed.stdout).toContain(
      `server "inv-rel" from ${desktop}; started in /, as Claude Desktop may start it`,
    );
    expect(failed.stdout).toMatch(/^✗ 1\. /m);
    expect(failed.stdout + failed.stderr).toContain("/dist/server.js");

    // the absolute one passes, and --rebuild runs in the project's folder (a relative build)
    const passed = await drill(u, [
      "inv-abs",
      "--file",
      desktop,
      "--rebuild",
      "echo '// rebuilt' >> dist/server.js",
    ]);
    expect(passed.code, passed.stdout + passed.stderr).toBe(0);
    expect(passed.stdout).toContain("drill: every step run passed");
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

  it("expands the variables each host documents, from the project directory", async () => {
    const u = user();
    u.env.DRILL_TEST_DIR = u.p.dir;
    write(join(u.p.dir, ".vscode", "mcp.json"), {
      servers: {
        "inv-vscode": { command: "node", args: ["dist/server.js"], cwd: "${workspaceFolder}", env: u.p.env },
      },
    });
    write(join(u.p.dir, ".cursor", "mcp.json"), {
      mcpServers: {
        "inv-cursor": { command: "node", args: ["${workspaceFolder}/dist/server.js"], env: u.p.env },
      },
    });
    write(join(u.p.dir, ".mcp.json"), {
      mcpServers: {
        "inv-claude": {
          command: "node",
          args: ["${DRILL_TEST_DIR}/${DRILL_TEST_ENTRY:-dist/server.js}"],
          env: u.p.env,
        },
        "inv-unset": { command: "node", args: ["${DRILL_TEST_UNSET}"] },
      },
    });
    for (const label of ["inv-vscode", "inv-cursor", "inv-claude"]) {
      const r = await drill(u, [label]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^✓ 1\. .*entry dist\/server\.js/m);
    }
    const unset = await drill(u, ["inv-unset"]);
    expect(unset.code).toBe(2);
    expect(unset.stderr).toMatch(
      /^portcullis drill: \S+\/\.mcp\.json: server "inv-unset" args\[0\] uses \$\{DRILL_TEST_UNSET\}, which the drill cannot expand/,
    );
  });

  it("a variable only the editor can supply: exit 2 naming the file, the key and the variable", async () => {
    const u = user();
    const file = write(join(u.p.dir, ".vscode", "mcp.json"), {
      inputs: [{ type: "promptString", id: "api-key", password: true }],
      servers: { inv: { command: "node", args: ["dist/server.js"], env: { API_KEY: "${input:api-key}" } } },
    });
    const r = await drill(u, ["inv"]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      `portcullis drill: ${file}: server "inv" env.API_KEY uses \${input:api-key}, which the drill cannot expand (vscode asks the user for its value when it starts the server); write the value in, or give the drill a portcullis.json entry for it.\n`,
    );
  });

  it("a label in several host files: the drill says which file it used and which others define it; --file picks one", async () => {
    const u = user();
    const claude = write(join(u.p.dir, ".mcp.json"), {
      mcpServers: { inv: { command: join(u.p.dir, "no-such-server"), args: [] } },
    });
    const cursor = write(join(u.p.dir, ".cursor", "mcp.json"), {
      mcpServers: { inv: { command: "node", args: ["dist/server.js"], env: u.p.env } },
    });
    const first = await drill(u, ["inv"]);
    expect(first.code).toBe(1);
    expect(first.stdout).toContain(
      `    server "inv" from ${claude}; also defined in ${cursor} (--file PATH drills another)\n✗ 1. `,
    );
    const chosen = await drill(u, ["inv", "--file", ".cursor/mcp.json"]);
    expect(chosen.code, chosen.stdout + chosen.stderr).toBe(0);
    expect(chosen.stdout).toMatch(new RegExp(`^ {4}server "inv" from ${cursor}\\n✓ 1\\. `, "m"));
    const none = await drill(u, ["other", "--file", ".cursor/mcp.json"]);
    expect(none.code).toBe(2);
    expect(none.stderr).toBe(
      `portcullis drill: ${cursor}: no server by that label (the label given is not repeated, in case it is a secret typed in the wrong place); it has inv.\n`,
    );
  });
});

/** The drill in a new session: no controlling terminal, no passphrase file. */
function withoutTerminal(cwd: string, args: string[], env: Record<string, string>) {
  return runCli(["drill", ...args], { env, cwd, noTerminal: true });
}

describe("portcullis drill: the label before the passphrase", () => {
  it("an unknown label is refused before any passphrase is asked; without a terminal the drill exits 2 with one sentence", async () => {
    const u = user();
    write(join(u.p.dir, ".mcp.json"), { mcpServers: { inv: { command: "node", args: ["dist/server.js"] } } });
    const unknown = await withoutTerminal(u.p.dir, ["nosuch", "--tool", "read_status"], u.env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(
      `portcullis drill: no server by that label (the label given is not repeated, in case it is a secret typed in the wrong place); known: inv in ${join(u.p.dir, ".mcp.json")}.\n`,
    );
    const known = await withoutTerminal(u.p.dir, ["inv", "--tool", "read_status"], u.env);
    expect(known.code).toBe(2);
    expect(known.stdout).toBe("");
    expect(known.stderr).toMatch(
      /^portcullis drill: there is no terminal to read the passphrase from; set PORTCULLIS_PASSPHRASE_FILE [^\n]*; nothing was run\.\n$/,
    );
  });

  it("a portcullis.json entry that takes secrets from the vault is refused before the passphrase, saying why and what to drill instead", async () => {
    // Before, `run` failed in the drill's throwaway state directory and advised a `vault set`
    // that stores into the real vault, changing nothing for the drill.
    const u = user();
    const file = write(join(u.p.dir, "portcullis.json"), {
      servers: {
        inv: { command: "node", args: ["dist/server.js"], credentials: { INV_KEY: "inv-key" } },
      },
    });
    const r = await withoutTerminal(u.p.dir, ["inv", "--tool", "read_status"], u.env);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      `portcullis drill: ${file}: servers.inv takes secrets from the vault (credentials.INV_KEY); the drill runs in a throwaway state directory whose vault is empty, and never copies your secrets into it, so this entry cannot start there: drill a copy of the entry under another label, without them.\n`,
    );
  });

  // Every other file named on the command line is said as "cannot read FILE: <what is wrong>;
  // <what to do> (CODE)" (README, "Commands"); --file said only "does not exist", also for a
  // path through a file, which exists in no sense the user can act on.
  it("a --file that cannot be read is one sentence naming it, what is wrong and the system's code", async () => {
    const u = user();
    write(join(u.p.dir, ".mcp.json"), { mcpServers: { inv: { command: "node", args: ["dist/server.js"] } } });
    const missing = await withoutTerminal(u.p.dir, ["inv", "--file", "no-such.json"], u.env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(
      `portcullis drill: --file ${join(u.p.dir, "no-such.json")}: cannot read it: it does not exist; check the path (ENOENT).\n`,
    );
    const through = await withoutTerminal(u.p.dir, ["inv", "--file", ".mcp.json/x.json"], u.env);
    expect(through.code).toBe(2);
    expect(through.stderr).toBe(
      `portcullis drill: --file ${join(u.p.dir, ".mcp.json", "x.json")}: cannot read it: a part of its path is a file, not a directory; check the path (ENOTDIR).\n`,
    );
  });
});

describe("the drill's launch of a host entry", () => {
  it("keeps every variable of the entry's env, one named __proto__ too, as the host would set it", () => {
    const u = user();
    write(join(u.p.dir, ".mcp.json"), {
      mcpServers: { inv: { command: NODE, args: ["x.js"], env: JSON.parse('{"__proto__": "x", "A": "1"}') } },
    });
    const { launch } = findDrillServer("inv", u.p.dir);
    if (!("env" in launch)) throw new Error("expected a host launch");
    expect(Object.keys(launch.env)).toEqual(["__proto__", "A"]);
    expect(JSON.stringify(launch.env)).toBe('{"__proto__":"x","A":"1"}');
  });
});
