// What the kill tests of the vault commands share: a state directory with one secret stored and
// the vault unlocked, what the holder releases, the vault records of the chain, and a preload
// that stops a `vault rm` or `vault set` once the holder has answered it (a kill point made
// observable, not guessed).
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { openStore } from "../../src/store/db.js";
import { askHolder } from "../../src/vault/holder.js";
import { removeDir, tempDir } from "./files.js";
import { runCli } from "./gateway.js";
import { newStateDir, passphraseEnv } from "./state.js";

/**
 * A new state directory holding the env-delivered secret `name` = `value` (none when `name` is
 * null), unlocked for 10 minutes unless `unlock` is false; its lock and removal are handed to
 * `onCleanup`.
 */
export async function vaultWith(
  name: string | null,
  value: string,
  onCleanup: (c: () => Promise<void>) => void,
  unlock = true,
): Promise<string> {
  const stateDir = newStateDir();
  onCleanup(async () => {
    await runCli(["lock"], { stateDir });
    removeDir(stateDir);
  });
  if (name !== null) {
    const set = await runCli(["vault", "set", name, "--from-stdin", "--deliver", "env"], {
      stateDir,
      env: passphraseEnv(),
      input: value,
    });
    expect(set.code, set.stderr).toBe(0);
  }
  if (unlock) {
    const unlocked = await runCli(["unlock", "--for", "10m"], { stateDir, env: passphraseEnv() });
    expect(unlocked.code, unlocked.stderr).toBe(0);
  }
  return stateDir;
}

/** What the holder answers a gateway that asks for `scope` (null: no holder answers, or not that). */
export async function released(stateDir: string, scope: string): Promise<string | null> {
  const r = await askHolder(stateDir, { op: "release", scope });
  return r?.ok === true ? String(r.value) : null;
}

/** The header types of the chain's vault records, in order. */
export function vaultRecords(stateDir: string): string[] {
  const db = openStore(stateDir);
  try {
    return (db.prepare("SELECT record FROM audit_records ORDER BY seq").pluck().all() as Buffer[])
      .map((r) => /"type":"([a-z_]+)"/.exec(r.toString("latin1", 0, r.indexOf(0x0a)))![1]!)
      .filter((t) => t.startsWith("vault_"));
  } finally {
    db.close();
  }
}

/** The names of the secrets the store holds. */
export function storedNames(stateDir: string): string[] {
  const db = openStore(stateDir);
  try {
    return db.prepare("SELECT name FROM vault_secrets ORDER BY name").pluck().all() as string[];
  } finally {
    db.close();
  }
}

/**
 * A preload that holds a `portcullis vault SUB` once the holder answered it (as it closes that
 * connection), having written `GATE.waiting-PID`. It waits in Atomics.wait, so SIGKILL ends it
 * there. `env` goes to the command; `waiting()` is its pid once it waits.
 */
export function holderAnsweredGate(
  sub: "rm" | "set",
  onCleanup: (c: () => void) => void,
): { env: Record<string, string>; waiting(): number | null } {
  const dir = tempDir("portcullis-holder-gate-");
  onCleanup(() => removeDir(dir));
  const gate = join(dir, "open");
  const preload = join(dir, "gate.cjs");
  writeFileSync(
    preload,
    `const net = require("node:net");
const fs = require("node:fs");
const gate = process.env.HOLDER_ANSWERED_GATE;
const argv = process.argv.slice(2);
if (gate && argv[0] === "vault" && argv[1] === ${JSON.stringify(sub)}) {
  const connect = net.createConnection;
  net.createConnection = function (...args) {
    const socket = connect.apply(this, args);
    if (typeof args[0] === "string" && args[0].endsWith("vault.sock")) {
      let answered = false;
      socket.on("data", () => { answered = true; });
      const destroy = socket.destroy;
      socket.destroy = function (...a) {
        if (answered) {
          fs.writeFileSync(gate + ".waiting-" + process.pid, "");
          const nap = new Int32Array(new SharedArrayBuffer(4));
          while (!fs.existsSync(gate)) Atomics.wait(nap, 0, 0, 20);
        }
        return destroy.apply(this, a);
      };
    }
    return socket;
  };
}
`,
  );
  return {
    env: { NODE_OPTIONS: `--require ${preload}`, HOLDER_ANSWERED_GATE: gate },
    waiting: () => {
      const m = readdirSync(dir).find((n) => n.startsWith("open.waiting-"));
      return m ? Number(m.slice("open.waiting-".length)) : null;
    },
  };
}
