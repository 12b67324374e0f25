// The vault: secrets stored sealed (`vault set|list|rm`), released only while unlocked
// (`unlock`/`lock`, one holder process per state directory), and step 6 of the decision
// order in a real gateway: vault_locked, credential_missing, env delivery at spawn.
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { askHolder } from "../../src/vault/holder.js";
import { pending } from "../helpers/approvals.js";
import { waitForAuditEvents } from "../helpers/auditWait.js";
import { removeDir, sleep, tempDir, waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { NODE, REPO } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { everyFile, storeSecret } from "./helpers.js";

const SECRET = "vault-test-value-7c41d09b";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** `portcullis vault set NAME… --from-stdin` with `input` as the value. */
function vaultSet(stateDir: string, env: Record<string, string>, args: string[], input = "v") {
  return runCli(["vault", "set", ...args, "--from-stdin"], { stateDir, env, input });
}

function lockAfter(stateDir: string) {
  cleanup.push(async () => {
    await runCli(["lock"], { stateDir });
  });
}

describe("portcullis vault set | list | rm", () => {
  it("stores a value sealed, lists names only, rotates, removes; never prints the value", async () => {
    const stateDir = newStateDir();
    const env = passphraseEnv();
    const set = await vaultSet(stateDir, env, ["api-staging", "--deliver", "env"], `${SECRET}\n`);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toContain("secret api-staging stored");
    const again = await vaultSet(stateDir, env, ["api-staging", "--deliver", "env"], `${SECRET}-2`);
    expect(again.stdout).toContain("rotated");
    const list = await runCli(["vault", "list", "--json"], { stateDir });
    expect(list.code).toBe(0);
    const listed = JSON.parse(list.stdout);
    expect(listed.unlocked).toBe(false);
    expect(listed.secrets.map((s: { name: string }) => s.name)).toEqual(["api-staging"]);
    expect(listed.secrets[0].rotatedAt).not.toBeNull();
    const text = await runCli(["vault", "list"], { stateDir });
    for (const out of [set, again, list, text]) expect(out.stdout + out.stderr).not.toContain(SECRET);
    for (const f of everyFile(stateDir)) expect(f.text, f.path).not.toContain(SECRET);
    const rm = await runCli(["vault", "rm", "api-staging"], { stateDir, env });
    expect(rm.code).toBe(0);
    expect(JSON.parse((await runCli(["vault", "list", "--json"], { stateDir })).stdout).secrets).toEqual([]);
    const gone = await runCli(["vault", "rm", "api-staging"], { stateDir, env });
    expect(gone.code).toBe(2);
    expect(gone.stderr).toContain("no secret by that name");
  });

  it("binds how a secret may be handed out when it is stored; an SQL edit of that policy opens nothing", async () => {
    const stateDir = newStateDir();
    const env = passphraseEnv();
    lockAfter(stateDir);
    const hosts = ["--host", "API.example.com:443", "--host", "api2.example.com"];
    const http = await vaultSet(stateDir, env, ["api", ...hosts], SECRET);
    expect(http.code, http.stderr).toBe(0);
    const listed = JSON.parse((await runCli(["vault", "list", "--json"], { stateDir })).stdout).secrets;
    expect(listed[0]).toMatchObject({
      name: "api",
      deliver: "http",
      hosts: ["api.example.com:443", "api2.example.com"],
    });
    const noHost = await vaultSet(stateDir, env, ["b"]);
    expect(noHost.code).toBe(2);
    expect(noHost.stderr).toContain("--host");
    // a destination no request can have is refused, not stored to be never released
    const badPort = await vaultSet(stateDir, env, ["c", "--host", "a.example", "--host", "b.example:99999"]);
    expect(badPort.code).toBe(2);
    expect(badPort.stderr).toContain("--host number 2 has a port outside 1-65535");
    const dotted = await vaultSet(stateDir, env, ["d", "--host", "Dotted.Example."]);
    expect(dotted.code, dotted.stderr).toBe(0);
    const stored = JSON.parse((await runCli(["vault", "list", "--json"], { stateDir })).stdout).secrets;
    expect(stored.find((x: { name: string }) => x.name === "d").hosts).toEqual(["dotted.example"]);
    // a same-user process turns the HTTP-only secret into an env one with SQL: unlock refuses it
    const db = new Database(join(stateDir, "portcullis.db"));
    db.prepare("UPDATE vault_secrets SET deliver = 'env', hosts_json = '[]' WHERE name = 'api'").run();
    db.close();
    const unlock = await runCli(["unlock"], { stateDir, env });
    expect(unlock.code).toBe(2);
    expect(unlock.stderr).toContain("does not open");
    expect(existsSync(join(stateDir, "vault.sock"))).toBe(false);
  });

  it("refuses bad input with one sentence and stores nothing", async () => {
    const stateDir = newStateDir();
    const env = passphraseEnv();
    const empty = await vaultSet(stateDir, env, ["x", "--deliver", "env"], "");
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain("the value is empty");
    // bytes that are not UTF-8 (a binary key piped in): refused, not stored with U+FFFD in their place
    const binary = await runCli(["vault", "set", "x", "--deliver", "env", "--from-stdin"], {
      stateDir,
      env,
      input: Buffer.from([0x73, 0x6b, 0x2d, 0xff, 0xfe, 0x80, 0x41, 0x42, 0x43, 0x44]),
    });
    expect(binary.code).toBe(2);
    expect(binary.stderr).toContain("standard input is not UTF-8 text");
    const badName = await vaultSet(stateDir, env, ["../etc", "--deliver", "env"]);
    expect(badName.code).toBe(2);
    expect(badName.stderr).toContain("is not a secret name (it does not start with a letter or digit");
    expect(badName.stderr).not.toContain("../etc");
    // the value typed where the name goes: described, never printed back, by set and by rm
    const value = "sk_live_Zq7+w/9Xv41=";
    for (const args of [
      ["vault", "set", value, "--from-stdin", "--deliver", "env"],
      ["vault", "rm", value],
    ]) {
      const r = await runCli(args, { stateDir, env, input: "v" });
      expect(r.code, args[1]).toBe(2);
      expect(r.stderr, args[1]).toContain("it holds 3 characters other than letters, digits");
      expect(r.stdout + r.stderr, args[1]).not.toContain("Zq7");
    }
    const noTerminal = await runCli(["vault", "set", "x", "--deliver", "env"], { stateDir, env });
    expect(noTerminal.code).toBe(2);
    expect(noTerminal.stderr).toContain("--from-stdin");
    // a directory of its own: beside the state directory was the shared temporary directory
    // itself, where a file left by an earlier run (or another user) kept its mode
    const wrongPass = join(tempDir("portcullis-wrong-pass-"), "passphrase");
    writeFileSync(wrongPass, "not the passphrase\n", { mode: 0o600 });
    const wrong = await vaultSet(stateDir, { ...env, PORTCULLIS_PASSPHRASE_FILE: wrongPass }, [
      "x",
      "--deliver",
      "env",
    ]);
    expect(wrong.code).toBe(1);
    expect(JSON.parse((await runCli(["vault", "list", "--json"], { stateDir })).stdout).secrets).toEqual([]);
    const badFor = await runCli(["unlock", "--for", "forever"], { stateDir, env });
    expect(badFor.code).toBe(2);
    expect(badFor.stderr).toContain("--for takes a duration");
    expect(badFor.stderr).not.toContain("forever");
  });
});

describe("portcullis unlock | lock", () => {
  it("a state directory too long for a Unix socket is refused with a sentence naming it", async () => {
    const base = newStateDir();
    const stateDir = join(base, "x".repeat(120));
    mkdirSync(stateDir, { mode: 0o700 });
    copyFileSync(join(base, "keyring.json"), join(stateDir, "keyring.json"));
    const env = passphraseEnv();
    const r = await runCli(["unlock"], { stateDir, env });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("too long for the vault holder's Unix socket");
  });

  it("one holder on a 0600 socket until --for runs out; lock stops it at once; both recorded", async () => {
    const stateDir = newStateDir();
    const env = passphraseEnv();
    lockAfter(stateDir);
    await storeSecret(stateDir, "api-staging", SECRET, "--deliver", "env");
    // The holder's socket and what `vault list` says while it runs, under a window no load can
    // outlast (a 2 s one ran out before a loaded machine started the list); lock: at once.
    const unlock = await runCli(["unlock", "--for", "10m"], { stateDir, env });
    expect(unlock.code, unlock.stderr).toBe(0);
    expect(unlock.stdout).toContain("1 secret");
    const sock = join(stateDir, "vault.sock");
    expect(statSync(sock).mode & 0o777).toBe(0o600);
    expect(JSON.parse((await runCli(["vault", "list", "--json"], { stateDir })).stdout).unlocked).toBe(true);
    const lock = await runCli(["lock"], { stateDir });
    expect(lock.stdout).toContain("vault locked");
    expect(existsSync(sock)).toBe(false);
    expect((await runCli(["lock"], { stateDir })).stdout).toContain("already locked");
    // expiry: the holder locks by itself and removes its socket
    expect((await runCli(["unlock", "--for", "2s"], { stateDir, env })).code).toBe(0);
    await waitFor(() => !existsSync(sock), 10_000, "the holder to expire");
    expect(JSON.parse((await runCli(["vault", "list", "--json"], { stateDir })).stdout).unlocked).toBe(false);
    // the audit chain names both (the type is in each record's clear header)
    const exported = (await runCli(["audit", "export"], { stateDir })).stdout;
    const types = exported
      .split("\n")
      .filter(Boolean)
      .map((l) => /"type":"([a-z_]+)"/.exec(l)?.[1]);
    expect(types.filter((t) => t === "vault_unlocked")).toHaveLength(2);
    expect(types.filter((t) => t === "vault_locked")).toHaveLength(2); // lock, then expired
    for (const f of everyFile(stateDir)) expect(f.text, f.path).not.toContain(SECRET);
  });
});

describe("the README's credential examples", () => {
  it("agree: what its 'vault set' lines store is delivered as its portcullis.json asks", async () => {
    const readme = readFileSync(join(REPO, "README.md"), "utf8");
    const example = /```json\n(\{\n\s*"servers": \{\n\s*"inventory-local"[\s\S]*?)```/.exec(readme)?.[1];
    expect(example, "README's portcullis.json example").toBeDefined();
    const dir = tempDir("portcullis-readme-");
    cleanup.push(() => removeDir(dir));
    writeFileSync(join(dir, "portcullis.json"), example!);
    const stateDir = newStateDir();
    const section = readme.slice(readme.indexOf("## Credentials from the vault"));
    const sets = [
      ...section
        .slice(0, section.indexOf("\n## "))
        .matchAll(/^portcullis vault set (\S+)((?: --[a-z-]+ \S+)*)/gm),
    ].map((m) => ({
      name: m[1]!,
      flags: m[2]!.trim().split(/\s+/).filter(Boolean),
    }));
    for (const { name, flags } of sets) await storeSecret(stateDir, name, `${SECRET}-${name}`, ...flags);
    const listed = JSON.parse((await runCli(["vault", "list", "--json"], { cwd: dir, stateDir })).stdout);
    const used = listed.secrets.flatMap((s: { name: string; usedBy: { mismatch?: string }[] }) =>
      s.usedBy.map((u) => ({ name: s.name, mismatch: u.mismatch ?? null })),
    );
    // every credential of the example is stored by one of its lines, and none for the other delivery
    const configured = Object.values(JSON.parse(example!).servers["inventory-local"].credentials).map((c) =>
      typeof c === "string" ? c : (c as { secret: string }).secret,
    );
    expect(used.map((u: { name: string }) => u.name).sort()).toEqual([...configured].sort());
    expect(used.filter((u: { mismatch: string | null }) => u.mismatch)).toEqual([]);
  });
});

describe("step 6 in a gateway: credentials from the vault", () => {
  /** The secret stored with `policy`, the vault unlocked (locked again after), the project's gateway listed. */
  async function unlockedGateway(project: ReturnType<typeof configured>, policy: string[]) {
    const stateDir = newStateDir();
    lockAfter(stateDir);
    await storeSecret(stateDir, "inventory-api-staging", SECRET, ...policy);
    expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
    const gw = await startGateway({ args: ["inventory"], cwd: project.dir, stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    return { stateDir, gw };
  }

  function configured(deliver?: "env" | { hosts: string[] }, extra: Record<string, unknown> = {}) {
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const credential =
      deliver === undefined
        ? "inventory-api-staging"
        : deliver === "env"
          ? { secret: "inventory-api-staging", deliver }
          : { secret: "inventory-api-staging", ...deliver };
    const config = {
      servers: {
        inventory: {
          command: NODE,
          args: ["dist/server.js"],
          // the server's own environment value is NOT what it gets: credentials come from the vault
          env: { ...project.env, INVENTORY_API_KEY: "from-the-config-env" },
          credentials: { INVENTORY_API_KEY: credential },
          approval: { default: "none" },
          ...extra,
        },
      },
    };
    writeFileSync(join(project.dir, "portcullis.json"), JSON.stringify(config, null, 2));
    return project;
  }

  it("locked: vault_locked; a secret removed while running: credential_missing naming it; lock stops the next call", async () => {
    const project = configured();
    const stateDir = newStateDir();
    const env = passphraseEnv();
    lockAfter(stateDir);
    // the scope must be in the vault when the gateway starts (checked at start, see leaks.test.ts)
    await storeSecret(stateDir, "inventory-api-staging", SECRET, "--deliver", "env");
    const gw = await startGateway({ args: ["inventory"], cwd: project.dir, stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const call = () => gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "a", delta: 1 } });
    await expect(call()).rejects.toMatchObject({ code: -32056, data: { error: "vault_locked" } });
    expect((await runCli(["vault", "rm", "inventory-api-staging"], { stateDir, env })).code).toBe(0);
    await storeSecret(stateDir, "other-scope", "x-other-value", "--deliver", "env");
    expect((await runCli(["unlock"], { stateDir, env })).code).toBe(0);
    await expect(call()).rejects.toMatchObject({
      code: -32059,
      data: { error: "credential_missing", scope: "inventory-api-staging" },
    });
    // a secret stored while unlocked reaches the holder at once, but not this server process: it
    // was spawned while the vault was locked and holds the placeholder (locked-at-spawn.test.ts)
    await storeSecret(stateDir, "inventory-api-staging", SECRET, "--deliver", "env");
    await expect(call()).rejects.toMatchObject({
      code: -32059,
      data: { error: "credential_missing", reason: expect.stringContaining("started without it") },
    });
    // a server started now gets it; lock stops the next call
    await gw.close();
    const again = await startGateway({ args: ["inventory"], cwd: project.dir, stateDir });
    cleanup.push(() => again.close());
    await again.client.listTools();
    const callAgain = () =>
      again.client.callTool({ name: "adjust_inventory", arguments: { sku: "a", delta: 1 } });
    expect((await callAgain()).isError).toBeFalsy();
    await runCli(["lock"], { stateDir });
    await expect(callAgain()).rejects.toMatchObject({ code: -32056 });
    // refused calls never reached the server: one call went through
    expect(project.records().filter((r) => r.tool === "adjust_inventory")).toHaveLength(1);
  });

  it("locked: a tool that needs a human is refused vault_locked before any approval is asked or intent recorded", async () => {
    const project = configured(undefined, { approval: { default: "per-call" } });
    const stateDir = newStateDir();
    await storeSecret(stateDir, "inventory-api-staging", SECRET, "--deliver", "env");
    const gw = await startGateway({ args: ["inventory"], cwd: project.dir, stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    // answered at once: a call asking a human first would wait out this timeout instead
    await expect(
      gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "a", delta: 1 } }, undefined, {
        timeout: 20_000,
      }),
    ).rejects.toMatchObject({ code: -32056, data: { error: "vault_locked" } });
    expect(await pending(stateDir)).toEqual([]);
    // the refusal's record is committed after the refusal was written: waited for, not read once
    const events = await waitForAuditEvents(
      stateDir,
      (all) => all.some((e) => e.type === "authorization_denied" && e.tool === "adjust_inventory"),
      "the refusal's authorization_denied",
    );
    const types = events.map((e) => e.type);
    expect(types).not.toContain("approval_requested");
    expect(types).not.toContain("tool_called");
    expect(project.records().filter((r) => r.tool === "adjust_inventory")).toHaveLength(0);
  });

  it("deliver env: the value is in the server's environment only when spawned unlocked, never in the state dir", async () => {
    const project = configured("env");
    const stateDir = newStateDir();
    const env = passphraseEnv();
    lockAfter(stateDir);
    await storeSecret(stateDir, "inventory-api-staging", SECRET, "--deliver", "env");
    expect((await runCli(["unlock"], { stateDir, env })).code).toBe(0);
    const gw = await startGateway({ args: ["inventory"], cwd: project.dir, stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const r = await gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "a", delta: 1 } });
    expect(r.isError).toBeFalsy();
    const expected = createHash("sha256").update(SECRET).digest("hex").slice(0, 12);
    expect(project.records().at(-1)?.credential).toBe(expected);
    await waitFor(() => /credentials in the environment of epoch/.test(gw.stderr()), 5000, "the status line");
    const status = await runCli(["status", "--json"], { stateDir });
    const exported = await runCli(["audit", "export"], { stateDir });
    for (const out of [gw.stderr(), status.stdout, exported.stdout]) expect(out).not.toContain(SECRET);
    await sleep(50);
    for (const f of everyFile(stateDir)) expect(f.text, f.path).not.toContain(SECRET);
  });

  it("an HTTP secret the vault releases to other hosts than the configuration's: run refuses at start, vault list warns, naming the hosts and both fixes", async () => {
    // Before, run started and every request to the configured host carried the placeholder,
    // said nowhere (the holder refuses a host its stored policy does not name).
    const KEY = "servers.inventory.credentials.INVENTORY_API_KEY";
    const project = configured({ hosts: ["127.0.0.1:18765", "api.example.com"] });
    const file = join(project.dir, "portcullis.json");
    const stateDir = newStateDir();
    await storeSecret(stateDir, "inventory-api-staging", SECRET, "--host", "api.example.com");
    const run = await runCli(["run", "inventory"], { cwd: project.dir, stateDir });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toBe(
      `portcullis run: the vault releases "inventory-api-staging" only to api.example.com, and ${KEY} in ${file} asks for it to be sent to 127.0.0.1:18765 too (requests there would carry the placeholder); keep only api.example.com in the hosts at ${KEY} in ${file}, or, to have it released there too, store it again for every host it may go to with 'portcullis vault set inventory-api-staging --host api.example.com --host 127.0.0.1:18765 --state-dir ${stateDir}'.\n`,
    );
    const list = await runCli(["vault", "list"], { cwd: project.dir, stateDir });
    expect(list.stdout).toContain(
      'warning: the vault releases "inventory-api-staging" only to api.example.com',
    );
    // stored again as the fix says: the same configuration starts (the vault is locked: the
    // start's check is of the stored policy, which needs no passphrase)
    await storeSecret(
      stateDir,
      "inventory-api-staging",
      SECRET,
      "--host",
      "api.example.com",
      "--host",
      "127.0.0.1:18765",
    );
    expect((await runCli(["vault", "list"], { cwd: project.dir, stateDir })).stdout).not.toContain(
      "warning:",
    );
    // a host without a port stands for 443 and 80; a vault narrowed to :443 covers it (plain HTTP
    // keeps the placeholder, as the narrowing meant), while one for another port does not
    const bare = configured({ hosts: ["api.example.com"] });
    await storeSecret(stateDir, "inventory-api-staging", SECRET, "--host", "api.example.com:443");
    expect((await runCli(["vault", "list"], { cwd: bare.dir, stateDir })).stdout).not.toContain("warning:");
    await storeSecret(stateDir, "inventory-api-staging", SECRET, "--host", "api.example.com:8443");
    expect((await runCli(["vault", "list"], { cwd: bare.dir, stateDir })).stdout).toContain(
      "asks for it to be sent to api.example.com too",
    );
  });

  it("a secret stored for the other delivery: run refuses at start, and vault list warns, naming the flag, the key and the file", async () => {
    const KEY = "servers.inventory.credentials.INVENTORY_API_KEY";
    // the string form asks for the environment; the secret was stored for HTTP delivery
    const project = configured();
    const file = join(project.dir, "portcullis.json");
    const stateDir = newStateDir();
    await storeSecret(stateDir, "inventory-api-staging", SECRET, "--host", "api.example.com");
    const run = await runCli(["run", "inventory"], { cwd: project.dir, stateDir });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`${KEY} in ${file} asks for the environment`);
    expect(run.stderr).toContain(
      `'portcullis vault set inventory-api-staging --deliver env --state-dir ${stateDir}'`,
    );
    expect(run.stderr).toContain(
      'the object form, with secret "inventory-api-staging" and hosts ["api.example.com"]',
    );
    const list = await runCli(["vault", "list"], { cwd: project.dir, stateDir });
    expect(list.stdout).toMatch(/warning: the vault stores "inventory-api-staging" for HTTP delivery only/);
    expect(list.stdout).toContain("--deliver env");
    const json = JSON.parse(
      (await runCli(["vault", "list", "--json"], { cwd: project.dir, stateDir })).stdout,
    );
    expect(json.secrets[0].usedBy[0].mismatch).toContain(`${KEY} in ${file}`);
    // the same file with a typo elsewhere does not load: said, never "no server uses it" and no
    // warning at all, as if nothing were wrong
    const typo = configured(undefined, { onChnage: "restart" });
    const typoFile = join(typo.dir, "portcullis.json");
    const unread = await runCli(["vault", "list"], { cwd: typo.dir, stateDir });
    expect(unread.code).toBe(0);
    expect(unread.stderr).toBe(
      `portcullis vault list: warning: ${typoFile}: servers.inventory.onChnage is not a known key (did you mean onChange?); who uses each secret, and any delivery mismatch, cannot be shown.\n`,
    );
    expect(unread.stdout).toContain("used by: not known (the portcullis.json found here does not load)");
    expect(unread.stdout).not.toContain("no server in the portcullis.json found here");
    // the object form asks for HTTP delivery; the secret was stored for the environment
    const other = configured({ hosts: ["api.example.com"] });
    const otherState = newStateDir();
    await storeSecret(otherState, "inventory-api-staging", SECRET, "--deliver", "env");
    const refused = await runCli(["run", "inventory"], { cwd: other.dir, stateDir: otherState });
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(
      `'portcullis vault set inventory-api-staging --host api.example.com --state-dir ${otherState}'`,
    );
    expect(refused.stderr).toContain(
      `writing ${KEY} in ${join(other.dir, "portcullis.json")} as "inventory-api-staging"`,
    );
    for (const out of [run, list, refused]) expect(out.stdout + out.stderr).not.toContain(SECRET);
  });

  it("stored again for HTTP while the gateway runs: the call's retry and the next spawn's line name the fix, not a lock", async () => {
    const KEY = "servers.inventory.credentials.INVENTORY_API_KEY";
    const project = configured(undefined, { onChange: "restart", identity: { include: ["dist/**"] } });
    const file = join(project.dir, "portcullis.json");
    const { stateDir, gw } = await unlockedGateway(project, ["--deliver", "env"]);
    // the unlocked holder learns the new policy at once
    await storeSecret(stateDir, "inventory-api-staging", SECRET, "--host", "api.example.com");
    await expect(
      gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "a", delta: 1 } }),
    ).rejects.toMatchObject({
      code: -32059,
      data: {
        scope: "inventory-api-staging",
        reason: expect.stringContaining("HTTP delivery only"),
        retry: expect.stringContaining(
          `'portcullis vault set inventory-api-staging --deliver env --state-dir ${stateDir}', or have it delivered over HTTP by writing ${KEY} in ${file}`,
        ),
      },
    });
    expect(project.records()).toHaveLength(0);
    // the next spawn (a rebuild, onChange restart) withholds it and says why, with the fix
    project.rebuild("B");
    await gw.waitForStderr(
      /HTTP delivery only.*the server started with a placeholder for it; store it for the environment with 'portcullis vault set inventory-api-staging --deliver env --state-dir /,
      15_000,
    );
    expect(gw.stderr()).not.toMatch(/vault locked/);
    expect(gw.stderr()).not.toContain(SECRET);
  });

  it("stored again for the environment while a gateway that delivers it over HTTP runs: the call is refused credential_missing naming the fix, and never runs", async () => {
    const project = configured({ hosts: ["api.example.com"] });
    const { stateDir, gw } = await unlockedGateway(project, ["--host", "api.example.com"]);
    // the unlocked holder learns the new policy at once: the proxy could never release it now
    await storeSecret(stateDir, "inventory-api-staging", SECRET, "--deliver", "env");
    await expect(
      gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "a", delta: 1 } }),
    ).rejects.toMatchObject({
      code: -32059,
      data: {
        error: "credential_missing",
        scope: "inventory-api-staging",
        reason: expect.stringContaining("environment delivery only"),
        retry: expect.stringContaining(
          `store it for HTTP with 'portcullis vault set inventory-api-staging --host api.example.com --state-dir ${stateDir}', or have the server take it from its environment by writing servers.inventory.credentials.INVENTORY_API_KEY`,
        ),
      },
    });
    expect(project.records()).toHaveLength(0);
    expect(gw.stderr()).not.toContain(SECRET);
  });

  it("a value with a NUL byte for env delivery: vault set refuses it; one in the holder anyway is withheld at spawn, never printed, and a call that needs it is refused", async () => {
    const project = configured("env");
    const stateDir = newStateDir();
    const env = passphraseEnv();
    lockAfter(stateDir);
    const withNul = `${SECRET}\u0000tail`;
    const refused = await vaultSet(stateDir, env, ["inventory-api-staging", "--deliver", "env"], withNul);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("holds a NUL byte");
    expect(refused.stdout + refused.stderr).not.toContain(SECRET);
    expect(JSON.parse((await runCli(["vault", "list", "--json"], { stateDir })).stdout).secrets).toEqual([]);
    // stored before vault set refused it, or put in the holder by another process of the user
    await storeSecret(stateDir, "inventory-api-staging", SECRET, "--deliver", "env");
    expect((await runCli(["unlock"], { stateDir, env })).code).toBe(0);
    const put = { op: "put", scope: "inventory-api-staging", deliver: "env", hosts: [], value: withNul };
    expect(await askHolder(stateDir, put)).toEqual({ ok: true });
    // spawn() would throw with the value in its message: the server starts with the placeholder
    const gw = await startGateway({ args: ["inventory"], cwd: project.dir, stateDir });
    cleanup.push(() => gw.close());
    await gw.waitForStderr(/holds a NUL byte, which no environment variable can carry/);
    await gw.client.listTools();
    // the server holds the placeholder: a call that needs the credential is refused, not run with it
    await expect(
      gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "a", delta: 1 } }),
    ).rejects.toMatchObject({
      code: -32059,
      data: {
        error: "credential_missing",
        scope: "inventory-api-staging",
        reason: expect.stringContaining("its value holds a NUL byte"),
        retry: expect.stringContaining("store it again without a NUL byte"),
      },
    });
    expect(project.records()).toHaveLength(0);
    expect(gw.stderr()).not.toContain(SECRET);
    expect(gw.stderr()).not.toMatch(/internal error/);
  });

  it("deliver env while locked: the server gets a placeholder, never the config's own value", async () => {
    const project = configured("env");
    const stateDir = newStateDir();
    await storeSecret(stateDir, "inventory-api-staging", SECRET, "--deliver", "env");
    const gw = await startGateway({ args: ["inventory"], cwd: project.dir, stateDir });
    cleanup.push(() => gw.close());
    await gw.waitForStderr(/started with placeholders/);
    await gw.client.listTools();
    await expect(
      gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "a", delta: 1 } }),
    ).rejects.toMatchObject({ code: -32056 });
  });
});
