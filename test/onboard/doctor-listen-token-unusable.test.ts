// doctor and the other token-file problems that make `run --listen` refuse to start: a
// --listen-token-file or listenTokenFile that is missing, not a regular file, empty or with no
// token on its first line; and a listenTokenFile without listen. Each is reported naming the file
// and the entry or key, with the next step, and the same refusal is what the gateway gives.
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI, fixtureCommand, NODE } from "../helpers/paths.js";
import { expectNoValue, type Finding, started, withState, writeConfig, writeServers } from "./doctorKit.js";
import { fakeUsersOfEachTest } from "./hosts.js";

const user = fakeUsersOfEachTest();

// a token on the second line, after an empty first one: refused, and never shown
/** A control (ESC) or format (the right-to-left override) character, raw; not the newlines of JSON output */
const RAW = /(?!\n)[\p{Cc}\p{Cf}]/u;

const SECOND_LINE_TOKEN = "tok-second-line-7c1d9e3a5b2f4c6d";

describe("doctor and token files run --listen cannot use", () => {
  it("missing, a directory, a FIFO, empty, no token on line one, and listenTokenFile without listen: each a problem run agrees with", async () => {
    const u = user();
    withState(u);
    const missing = join(u.root, "missing.token");
    const dir = join(u.root, "dir.token");
    mkdirSync(dir);
    const fifo = join(u.root, "fifo.token");
    expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
    const empty = join(u.root, "empty.token");
    writeFileSync(empty, "", { mode: 0o600 });
    const secondLine = join(u.root, "second-line.token");
    writeFileSync(secondLine, `\n${SECOND_LINE_TOKEN}\n`, { mode: 0o600 });
    const good = join(u.root, "good.token");
    writeFileSync(good, "tok-good-0a1b2c3d4e5f6a7b8c9d\n", { mode: 0o600 });
    const [command, ...args] = fixtureCommand("echo");
    const configFile = writeConfig(u.project, {
      fromDir: { command, args, listen: "127.0.0.1:0", listenTokenFile: dir },
      unserved: { command, args, listenTokenFile: good },
    });
    const run = (...more: string[]) => ({
      command: NODE,
      args: [CLI, "run", "--state-dir", u.stateDir, ...more],
    });
    const flag = (file: string) =>
      run("--listen", "127.0.0.1:0", "--label", "echo", "--listen-token-file", file, "--", command, ...args);
    const entries = {
      missing: flag(missing),
      fifo: flag(fifo),
      empty: flag(empty),
      secondLine: flag(secondLine),
      good: flag(good),
      fromDir: run("fromDir"),
      unserved: run("unserved"),
    };
    const mcp = writeServers(u.files["claude-code"], entries);

    const json = await u.cli(["doctor", "--json"]);
    const text = await u.cli(["doctor"]);
    expect(json.code).toBe(1);
    const findings = (JSON.parse(json.stdout).findings as Finding[]).filter((f) => /token/i.test(f.what));
    const at = (key: string) => `${mcp}: server "${key}" (--listen-token-file)`;
    const unreadable = (where: string, file: string, why: string) => ({
      ok: false,
      what: `${where}: the listen token file ${file}: ${why}, so 'portcullis run --listen' refuses to start with it`,
      next: `put the token (at least 16 characters, no spaces) on the first line of the regular file ${file}, made yours alone (chmod 600), or name another file there`,
    });
    const noToken = "the first line must be a token of at least 16 characters without spaces";
    expect(findings).toEqual([
      {
        ok: false,
        what: `${mcp}: server "unserved"; ${configFile}: listenTokenFile of "unserved": listenTokenFile of "unserved" in ${configFile} needs listen (in the file, or run --listen HOST:PORT), so 'portcullis run' refuses to start`,
        next: `add "listen": "127.0.0.1:PORT" to that server in the file (or --listen HOST:PORT to the entry's run), or remove its listenTokenFile`,
      },
      unreadable(at("missing"), missing, "cannot read it: it does not exist; check the path (ENOENT)"),
      unreadable(at("fifo"), fifo, "it is not a regular file (a FIFO, socket or device)"),
      unreadable(at("empty"), empty, noToken),
      unreadable(at("secondLine"), secondLine, noToken),
      unreadable(
        `${mcp}: server "fromDir"; ${configFile}: listenTokenFile of "fromDir"`,
        dir,
        "cannot read it: it is a directory, not a file (EISDIR)",
      ),
    ]);
    for (const f of findings) expect(text.stdout).toContain(f.what.slice(0, 60));
    expectNoValue([json.stdout, json.stderr, text.stdout, text.stderr], [SECOND_LINE_TOKEN]);

    // what doctor says is what the gateway the host starts says: it refuses each (exit 2), for the same reason
    const reasons = {
      missing: "cannot read it: it does not exist; check the path (ENOENT)",
      fifo: "it is not a regular file (a FIFO, socket or device)",
      empty: noToken,
      secondLine: noToken,
      fromDir: "cannot read it: it is a directory, not a file (EISDIR)",
      unserved: "needs listen (in the file, or run --listen HOST:PORT)",
    };
    for (const [key, reason] of Object.entries(reasons)) {
      expect(findings.find((f) => f.what.includes(`server "${key}"`))!.what, key).toContain(reason);
      const gateway = started(entries[key as keyof typeof entries], u.project);
      expect(gateway.status, key).toBe(2);
      expect(gateway.stderr, key).toContain(reason);
      expect(gateway.stderr, key).not.toContain(SECOND_LINE_TOKEN);
    }
  });

  it("a token file path with an escape or a bidi override is shown escaped, in doctor --json too", async () => {
    const u = user();
    withState(u);
    const hostile = join(u.root, "a\u001b[2Jb\u202e.token");
    const [command, ...args] = fixtureCommand("echo");
    const entry = {
      command: NODE,
      args: [CLI, "run", "--state-dir", u.stateDir, "--listen", "127.0.0.1:0", "--label", "echo"].concat([
        "--listen-token-file",
        hostile,
        "--",
        command!,
        ...args,
      ]),
    };
    const mcp = writeServers(u.files["claude-code"], { hostile: entry });
    const json = await u.cli(["doctor", "--json"]);
    expect(json.stdout).not.toMatch(RAW);
    const finding = (JSON.parse(json.stdout).findings as Finding[]).find((f) =>
      f.what.startsWith(`${mcp}: server "hostile"`),
    );
    expect(finding?.what).toContain(
      `the listen token file ${join(u.root, "a\\u001b[2Jb\\u202e.token")}: cannot read it`,
    );
    expect(finding?.what).not.toMatch(RAW);
  });
});
