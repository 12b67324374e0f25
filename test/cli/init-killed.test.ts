// `portcullis init` killed with SIGKILL, which no handler sees (test/cli/init-atomic.test.ts covers
// SIGTERM, which init catches to take its keyring back). Whatever point it is killed at, the state
// directory is left so that a later `init` completes cleanly, or refuses with one sentence that
// says what to do, and never with a half-written keyring that later commands would take: a
// keyring.json is there whole (every key in it opens with the passphrase) or not at all
// (docs/security.md, "Signed decisions", "An init killed before its pin": "init writes
// keyring.json, then the pin; killed in between, it leaves a keyring with no pin, and the
// trust-on-first-pin window above is open until the first approve/deny pins the key").
//
// The real CLI, as separate processes. The kill points are found without timing guesses:
//  1. reading the passphrase: PORTCULLIS_PASSPHRASE_FILE is a FIFO (init reads pipes), so init
//     blocks there until the test writes; the test knows init holds it open for reading when its
//     own non-blocking open for writing succeeds (it fails with ENXIO while there is no reader);
//  2. the store made, no keyring yet: killed as soon as portcullis.db appears, while init derives
//     the keyring's key with the real scrypt parameters (a few hundred ms, as the SIGTERM test
//     uses it); the test then checks the kill landed there (no keyring.json);
//  3. the keyring written, its approver key not pinned: killed as soon as keyring.json appears,
//     while init derives the key again for the pin; the test checks no record is in the chain.
// After each: no init process is left, then what later commands do.
//
// What it would catch being removed: the "keyring exists" refusal (point 3: a second init would
// overwrite a keyring whose passphrase the user knows; checked on a copy of the build, where the
// second init then exits 0 and the test fails); a store left by an interrupted init making the
// next init refuse, or init writing the keyring before the store (point 2: init must complete,
// and no keyring may be found once it is killed there); a `run` that starts a gateway, or an
// audit read, on a directory with a store and no keyring (point 2); and the first approve not
// pinning the keyring an init left unpinned (point 3: the decision and the pin in the chain).
// The check that a keyring left behind is whole (it parses, every key opens) would find a
// keyring written in place instead of through a temporary file and a link only when the kill
// lands inside that write, which no hook here can force: it guards, it does not prove.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { closeSync, constants, existsSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openRecords } from "../../src/audit/index.js";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore } from "../../src/store/db.js";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { alive, sleep, tempDir, waitFor } from "../helpers/files.js";
import { type CliResult, hostEnv, runCli, startInventory } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** `portcullis init` on `stateDir`, with the real key derivation, its passphrase from `passphraseFile`. */
function startInit(stateDir: string, passphraseFile?: string) {
  const env = hostEnv({
    ...passphraseEnv(),
    ...(passphraseFile ? { PORTCULLIS_PASSPHRASE_FILE: passphraseFile } : {}),
    PORTCULLIS_HOME: stateDir,
    PORTCULLIS_INSECURE_TEST_KDF: "0",
  });
  const child = spawn(NODE, [CLI, "init"], { env, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal })),
  );
  cleanup.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
  });
  return { child, exited, stderr: () => stderr };
}

async function killed(init: { child: ChildProcess; exited: Promise<{ signal: NodeJS.Signals | null }> }) {
  const pid = init.child.pid!;
  init.child.kill("SIGKILL");
  expect((await init.exited).signal).toBe("SIGKILL");
  expect(alive(pid)).toBe(false);
}

/** Polls (2 ms) until `path` exists, while the process runs; true when it appeared. */
async function appears(path: string, init: { child: ChildProcess }): Promise<boolean> {
  for (let i = 0; i < 5000; i++) {
    if (existsSync(path)) return true;
    if (init.child.exitCode !== null) return existsSync(path);
    await sleep(2);
  }
  return false;
}

/** A second init, as a user would run it (cheap test key derivation, the test passphrase). */
const initAgain = (stateDir: string): Promise<CliResult> =>
  runCli(["init"], { stateDir, env: passphraseEnv() });

/** The records in the store's audit chain, by header type; [] when there is no store. */
function chainTypes(stateDir: string): string[] {
  if (!existsSync(join(stateDir, "portcullis.db"))) return [];
  const db = openStore(stateDir);
  try {
    return (db.prepare("SELECT record FROM audit_records ORDER BY seq").pluck().all() as Buffer[]).map(
      (r) => /"type":"([a-z_]+)"/.exec(r.toString("latin1", 0, r.indexOf(0x0a)))![1]!,
    );
  } finally {
    db.close();
  }
}

/** init completed: it says the key is pinned, and the chain verifies with the pin in it. */
async function expectInitialised(stateDir: string, r: CliResult): Promise<void> {
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toMatch(/pinned in the audit chain/);
  const verify = await runCli(["audit", "verify", "--json"], { stateDir });
  expect(verify.code, verify.stderr).toBe(0);
  expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true });
  expect(chainTypes(stateDir)).toContain("approver_key_pinned");
  await expect(unlockKeyring(stateDir, TEST_PASSPHRASE)).resolves.toBeDefined();
}

/** The sentence a command says on a state directory with no keyring: set it up with init. */
function expectNoKeyringSentence(r: CliResult, stateDir: string): void {
  expect(r.code).toBe(2);
  expect(r.stderr).toContain(`no keyring in ${stateDir}; set it up first`);
  expect(r.stderr).toMatch(/with: portcullis init\b/);
  expect(r.stderr).not.toMatch(/internal error| {4}at /);
}

describe("portcullis init killed with SIGKILL", () => {
  it("while it reads the passphrase: nothing is left that stops the next init", async () => {
    const stateDir = join(tempDir(), "state");
    const fifo = join(tempDir(), "passphrase.fifo");
    expect(spawnSync("mkfifo", ["-m", "600", fifo]).status).toBe(0);
    const init = startInit(stateDir, fifo);
    // init holds the FIFO open for reading once a non-blocking open for writing succeeds
    const writer = await waitFor(
      () => {
        try {
          return openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK) + 1;
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === "ENXIO" && init.child.exitCode === null) return 0;
          throw new Error(`init did not wait for its passphrase: ${String(e)}\n${init.stderr()}`);
        }
      },
      20_000,
      "init to read its passphrase",
    );
    try {
      await killed(init);
    } finally {
      closeSync(writer - 1);
    }
    expect(existsSync(join(stateDir, "keyring.json"))).toBe(false);
    await expectInitialised(stateDir, await initAgain(stateDir));
  });

  it("after it made the store, before the keyring: later commands say to run init, and init completes", async () => {
    const stateDir = join(tempDir(), "state");
    const init = startInit(stateDir);
    expect(await appears(join(stateDir, "portcullis.db"), init), init.stderr()).toBe(true);
    await killed(init);
    // it landed before the keyring (the key derivation takes hundreds of ms)
    expect(existsSync(join(stateDir, "keyring.json"))).toBe(false);

    // a gateway is not started on it, nor is the audit read: each says what to do
    const run = await runCli(["run", "--label", "inventory", "--", NODE, "-e", ""], { stateDir });
    expectNoKeyringSentence(run, stateDir);
    const audit = await runCli(["audit", "sessions", "--json"], { stateDir, env: passphraseEnv() });
    expectNoKeyringSentence(audit, stateDir);

    await expectInitialised(stateDir, await initAgain(stateDir));
    expect(chainTypes(stateDir)).toEqual(["approver_key_pinned"]);
  });

  it("after it wrote the keyring, before the pin: the keyring is whole, init refuses saying what to do, and the first approve pins it", async () => {
    const stateDir = join(tempDir(), "state");
    const keyring = join(stateDir, "keyring.json");
    const init = startInit(stateDir);
    expect(await appears(keyring, init), init.stderr()).toBe(true);
    await killed(init);
    // it landed before the pin (init derives the key again to write it)
    expect(chainTypes(stateDir)).toEqual([]);

    // whole, not half: it parses and every key in it opens with the passphrase
    const bytes = readFileSync(keyring);
    const parsed = JSON.parse(bytes.toString("utf8")) as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual(expect.arrayContaining(["kdf", "dataKey", "audit", "approver"]));
    const opened = await unlockKeyring(stateDir, TEST_PASSPHRASE);
    expect(opened.auditPrivateKey).toBeDefined();

    // a second init does not overwrite it, and says in one sentence what to do instead
    const again = await initAgain(stateDir);
    expect(again.code).toBe(2);
    const said = again.stderr.replace(/^.*cheap key derivation.*\n/m, "").trim();
    expect(said.split("\n"), again.stderr).toHaveLength(1);
    expect(said).toMatch(
      /a keyring already exists at .*keyring\.json; portcullis init never overwrites it: this state directory is set up \(its passphrase unlocks it\), or give another one with --state-dir or PORTCULLIS_HOME/,
    );
    expect(readFileSync(keyring).equals(bytes)).toBe(true);

    // the documented window closes at the first approve: it pins the key, and its decision counts
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval", "session", "--approval-timeout", "60000"], {
      stateDir,
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const call = gw.client.callTool({ name: "read_status", arguments: {} });
    const { request } = await nextStoredRequest(stateDir);
    await decideByCli(stateDir, "approve", request, "--for", "session");
    expect((await call).isError).toBeFalsy();
    expect(project.records().map((r) => r.tool)).toEqual(["read_status"]);
    const types = chainTypes(stateDir);
    expect(types.indexOf("approver_key_pinned")).toBeGreaterThanOrEqual(0);
    expect(types.indexOf("approver_key_pinned")).toBeLessThan(types.indexOf("approval_granted"));
    const db = openStore(stateDir);
    try {
      const events = [...openRecords(db, opened.auditPrivateKey)].map((r) => r.event.type);
      expect(events.filter((t) => t === "approver_key_pinned")).toHaveLength(1);
    } finally {
      db.close();
    }
  });
});
