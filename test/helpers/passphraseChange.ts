// What the tests of `portcullis passphrase` share: a passphrase file of this user's alone, the env
// of a command given a passphrase, the change itself as a real CLI process, keyring.json's text.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./files.js";
import { type CliResult, runCli } from "./gateway.js";
import { passphraseEnv } from "./state.js";

/** A file whose first line is `text`, this user's alone unless `mode` says otherwise. */
export function passphraseFile(text: string, mode = 0o600): string {
  const file = join(tempDir("portcullis-newpass-"), "passphrase");
  writeFileSync(file, `${text}\n`, { mode });
  return file;
}

/** The env of a command given `passphrase` (the test KDF). */
export function withPassphrase(passphrase: string): Record<string, string> {
  return { ...passphraseEnv(), PORTCULLIS_PASSPHRASE_FILE: passphraseFile(passphrase) };
}

/** `portcullis passphrase ...extra` from `from` to `to`, both from files. */
export function changeByCli(
  stateDir: string,
  from: string,
  to: string,
  extra: string[] = [],
  env: Record<string, string> = {},
): Promise<CliResult> {
  return runCli(["passphrase", ...extra], {
    stateDir,
    env: { ...withPassphrase(from), PORTCULLIS_NEW_PASSPHRASE_FILE: passphraseFile(to), ...env },
  });
}

/** keyring.json's text. */
export const keyringText = (stateDir: string): string => readFileSync(join(stateDir, "keyring.json"), "utf8");
