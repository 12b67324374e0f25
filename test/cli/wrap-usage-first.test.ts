// A mistake in wrap's own flags (a --label that is not KEY=LABEL, a --servers with nothing in it,
// as an unset "$LIST" gives) is said before the host files are looked for. Found after, a
// folder with no host file answered "no claude-code configuration found" (or "FILE does not
// exist"), and fixing that only led to the typo, as usage-before-state-dir.test.ts has it for the
// state directory. The real CLI, in an empty folder under an empty HOME; nothing is written.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";

const LABEL_SHAPE =
  "portcullis wrap: --label takes KEY=LABEL, the LABEL one 'portcullis run --label' takes (letters, digits, '.', '_', '-', starting with a letter or digit; at most 64 characters; e.g. --label inventory=inventory-cursor).\n";
const NO_SERVERS =
  "portcullis wrap: --servers names no server; give the server keys separated by commas (--servers a,b), or leave it out for every server.\n";

const cases: [string[], string][] = [
  [["wrap", "--label", "inventory"], LABEL_SHAPE],
  [["wrap", "--dry-run", "--label", "inventory=a b"], LABEL_SHAPE],
  [["wrap", "cursor", "--label", "=x"], LABEL_SHAPE],
  [["wrap", "--servers", ""], NO_SERVERS],
  [["wrap", "--servers", " , "], NO_SERVERS],
  [["wrap", "./nowhere.json", "--servers", ""], NO_SERVERS],
];

describe("wrap: its flags' mistakes before the host files", () => {
  it("is told the flag at fault where no host file is, exit 2, nothing written", async () => {
    const cwd = tempDir("portcullis-wrap-usage-");
    const home = tempDir("portcullis-wrap-usage-home-");
    const stateDir = join(tempDir("portcullis-wrap-usage-state-"), "never");
    for (const [args, said] of cases) {
      const r = await runCli([...args, "--state-dir", stateDir], {
        cwd,
        env: { HOME: home, XDG_CONFIG_HOME: join(home, ".config"), CODEX_HOME: join(home, ".codex") },
        noTerminal: true,
      });
      expect(r.stderr, args.join(" ")).toBe(said);
      expect(r.stdout).toBe("");
      expect(r.code).toBe(2);
    }
    expect(readdirSync(cwd)).toEqual([]);
    expect(readdirSync(home)).toEqual([]);
  });

  it("a well-formed wrap there still says that no host file was found", async () => {
    const cwd = tempDir("portcullis-wrap-usage-");
    const home = tempDir("portcullis-wrap-usage-home-");
    const r = await runCli(
      [
        "wrap",
        "--label",
        "inventory=inv-2",
        "--state-dir",
        join(tempDir("portcullis-wrap-usage-state-"), "never"),
      ],
      {
        cwd,
        env: { HOME: home },
        noTerminal: true,
      },
    );
    expect(r.stderr).toContain("portcullis wrap: no claude-code configuration found");
    expect(r.code).toBe(2);
  });
});
