// Shared by the audit and keyring tests: temporary state directories with a keyring,
// and real child processes running the built code (dist/, made by `npm run build`).
import { type SpawnOptions, spawn } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { initKeyring } from "../../src/keyring/keyring.js";
import { removeAtFileEnd } from "../helpers/fileDirs.js";
import { REPO } from "../helpers/paths.js";

export { REPO };
export const CHILDREN = join(REPO, "test", "audit", "children");
export const PASSPHRASE = "correct horse battery staple";

// The cheap test key derivation (PORTCULLIS_INSECURE_TEST_KDF) is on for the whole suite
// (vitest.config.ts), in this process and in the children that inherit its environment.

/** A fresh state directory (removed after the file's tests). */
export function tempDir(prefix = "pc-audit-"): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  removeAtFileEnd(d);
  return d;
}

/** A fresh state directory with a keyring made with PASSPHRASE. */
export async function stateWithKeyring(): Promise<string> {
  const d = tempDir();
  await initKeyring(d, PASSPHRASE);
  return d;
}

/** A file whose first line is the passphrase, for PORTCULLIS_PASSPHRASE_FILE. */
export function passphraseFile(passphrase = PASSPHRASE): string {
  const f = join(tempDir("pc-pass-"), "passphrase");
  writeFileSync(f, `${passphrase}\n`, { mode: 0o600 });
  return f;
}

/** Fails clearly when the build the child processes import is missing. */
export function requireBuild(): void {
  for (const f of ["audit/index.js", "cli/audit.js", "cli/init.js", "store/db.js"]) {
    if (!existsSync(join(REPO, "dist", f)))
      throw new Error(`dist/${f} is missing: run \`npm run build\` first`);
  }
}

export interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `node script args…` to the end. */
export function runNode(
  script: string,
  args: string[],
  opts: SpawnOptions & { input?: string } = {},
): Promise<Ran> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ["pipe", "pipe", "pipe"], ...opts });
    let stdout = "";
    let stderr = "";
    child.stdout?.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    child.on("error", rej);
    child.on("close", (code, signal) => res({ code, signal, stdout, stderr }));
    // A child that exits before reading its input (a usage error) closes the pipe: not a failure.
    child.stdin?.on("error", () => {});
    child.stdin?.end(opts.input ?? "");
  });
}

/** Runs the built `portcullis init|audit …` (children/cli.mjs) against a state directory. */
export function cli(
  stateDir: string,
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<Ran> {
  return runNode(join(CHILDREN, "cli.mjs"), [stateDir, ...args], {
    env: { ...process.env, ...env },
    detached: true, // a session of its own: no controlling terminal
  });
}
