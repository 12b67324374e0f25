// Starting and ending the vault holder (src/cli/unlock.ts, lock.ts, holderStart.ts and
// vaultHolder.ts, src/vault/holder.ts, src/vault/holderProcs.ts) with real processes: two unlocks
// at once, a holder whose socket path is taken, an unlock interrupted (Ctrl-C, SIGKILL) while its
// holder starts, a holder whose socket file is removed. After each, no process is left holding
// the opened secrets.
// test/fixtures/holder-gate.cjs holds a holder before it reads anything, until the test opens
// the gate: so "while the holder starts" is a state the test waits for, not a race it hopes for.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, NODE, REPO } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { storeSecret } from "./helpers.js";

const SECRET = "holder-start-value-5e2a91c7";
const GATE = join(REPO, "test", "fixtures", "holder-gate.cjs");

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** The pids of the live vault holder processes of a state directory, found by their arguments. */
function holderPids(stateDir: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
      // a zombie has exited: it holds nothing
      if (/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${name}/stat`, "utf8"))) continue;
    } catch {
      continue;
    }
    if (argv.includes("__vault-holder") && argv.includes(stateDir)) out.push(Number(name));
  }
  return out;
}

/** A state directory with one env-delivered secret; afterwards, no holder of it is left running. */
async function vaultWithSecret(): Promise<string> {
  const stateDir = newStateDir();
  cleanup.push(async () => {
    await runCli(["lock"], { stateDir });
    for (const pid of holderPids(stateDir)) process.kill(pid, "SIGKILL");
    removeDir(stateDir);
  });
  await storeSecret(stateDir, "api", SECRET, "--deliver", "env");
  return stateDir;
}

/** A closed gate: holders started with `env` wait (see holder-gate.cjs) until `open()`. */
function gate() {
  const dir = tempDir("portcullis-gate-");
  const path = join(dir, "open");
  const open = () => writeFileSync(path, "");
  cleanup.push(() => {
    open();
    removeDir(dir);
  });
  const waiting = () => readdirSync(dir).filter((n) => n.startsWith("open.waiting-")).length;
  return { env: { NODE_OPTIONS: `--require ${GATE}`, HOLDER_GATE: path }, open, waiting };
}

interface Running {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `portcullis unlock --for 10m`, left running. */
function startUnlock(stateDir: string, env: Record<string, string>): Running {
  const child = spawn(NODE, [CLI, "unlock", "--for", "10m"], {
    env: hostEnv({ PORTCULLIS_HOME: stateDir, ...env }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr?.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal })),
  );
  cleanup.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  return { child, stdout: () => stdout, stderr: () => stderr, exit };
}

describe("starting and ending the vault holder", () => {
  it("two unlocks at once: the second waits its turn; exactly one holder; lock ends it", async () => {
    const stateDir = await vaultWithSecret();
    const g = gate();
    const env = { ...passphraseEnv(), ...g.env };
    const first = startUnlock(stateDir, env);
    await waitFor(() => g.waiting() === 1, 10_000, "the first unlock's holder to be starting");
    const second = startUnlock(stateDir, env);
    // the second either waits for the first or (unserialised) starts a holder of its own
    await waitFor(
      () => second.stderr().includes("waiting for another vault command") || g.waiting() > 1,
      10_000,
      "the second unlock to wait or start",
    );
    g.open();
    const [a, b] = [await first.exit, await second.exit];
    expect(a.code, first.stderr()).toBe(0);
    expect(b.code, second.stderr()).toBe(0);
    expect(first.stdout()).toContain("vault unlocked until");
    expect(second.stdout()).toContain("vault unlocked until");
    // the first's holder was replaced (locked by the second) and exits
    await waitFor(() => holderPids(stateDir).length === 1, 10_000, "exactly one holder");
    expect(JSON.parse((await runCli(["vault", "list", "--json"], { stateDir })).stdout).unlocked).toBe(true);
    const lock = await runCli(["lock"], { stateDir });
    expect(lock.stdout).toContain("vault locked");
    await waitFor(() => holderPids(stateDir).length === 0, 10_000, "no holder after lock");
    expect(existsSync(join(stateDir, "vault.sock"))).toBe(false);
    expect(readdirSync(stateDir).filter((n) => n.startsWith("vault-"))).toEqual([]);
  });

  it("a holder whose socket path is taken says so and exits at once; the running holder keeps it", async () => {
    const stateDir = await vaultWithSecret();
    const unlock = await runCli(["unlock", "--for", "10m"], { stateDir, env: passphraseEnv() });
    expect(unlock.code, unlock.stderr).toBe(0);
    const running = holderPids(stateDir);
    expect(running).toHaveLength(1);
    const until = new Date(Date.now() + 600_000).toISOString();
    const late = spawn(NODE, [CLI, "__vault-holder", "--state-dir", stateDir, "--until", until], {
      env: hostEnv(),
      stdio: ["pipe", "pipe", "ignore"],
    });
    cleanup.push(() => {
      if (late.exitCode === null && late.signalCode === null) late.kill("SIGKILL");
    });
    let said = "";
    late.stdout.on("data", (c: Buffer) => {
      said += c.toString();
    });
    const exited = new Promise<number | null>((resolve) => late.on("close", (code) => resolve(code)));
    late.stdin.end(
      JSON.stringify({ secrets: { api: { value: SECRET, deliver: "env", hosts: [] } }, ca: null }),
    );
    let code: number | null | undefined;
    void exited.then((c) => {
      code = c;
    });
    // it ends by itself (before, it lived on with the secret until --until)
    await waitFor(() => code !== undefined, 10_000, "the second holder to exit");
    expect(code).toBe(2);
    expect(said).toMatch(/^failed: another process holds the vault holder's socket /);
    expect(said).not.toContain(SECRET);
    // the running holder's socket was not taken from it
    expect(holderPids(stateDir)).toEqual(running);
    expect(JSON.parse((await runCli(["vault", "list", "--json"], { stateDir })).stdout).unlocked).toBe(true);
    expect((await runCli(["lock"], { stateDir })).stdout).toContain("vault locked");
    await waitFor(() => holderPids(stateDir).length === 0, 10_000, "no holder after lock");
  });

  it("Ctrl-C (SIGINT) of an unlock while its holder starts leaves no holder", async () => {
    const stateDir = await vaultWithSecret();
    const g = gate();
    const unlock = startUnlock(stateDir, { ...passphraseEnv(), ...g.env });
    await waitFor(() => g.waiting() === 1, 10_000, "the holder to be starting");
    unlock.child.kill("SIGINT");
    const r = await unlock.exit;
    // were it still alive, the holder would go on to listen now
    g.open();
    await waitFor(() => holderPids(stateDir).length === 0, 10_000, "no holder after the Ctrl-C");
    expect(r.code).toBe(130);
    expect(unlock.stdout()).not.toContain("vault unlocked");
    expect(existsSync(join(stateDir, "vault.sock"))).toBe(false);
    expect(JSON.parse((await runCli(["vault", "list", "--json"], { stateDir })).stdout).unlocked).toBe(false);
  });

  it("lock ends a holder no socket leads to (its unlock was killed while it started); unlock works after", async () => {
    const stateDir = await vaultWithSecret();
    const g = gate();
    const unlock = startUnlock(stateDir, { ...passphraseEnv(), ...g.env });
    await waitFor(() => g.waiting() === 1, 10_000, "the holder to be starting");
    // SIGKILL: the unlock can clean nothing up; its holder and its unlock lock stay behind
    unlock.child.kill("SIGKILL");
    await unlock.exit;
    expect(holderPids(stateDir)).toHaveLength(1);
    const lock = await runCli(["lock"], { stateDir });
    expect(lock.code).toBe(0);
    expect(lock.stdout).toContain("vault locked: ended 1 vault holder process that no gateway could reach");
    await waitFor(() => holderPids(stateDir).length === 0, 10_000, "no holder after lock");
    // the killed unlock's lock does not stop the next one
    g.open();
    const again = await runCli(["unlock", "--for", "10m"], { stateDir, env: passphraseEnv() });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).not.toContain("waiting for another");
    expect(holderPids(stateDir)).toHaveLength(1);
    expect((await runCli(["lock"], { stateDir })).stdout).toBe("vault locked\n");
    await waitFor(() => holderPids(stateDir).length === 0, 10_000, "no holder after lock");
  });

  it("a holder whose socket file is removed locks itself", async () => {
    const stateDir = await vaultWithSecret();
    const unlock = await runCli(["unlock", "--for", "10m"], { stateDir, env: passphraseEnv() });
    expect(unlock.code, unlock.stderr).toBe(0);
    expect(holderPids(stateDir)).toHaveLength(1);
    rmSync(join(stateDir, "vault.sock"));
    await waitFor(() => holderPids(stateDir).length === 0, 10_000, "the unreachable holder to stop");
    expect(readdirSync(stateDir).filter((n) => n.startsWith("vault-"))).toEqual([]);
  });
});
