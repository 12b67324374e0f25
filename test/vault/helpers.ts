// What the vault tests share: storing a secret through the real CLI, reading every byte of a
// state directory, and a project around the vaulted fixture server (test/fixtures/servers/vaulted.mjs).
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { formsOf } from "../../src/vault/valueForms.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { NODE, REPO } from "../helpers/paths.js";
import { passphraseEnv } from "../helpers/state.js";

export const VAULTED = join(REPO, "test", "fixtures", "servers", "vaulted.mjs");

/** `portcullis vault set NAME --from-stdin POLICY…` with the test passphrase; it must succeed. */
export async function storeSecret(stateDir: string, name: string, value: string, ...policy: string[]) {
  const r = await runCli(["vault", "set", name, "--from-stdin", ...policy], {
    stateDir,
    env: passphraseEnv(),
    input: value,
  });
  expect(r.code, r.stderr).toBe(0);
}

/** Every byte of every file under dir, as latin1 text (so any byte sequence can be searched). */
export function everyFile(dir: string): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) out.push(...everyFile(p));
    else if (st.isFile()) out.push({ path: p, text: readFileSync(p).toString("latin1") });
  }
  return out;
}

/** A string as its UTF-8 bytes read back as latin1: how it would appear in everyFile's text. */
export function asBytes(s: string): string {
  return Buffer.from(s, "utf8").toString("latin1");
}

/**
 * A directory with a portcullis.json whose server `vaulted` runs the vaulted fixture, with the
 * given `credentials`, `tools` and `approval` (any other server keys in `extra`).
 */
export function vaultedProject(server: Record<string, unknown>): { dir: string; cleanup(): void } {
  const dir = tempDir("portcullis-vaulted-");
  const config = { servers: { vaulted: { command: NODE, args: [VAULTED], ...server } } };
  writeFileSync(join(dir, "portcullis.json"), JSON.stringify(config, null, 2));
  return { dir, cleanup: () => removeDir(dir) };
}

/** Any form of `value` (src/vault/scrub.ts formsOf), or any 8 characters of it as written, found in `text`. */
export function tracesOf(value: string, text: string): string[] {
  const found = formsOf(value).filter((f) => text.includes(f));
  for (let i = 0; i + 8 <= value.length; i++) {
    const piece = value.slice(i, i + 8);
    if (text.includes(piece)) found.push(piece);
  }
  return found;
}
