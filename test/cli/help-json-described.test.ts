// The read commands' --help named --json in their usage line and nowhere else: status, grants,
// doctor, egress, approvals, catalog and passkey list said neither what it prints nor where their
// errors go, as approve, deny and revoke say. Each now has a --json line naming the object it
// prints; the real CLI checks that the named key is what the command prints, on a new state
// directory (empty lists), and that an error leaves standard output empty.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

/** [the command's words, the key its --json prints at the top, as its help names it] */
const READS: [string[], string][] = [
  [["status"], "gateways"],
  [["grants"], "grants"],
  [["doctor"], "findings"],
  [["egress"], "epochs"],
  [["approvals"], "requests"],
  [["passkey", "list"], "passkeys"],
];

/** The help's lines from the one that describes --json to the next line indented no deeper. */
function jsonLines(help: string): string {
  const lines = help.split("\n");
  const at = lines.findIndex((l) => /^\s*--json\b/.test(l));
  if (at === -1) return "";
  const indent = lines[at]!.search(/\S/);
  const end = lines.findIndex((l, i) => i > at && (l.trim() === "" || l.search(/\S/) <= indent));
  return lines.slice(at, end === -1 ? undefined : end).join("\n");
}

describe("the read commands' --help says what --json prints", () => {
  it("has a --json line naming the key the command prints", async () => {
    const stateDir = newStateDir();
    for (const [words, key] of READS) {
      const help = await runCli([...words, "--help"]);
      expect(help.code).toBe(0);
      const described = jsonLines(help.stdout);
      expect(described, `${words.join(" ")} --help`).toContain(`"${key}"`);
      const r = await runCli([...words, "--json"], { stateDir, noTerminal: true });
      expect(Object.keys(JSON.parse(r.stdout)), words.join(" ")).toContain(key);
    }
    const catalog = await runCli(["catalog", "--help"]);
    expect(jsonLines(catalog.stdout)).toContain("one JSON object on standard output");
  });

  it("an error of a --json read is one sentence on stderr, stdout empty, as the help says", async () => {
    const stateDir = newStateDir();
    for (const words of [
      ["status", "--json", "extra"],
      ["egress", "nolabel", "--json"],
      ["catalog", "list", "nolabel", "--json"],
      ["grants", "--json", "x"],
    ]) {
      const r = await runCli(words, { stateDir, noTerminal: true });
      expect(r.code, words.join(" ")).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr.split("\n").filter(Boolean)).toHaveLength(1);
      const help = await runCli([words[0]!, "--help"]);
      expect(jsonLines(help.stdout), `${words[0]} --help`).toMatch(
        /errors stay one sentence on\s+standard\s+error/,
      );
    }
  });
});
