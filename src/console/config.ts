/**
 * The console's settings in portcullis.json: `"console": {"proofWindow": SECONDS, "perCallProof":
 * "window" | "fresh"}` (how long a passphrase proof is held for decisions, 0 = every decision
 * asks; whether approving one call of a `per-call` tool may use that held proof). Checked with the
 * rest of the file by src/config/config.ts, so every command that loads it refuses a mistyped
 * section; read here alone by `portcullis console`, which needs no server entry to be valid.
 * Problems name the file and key.
 */
import {
  type ConsoleSection,
  checkTopLevel,
  parseConsoleSection,
  readConfigDocument,
} from "../config/config.js";

export {
  MAX_PROOF_WINDOW_S,
  PER_CALL_PROOF_VALUES,
  type PerCallProof,
  perCallProofProblem,
  proofWindowProblem,
} from "../config/config.js";

export const DEFAULT_PROOF_WINDOW_S = 300;

export type ConsoleConfig = ConsoleSection;

export function readConsoleConfig(file: string): ConsoleConfig {
  const doc = readConfigDocument(file);
  checkTopLevel(file, doc);
  return parseConsoleSection(file, doc.console);
}
