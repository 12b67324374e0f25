// A flag's value has one name in a command's --help: the usage line and the option list below it
// call it the same (console's usage said `--proof-window SECONDS` and its list `--proof-window S`,
// so a reader could not tell whether they were one value). Real CLI processes, one per help.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

/** Every command whose --help has an option list. */
const COMMANDS = [
  ["run"],
  ["status"],
  ["catalog", "show"],
  ["catalog", "diff"],
  ["catalog", "list"],
  ["init"],
  ["passphrase"],
  ["rotate-keys"],
  ["audit", "verify"],
  ["audit", "export"],
  ["audit", "checkpoint"],
  ["audit", "sessions"],
  ["audit", "activity"],
  ["audit", "show"],
  ["passkey", "add"],
  ["wrap"],
  ["doctor"],
  ["drill"],
  ["console"],
  ["approvals"],
  ["approve"],
  ["deny"],
  ["grants"],
  ["revoke"],
  ["unlock"],
  ["vault", "set"],
  ["vault", "list"],
  ["egress"],
];

/** A value's name: a placeholder in capitals (`SECONDS`) or the values it takes (`window|fresh`). */
const VALUE = String.raw`[A-Z][A-Z_]*\b|[a-z]+(?:\|[a-z]+)+`;

/** Each flag of the usage lines (up to the first blank line) with the name its value has there. */
function usageValues(help: string): Map<string, string> {
  const usage = help.split("\n\n")[0]!;
  const out = new Map<string, string>();
  for (const m of usage.matchAll(new RegExp(`--([a-z][a-z-]*) (${VALUE})`, "g"))) out.set(m[1]!, m[2]!);
  return out;
}

/** Each flag of the option list (`  --flag VALUE  what it does`) with the name its value has there. */
function listValues(help: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of help.split("\n")) {
    const m = new RegExp(`^ {2}(?:-[a-zA-Z], )?--([a-z][a-z-]*) (${VALUE})(?: |$)`).exec(line);
    if (m) out.set(m[1]!, m[2]!);
  }
  return out;
}

describe("--help: a flag's value is named alike in the usage and in the option list", () => {
  it("every command", async () => {
    const stateDir = newStateDir();
    const differing: string[] = [];
    for (const words of COMMANDS) {
      const r = await runCli([...words, "--help"], { stateDir });
      expect(r.code, `${words.join(" ")}: ${r.stderr}`).toBe(0);
      const inUsage = usageValues(r.stdout);
      for (const [flag, listed] of listValues(r.stdout)) {
        const used = inUsage.get(flag);
        if (used !== undefined && used !== listed)
          differing.push(`${words.join(" ")} --${flag}: usage ${used}, option list ${listed}`);
      }
    }
    expect(differing).toEqual([]);
  });
});
