// A fresh state directory as `portcullis init` leaves it: its keyring and its store. One is made
// per test process by the real `portcullis init` (cheap test KDF, passphrase from a file) and
// copied into each new state dir: the gateway only reads the keyring's public half, and the
// store holds the schema and the approver key's pin, as after a user's own `init`. Copying the
// store spares each test's first gateway or command the store's creation (its migrations: about
// 50 ms of CPU, paid by hundreds of state directories in a run).
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./files.js";
import { CLI, NODE } from "./paths.js";

export const TEST_PASSPHRASE = "correct horse battery staple";
const KEYRING = "keyring.json";
const STORE = "portcullis.db";
// kept in memory: the directory init wrote is removed with the test file that made it
let template: { keyring: string; store: Buffer } | null = null;

/** The env that lets a CLI child read TEST_PASSPHRASE without a terminal. */
export function passphraseEnv(): Record<string, string> {
  const file = join(tempDir("portcullis-pass-"), "passphrase");
  writeFileSync(file, `${TEST_PASSPHRASE}\n`, { mode: 0o600 });
  return { PORTCULLIS_PASSPHRASE_FILE: file, PORTCULLIS_INSECURE_TEST_KDF: "1" };
}

function initTemplate(): { keyring: string; store: Buffer } {
  if (template) return template;
  const dir = tempDir("portcullis-keyring-");
  const r = spawnSync(NODE, [CLI, "init", "--state-dir", dir], {
    env: { ...process.env, ...passphraseEnv() },
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`portcullis init failed (${r.status}): ${r.stderr}`);
  // init closed its store: everything is in the main file, no write-ahead log is left to copy
  for (const side of ["-wal", "-shm"])
    if (existsSync(join(dir, STORE + side)))
      throw new Error(`portcullis init left ${STORE}${side} behind in ${dir}`);
  template = { keyring: readFileSync(join(dir, KEYRING), "utf8"), store: readFileSync(join(dir, STORE)) };
  return template;
}

/** A new temp state dir holding the test keyring and a store made by the same `init`. */
export function newStateDir(): string {
  const dir = newKeyringOnlyStateDir();
  writeFileSync(join(dir, STORE), initTemplate().store, { mode: 0o600 });
  return dir;
}

/**
 * A new temp state dir holding the test keyring and no store yet, as an `init` stopped before
 * it made one leaves it (the approver key is not pinned anywhere): for the tests of a store's
 * creation and of the first pin.
 */
export function newKeyringOnlyStateDir(): string {
  const dir = tempDir("portcullis-state-");
  writeFileSync(join(dir, KEYRING), initTemplate().keyring, { mode: 0o600 });
  chmodSync(dir, 0o700);
  return dir;
}
