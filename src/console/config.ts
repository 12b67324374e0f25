/**
 * The console's settings in portcullis.json: `"console": {"proofWindow": SECONDS}` (how long a
 * passphrase proof is held for decisions; 0 = every decision asks). Checked with the rest of the
 * file by src/config/config.ts, so every command that loads it refuses a mistyped section; read
 * here alone by `portcullis console`, which needs no server entry to be valid. Problems name the
 * file and key.
 */
import { checkTopLevel, parseConsoleSection, readConfigDocument } from "../config/config.js";

export { MAX_PROOF_WINDOW_S, proofWindowProblem } from "../config/config.js";

export const DEFAULT_PROOF_WINDOW_S = 300;

export interface ConsoleConfig {
  proofWindow?: number;
}

export function readConsoleConfig(file: string): ConsoleConfig {
  const doc = readConfigDocument(file);
  checkTopLevel(file, doc);
  return parseConsoleSection(file, doc.console);
}
