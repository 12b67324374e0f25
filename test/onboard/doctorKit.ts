// What the doctor tests on host entries share: a fake user's state directory made by init, host
// and portcullis.json files written, doctor's findings about one host file, and an entry started
// as its host would start it.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { newStateDir } from "../helpers/state.js";
import type { FakeUser } from "./hosts.js";

export interface Finding {
  ok: boolean;
  what: string;
  next: string;
}

/** The fake user's state directory, with a keyring and a store as `init` makes them. */
export function withState(u: FakeUser): void {
  mkdirSync(u.stateDir, { recursive: true, mode: 0o700 });
  const made = newStateDir();
  for (const f of ["keyring.json", "portcullis.db"]) copyFileSync(join(made, f), join(u.stateDir, f));
}

/** A host file holding `servers` under "mcpServers". */
export function writeServers(file: string, servers: Record<string, unknown>): string {
  writeFileSync(file, `${JSON.stringify({ mcpServers: servers }, null, 2)}\n`);
  return file;
}

/** A portcullis.json in `dir` holding `servers`. */
export function writeConfig(dir: string, servers: Record<string, unknown>): string {
  const file = join(dir, "portcullis.json");
  writeFileSync(file, `${JSON.stringify({ servers }, null, 2)}\n`);
  return file;
}

/** doctor --json's findings about one host file, and the text report. */
export async function doctorOf(u: FakeUser, file: string) {
  const json = await u.cli(["doctor", "--json"]);
  const text = await u.cli(["doctor"]);
  const findings = (JSON.parse(json.stdout).findings as Finding[]).filter((f) =>
    f.what.startsWith(`${file}: server`),
  );
  return { json, text, findings };
}

/** The entry started as the host starts it, with no input (and no PORTCULLIS_HOME of the test's): how it ends. */
export function started(entry: { command: string; args: string[] }, cwd: string) {
  return spawnSync(entry.command, entry.args, {
    cwd,
    input: "",
    encoding: "utf8",
    timeout: 30_000,
    env: { ...process.env, PORTCULLIS_HOME: "" },
  });
}

/**
 * None of `secrets` in any of `outputs`: not whole, not a part of it (characters 8 to 20), not the
 * start of its SHA-256 in hex or base64 (what a report that "only" hinted at a value would show).
 */
export function expectNoValue(outputs: readonly string[], secrets: readonly string[]): void {
  for (const secret of secrets) {
    const digest = createHash("sha256").update(secret).digest();
    const forms = [
      secret,
      secret.slice(8, 20),
      digest.toString("hex").slice(0, 8),
      digest.toString("base64").slice(0, 8),
    ];
    for (const out of outputs) for (const form of forms) expect(out).not.toContain(form);
  }
}
