// Two things the README said that the CLI no longer does, each checked against the real CLI:
// - "Not built yet: … rotation of the approver key" (and docs/design.md's "What is not built":
//   "rotation of the approver key, or of any key of the keyring"), while `portcullis rotate-keys`
//   replaces the approver key, the audit key and the data key;
// - the `wrap`/`unwrap`/`doctor` commands doctor and wrap print "under PORTCULLIS_HOME … leave
//   [--state-dir] out", while they name a PORTCULLIS_HOME state directory (a pasted command may
//   reach a shell without the variable: test/onboard/advice-other-shell.test.ts).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { REPO } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

const readme = () => readFileSync(join(REPO, "README.md"), "utf8");
/** The paragraph of `text` that starts with `start`. */
function paragraph(text: string, start: string): string {
  const at = text.indexOf(start);
  expect(at, start).toBeGreaterThanOrEqual(0);
  const end = text.indexOf("\n\n", at + start.length);
  return text.slice(at + start.length, end === -1 ? undefined : end);
}

describe("the docs say what the CLI does", () => {
  it("key rotation is not listed as not built while rotate-keys replaces the approver key", async () => {
    const help = await runCli(["rotate-keys", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("a new approver key, pinned in the audit chain");
    expect(paragraph(readme(), "Not built yet:")).not.toMatch(/rotation/);
    const design = readFileSync(join(REPO, "docs", "design.md"), "utf8");
    expect(paragraph(design, "## What is not built\n\n")).not.toMatch(/rotation of the approver key/);
  });

  it("doctor's wrap advice names a PORTCULLIS_HOME state directory, as the README says", async () => {
    const stateDir = newStateDir();
    const cwd = tempDir("portcullis-docs-say-");
    const home = tempDir("portcullis-docs-say-home-");
    writeFileSync(
      join(cwd, ".mcp.json"),
      JSON.stringify({ mcpServers: { notes: { command: "node", args: ["s.js"] } } }),
    );
    const r = await runCli(["doctor"], { stateDir, cwd, env: { HOME: home }, noTerminal: true });
    expect(r.stdout).toContain(`next: portcullis wrap claude-code --dry-run --state-dir ${stateDir}`);
    expect(readme()).not.toContain("under `PORTCULLIS_HOME` they leave it out");
  });
});
