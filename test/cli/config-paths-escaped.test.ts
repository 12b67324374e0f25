// A configuration file or a token file in a directory whose name holds a newline, an ESC, a C1
// CSI (\u009b) and a right-to-left override: every command that names the file prints it escaped,
// never raw. Before, doctor --json, wrap --json, vault list --json and status --json wrote the C1
// and the override as they were (JSON.stringify escapes only C0 controls), doctor --json carried
// run's "listenTokenFile … needs listen" sentence with the path raw inside it, `wrap --dry-run`
// cut its diff header at the path's newline, and the listening line of `run --listen` wrote the
// token file's override raw. The real CLI, over pipes.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { safeText } from "../../src/catalog/text.js";
import { runCli } from "../helpers/gateway.js";
import { CLI, fixtureCommand, NODE } from "../helpers/paths.js";
import { startListener } from "../http/listen.js";
import { type Finding, withState, writeConfig, writeServers } from "../onboard/doctorKit.js";
import { fakeUsersOfEachTest } from "../onboard/hosts.js";

const user = fakeUsersOfEachTest();
let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** C0 controls but the newline (a line end the command writes itself), C1 controls, format characters (bidi) */
const RAW = /(?!\n)[\p{Cc}\p{Cf}]/u;
const HOSTILE_DIR = "project\n\u001b[2J\u009b1m\u202egnp.";

describe("configuration and token file paths with control characters are printed escaped", () => {
  it("doctor, doctor --json, run's refusals, wrap --dry-run (and --json) and vault list --json", async () => {
    const u = user();
    withState(u);
    const dir = join(u.root, HOSTILE_DIR);
    mkdirSync(dir);
    const [command, ...args] = fixtureCommand("echo");
    const config = writeConfig(dir, { unserved: { command, args, listenTokenFile: join(dir, "t.token") } });
    const run = (...more: string[]) => ({
      command: NODE,
      args: [CLI, "run", "--state-dir", u.stateDir, ...more],
    });
    const mcp = writeServers(join(dir, ".mcp.json"), {
      bare: { command, args },
      unserved: run("unserved"),
      flags: run("--listen-max-sessions", "4", "--", command!, ...args),
    });
    const cli = (...a: string[]) => u.cli(a, dir);

    const text = await cli("doctor");
    expect(text.code).toBe(1);
    expect(text.stdout).not.toMatch(RAW);
    const json = await cli("doctor", "--json");
    expect(json.code).toBe(1);
    expect(json.stdout).not.toMatch(RAW);
    const report = JSON.parse(json.stdout) as { hosts: { file: string }[]; findings: Finding[] };
    // the JSON decodes to the path itself; the sentences hold it escaped
    expect(report.hosts.map((h) => h.file)).toContain(mcp);
    for (const f of report.findings) {
      expect(f.what, f.what).not.toMatch(RAW);
      expect(f.next, f.next).not.toMatch(RAW);
    }
    const shown = (p: string) => safeText(p);
    expect(report.findings.map((f) => f.what)).toContain(
      `${shown(mcp)}: server "unserved"; ${shown(config)}: listenTokenFile of "unserved": listenTokenFile of "unserved" in ${shown(config)} needs listen (in the file, or run --listen HOST:PORT), so 'portcullis run' refuses to start`,
    );
    expect(report.findings.map((f) => f.what)).toContain(
      `${shown(mcp)}: server "flags": --listen-max-sessions needs --listen HOST:PORT, so 'portcullis run' refuses to start (exit 2 at every start, and the host shows a server that does not connect)`,
    );

    // run's own sentences: the configuration's path, and a --listen-token-file's
    const unserved = await runCli(["run", "--state-dir", u.stateDir, "unserved"], { cwd: dir });
    expect(unserved.code).toBe(2);
    expect(unserved.stderr).toBe(
      `portcullis run: listenTokenFile of "unserved" in ${shown(config)} needs listen (in the file, or run --listen HOST:PORT).\n`,
    );
    const missing = join(dir, "missing.token");
    const flag = await runCli(
      [
        "run",
        "--state-dir",
        u.stateDir,
        "--listen",
        "127.0.0.1:0",
        "--listen-token-file",
        missing,
        "--",
        command!,
        ...args,
      ],
      { cwd: dir },
    );
    expect(flag.code).toBe(2);
    expect(flag.stderr).toBe(
      `portcullis run: --listen-token-file ${shown(missing)}: cannot read it: it does not exist; check the path (ENOENT).\n`,
    );

    // the dry run's diff names the host file on its two header lines, whole
    const dry = await cli("wrap", "--dry-run", "--state-dir", u.stateDir, mcp);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).not.toMatch(RAW);
    expect(dry.stdout.startsWith(`--- ${shown(mcp)}\n+++ ${shown(mcp)} (wrapped)\n`)).toBe(true);
    const dryJson = await cli("wrap", "--dry-run", "--json", "--state-dir", u.stateDir, mcp);
    expect(dryJson.code, dryJson.stderr).toBe(0);
    expect(dryJson.stdout).not.toMatch(RAW);
    expect(JSON.parse(dryJson.stdout).files[0].file).toBe(mcp);

    const vault = await cli("vault", "list", "--json");
    expect(vault.code, vault.stderr).toBe(0);
    expect(vault.stdout).not.toMatch(RAW);
    expect(JSON.parse(vault.stdout).config.file).toBe(config);
  });

  it("run --listen's listening line and status name the token file and the configuration escaped", async () => {
    const u = user();
    withState(u);
    const dir = join(u.root, HOSTILE_DIR);
    mkdirSync(dir);
    const token = join(dir, "t.token");
    writeFileSync(token, "tok-hostile-dir-0a1b2c3d4e5f6a7b\n", { mode: 0o600 });
    const gw = await startListener(fixtureCommand("echo"), {
      stateDir: u.stateDir,
      args: ["--listen-token-file", token],
    });
    cleanup.push(() => gw.close());
    expect(gw.stderr()).toContain(`(bearer token in ${safeText(token)})`);
    expect(gw.stderr()).not.toMatch(RAW);
    const status = await runCli(["status"], { stateDir: u.stateDir });
    expect(status.stdout).toContain(safeText(token));
    expect(status.stdout).not.toMatch(RAW);
    const json = await runCli(["status", "--json"], { stateDir: u.stateDir });
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout).not.toMatch(RAW);
    expect(JSON.parse(json.stdout).listening[0].tokenFile).toBe(token);

    // a configuration's listenTokenFile set aside by --no-auth: the line names the file escaped
    const config = writeConfig(dir, {
      aside: {
        command: fixtureCommand("echo")[0],
        args: fixtureCommand("echo").slice(1),
        listen: "127.0.0.1:0",
        listenTokenFile: token,
      },
    });
    const noAuth = await startListener([], {
      stateDir: u.stateDir,
      label: "aside",
      configFile: config,
      args: ["--no-auth"],
    });
    cleanup.push(() => noAuth.close());
    expect(noAuth.stderr()).toContain(
      `the listenTokenFile of "aside" in ${safeText(config)} is not used (--no-auth)`,
    );
    expect(noAuth.stderr()).not.toMatch(RAW);
  });
});
