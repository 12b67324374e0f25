// A fresh state directory with a keyring, as `portcullis init` leaves it. One keyring is made
// per test process by the real `portcullis init` (cheap test KDF, passphrase from a file) and
// copied into each new state dir: the gateway only reads its public half.
import { spawnSync } from "node:child_process";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./files.js";
import { CLI, NODE } from "./paths.js";

export const TEST_PASSPHRASE = "correct horse battery staple";
const KEYRING = "keyring.json";
let template: string | null = null;

/** The env that lets a CLI child read TEST_PASSPHRASE without a terminal. */
export function passphraseEnv(): Record<string, string> {
  const file = join(tempDir("portcullis-pass-"), "passphrase");
  writeFileSync(file, `${TEST_PASSPHRASE}\n`, { mode: 0o600 });
  return { PORTCULLIS_PASSPHRASE_FILE: file, PORTCULLIS_INSECURE_TEST_KDF: "1" };
}

function keyringTemplate(): string {
  if (template) return template;
  const dir = tempDir("portcullis-keyring-");
  const r = spawnSync(NODE, [CLI, "init", "--state-dir", dir], {
    env: { ...process.env, ...passphraseEnv() },
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`portcullis init failed (${r.status}): ${r.stderr}`);
  template = readFileSync(join(dir, KEYRING), "utf8");
  return template;
}

/** A new temp state dir holding the test keyring. */
export function newStateDir(): string {
  const dir = tempDir("portcullis-state-");
  writeFileSync(join(dir, KEYRING), keyringTemplate(), { mode: 0o600 });
  chmodSync(dir, 0o700);
  return dir;
}
