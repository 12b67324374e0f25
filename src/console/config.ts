/**
 * The console's settings in portcullis.json: `"console": {"proofWindow": SECONDS}` (how long a
 * passphrase proof is held for decisions; 0 = every decision asks). Problems name the file and key.
 */
import { readFileSync } from "node:fs";
import { ConfigError } from "../config/config.js";

export const DEFAULT_PROOF_WINDOW_S = 300;
export const MAX_PROOF_WINDOW_S = 24 * 3600;

export interface ConsoleConfig {
  proofWindow?: number;
}

export function proofWindowProblem(n: unknown): string | null {
  return typeof n === "number" && Number.isInteger(n) && n >= 0 && n <= MAX_PROOF_WINDOW_S
    ? null
    : `must be a whole number of seconds from 0 to ${MAX_PROOF_WINDOW_S}`;
}

export function readConsoleConfig(file: string): ConsoleConfig {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new ConfigError(`${file}: cannot be read as JSON (${(e as Error).message}).`);
  }
  const block = (doc as Record<string, unknown> | null)?.console;
  if (block === undefined) return {};
  if (typeof block !== "object" || block === null || Array.isArray(block))
    throw new ConfigError(`${file}: console must be an object.`);
  const out: ConsoleConfig = {};
  for (const [k, v] of Object.entries(block)) {
    if (k !== "proofWindow")
      throw new ConfigError(`${file}: console.${k} is not a key (expected "proofWindow").`);
    const problem = proofWindowProblem(v);
    if (problem) throw new ConfigError(`${file}: console.proofWindow ${problem}.`);
    out.proofWindow = v as number;
  }
  return out;
}
