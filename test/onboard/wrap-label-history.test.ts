// A label the store's history holds for another server is not handed on without a word: a server
// wrapped, run through its gateway (its epochs and catalog revisions filed under its label) and
// unwrapped leaves that history behind, and a different server of the same key wrapped later
// gets the next free label, said. The real CLI in a fake home, the wrapped entry started as the
// host starts it.
import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseJsonc } from "jsonc-parser";
import { parse as parseToml } from "smol-toml";
import { describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { capture } from "../helpers/exitWithOutput.js";
import { waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { type FakeUser, fakeUsersOfEachTest, read } from "./hosts.js";

const user = fakeUsersOfEachTest();

// biome-ignore lint/suspicious/noExplicitAny: host documents are checked loosely
type Doc = any;

const labelOf = (entry: Doc): string => entry.args[entry.args.indexOf("--label") + 1];

/** Starts a wrapped entry as the host does, has it list its tools, and stops it. */
async function runOnce(u: FakeUser, entry: Doc): Promise<void> {
  const child = spawn(entry.command, entry.args, {
    cwd: entry.cwd ?? u.project,
    env: { ...(entry.env ?? {}), PORTCULLIS_CACHE_DIR: join(u.root, "cache") },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const { out, err, exited: end } = capture(child);
  // ended once its output is read to the end too: what it said before it exited is all there
  let ended = false;
  const exited = end.then(() => {
    ended = true;
  });
  const send = (m: object) => child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...m })}\n`);
  try {
    send({
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "host", version: "1" } },
    });
    send({ method: "notifications/initialized" });
    send({ id: 2, method: "tools/list", params: {} });
    await waitFor(() => out().includes('"id":2') || ended, 20_000, "the tools/list answer");
    expect(out(), `stderr:\n${err()}`).toContain('"id":2');
  } finally {
    child.kill();
    await exited;
  }
}

/**
 * A fake user whose store holds the history of `.mcp.json`'s "inventory" (the echo fixture) under
 * the label "inventory", wrapped, run once and unwrapped again; and a Codex configuration whose
 * "inventory" is another server (the catalog fixture).
 */
async function userWithHistory(withCwd = false, extraArgs: string[] = []): Promise<FakeUser> {
  const u = user();
  const cwd = withCwd ? { cwd: u.project } : {};
  writeFileSync(
    u.files["claude-code"],
    JSON.stringify(
      { mcpServers: { inventory: { command: NODE, args: [FIXTURES.echo, ...extraArgs], ...cwd } } },
      null,
      2,
    ),
  );
  writeFileSync(
    u.files.codex,
    `[mcp_servers.inventory]\ncommand = ${JSON.stringify(NODE)}\nargs = [${JSON.stringify(FIXTURES.catalog)}]\n`,
  );
  mkdirSync(u.stateDir, { recursive: true, mode: 0o700 });
  const template = newStateDir();
  for (const f of ["keyring.json", "portcullis.db"]) copyFileSync(join(template, f), join(u.stateDir, f));
  const wrap = await u.cli(["wrap", "claude-code"]);
  expect(wrap.code, wrap.stderr).toBe(0);
  const entry: Doc = parseJsonc(read(u.files["claude-code"])).mcpServers.inventory;
  expect(labelOf(entry)).toBe("inventory");
  await runOnce(u, entry);
  const store = openStore(u.stateDir);
  try {
    const n = store.prepare("SELECT count(*) AS n FROM epochs WHERE server_label = 'inventory'").get() as {
      n: number;
    };
    expect(n.n).toBeGreaterThan(0);
  } finally {
    store.close();
  }
  const unwrap = await u.cli(["unwrap", "claude-code"]);
  expect(unwrap.code, unwrap.stderr).toBe(0);
  return u;
}

describe("wrap and a label the store's history holds", () => {
  it("another server of the same key gets the next free label, said in the lines and in --json", async () => {
    const u = await userWithHistory();
    const listing = () => readdirSync(u.stateDir).sort();
    const before = listing();
    const dry = await u.cli(["wrap", "codex", "--dry-run", "--json"]);
    expect(dry.code, dry.stderr).toBe(0);
    // the store read, nothing left behind in the state directory (no -wal or -shm of the reading)
    expect(listing()).toEqual(before);
    const [file] = JSON.parse(dry.stdout).files;
    expect(file.labelHistory).toEqual([
      expect.objectContaining({ server: "inventory", label: "inventory-2", own: "inventory", chosen: false }),
    ]);
    expect(file.labelHistory[0].message).toContain("--label inventory=inventory");

    const wrap = await u.cli(["wrap", "codex"]);
    expect(wrap.code, wrap.stderr).toBe(0);
    const entry: Doc = (parseToml(read(u.files.codex)) as Doc).mcp_servers.inventory;
    expect(labelOf(entry)).toBe("inventory-2");
    expect(wrap.stdout).toContain(
      `inventory gets the label "inventory-2", not "inventory": the store's history`,
    );
    expect(wrap.stdout).toContain("another command, args or cwd");
    expect(wrap.stdout).toContain("then wrap again with --label inventory=inventory");

    // doctor says it for as long as the entry is wrapped, with the way back to its own label
    const doctor = await u.cli(["doctor", "--json"]);
    const findings = (
      JSON.parse(doctor.stdout) as { findings: { ok: boolean; what: string; next: string }[] }
    ).findings;
    const relabelled = findings.find((f) => f.what.startsWith(`${u.files.codex}: "inventory" runs under`));
    expect(relabelled).toMatchObject({
      ok: true,
      what: `${u.files.codex}: "inventory" runs under the label "inventory-2", not its own "inventory": when it was wrapped, the store's history under "inventory" (its epochs, catalog revisions, approvals and egress) was another server's, launched with another command, args or cwd`,
    });
    expect(relabelled?.next).toContain(
      "portcullis wrap codex --servers inventory --label inventory=inventory",
    );
    // the .mcp.json entry wrapped under its own label is not said to be relabelled
    expect(findings.filter((f) => f.what.includes("runs under the label"))).toHaveLength(1);
  });

  it("the same server wrapped again keeps its label, without a word", async () => {
    const u = await userWithHistory();
    const wrap = await u.cli(["wrap", "claude-code"]);
    expect(wrap.code, wrap.stderr).toBe(0);
    const entry: Doc = parseJsonc(read(u.files["claude-code"])).mcpServers.inventory;
    expect(labelOf(entry)).toBe("inventory");
    expect(wrap.stdout).not.toContain("history");
  });

  it("the same command and args with another env keep the label: the store keeps no env of the entry to compare (a decision, docs/onboarding.md)", async () => {
    const u = await userWithHistory();
    const value = "Zq9x8w7v6u5t4s3r2q1p-env-value";
    writeFileSync(
      u.files["claude-code"],
      JSON.stringify({
        mcpServers: { inventory: { command: NODE, args: [FIXTURES.echo], env: { MODE: value } } },
      }),
    );
    const wrap = await u.cli(["wrap", "claude-code"]);
    expect(wrap.code, wrap.stderr).toBe(0);
    expect(labelOf(parseJsonc(read(u.files["claude-code"])).mcpServers.inventory)).toBe("inventory");
    expect(wrap.stdout + wrap.stderr).not.toContain(value);
  });

  // The gateway files the launch command with its secrets redacted (`--api-key [redacted]`), never
  // the value: compared with the entry's own words, the same server read as another, and got
  // "inventory-2" with a sentence saying its history was another server's.
  it("the same server with a secret in its args, wrapped again, keeps its label, without a word", async () => {
    const u = await userWithHistory(false, ["--api-key", "sk-live-abcdef123456"]);
    const store = openStore(u.stateDir);
    try {
      const { record_json } = store
        .prepare("SELECT record_json FROM epochs WHERE server_label = 'inventory'")
        .get() as { record_json: string };
      expect(record_json).not.toContain("sk-live-abcdef123456");
    } finally {
      store.close();
    }
    const wrap = await u.cli(["wrap", "claude-code"]);
    expect(wrap.code, wrap.stderr).toBe(0);
    expect(labelOf(parseJsonc(read(u.files["claude-code"])).mcpServers.inventory)).toBe("inventory");
    expect(wrap.stdout).not.toContain("history");
  });

  it("--label KEY=LABEL keeps the label it names, with a warning", async () => {
    const u = await userWithHistory();
    const wrap = await u.cli(["wrap", "codex", "--label", "inventory=inventory"]);
    expect(wrap.code, wrap.stderr).toBe(0);
    const entry: Doc = (parseToml(read(u.files.codex)) as Doc).mcp_servers.inventory;
    expect(labelOf(entry)).toBe("inventory");
    expect(wrap.stdout).toContain(`warning: inventory takes the label "inventory", as --label asks, though`);
    const doctor = await u.cli(["doctor"]);
    expect(doctor.stdout).toContain(
      `${u.files.codex}: "inventory" runs under the label "inventory", as wrap's --label asked, though the store's history under "inventory"`,
    );
  });

  it("the same command in another working directory the entry names is another server", async () => {
    const u = await userWithHistory(true);
    const elsewhere = join(u.root, "elsewhere");
    mkdirSync(elsewhere);
    writeFileSync(
      u.files.codex,
      `[mcp_servers.inventory]\ncommand = ${JSON.stringify(NODE)}\nargs = [${JSON.stringify(FIXTURES.echo)}]\ncwd = ${JSON.stringify(elsewhere)}\n`,
    );
    const wrap = await u.cli(["wrap", "codex"]);
    expect(wrap.code, wrap.stderr).toBe(0);
    expect(labelOf((parseToml(read(u.files.codex)) as Doc).mcp_servers.inventory)).toBe("inventory-2");
    // the entry that ran it, wrapped again with its cwd, is the same server
    const again = await u.cli(["wrap", "claude-code"]);
    expect(again.code, again.stderr).toBe(0);
    expect(labelOf(parseJsonc(read(u.files["claude-code"])).mcpServers.inventory)).toBe("inventory");
    expect(again.stdout).not.toContain("history");
  });
});
