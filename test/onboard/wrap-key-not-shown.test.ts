// A server key named on wrap's command line that no host file has is repeated in the refusal when
// it reads as a name ("nope"), and not when it reads as a secret pasted in the wrong place
// (`--servers sk-live-…`, `--label ghp_…=x`): every other command refuses a name that names
// nothing without repeating it, and stderr ends up in scrollback, CI logs and transcripts.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";

const SECRETS = [
  "sk-live-4eC39HqLyjWDarjtT1zdp7dc",
  "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
  "a8Fk3kd9Qm2LxP0vZt7Y",
];

describe("wrap's refusal of a server key", () => {
  it("repeats a key that reads as a name, and no key that reads as a secret (exit 2, nothing written)", async () => {
    const home = tempDir();
    const project = join(home, "project");
    mkdirSync(project);
    const file = join(project, ".mcp.json");
    writeFileSync(file, JSON.stringify({ mcpServers: { inventory: { command: "node", args: ["s.js"] } } }));
    const stateDir = join(home, "state");
    const wrap = (args: string[]) =>
      runCli(["wrap", "claude-code", "--dry-run", "--state-dir", stateDir, ...args], {
        cwd: project,
        env: { HOME: home },
      });
    const named = await wrap(["--servers", "nope"]);
    expect(named.code, named.stderr).toBe(2);
    // with the servers there to give instead, or the one a mistyped name meant
    expect(named.stderr).toBe(
      `portcullis wrap: ${file} has no server "nope" (--servers; the servers there: "inventory"); nothing was written.\n`,
    );
    const typo = await wrap(["--servers", "inventroy"]);
    expect(typo.code, typo.stderr).toBe(2);
    expect(typo.stderr).toBe(
      `portcullis wrap: ${file} has no server "inventroy" (--servers; did you mean "inventory"?); nothing was written.\n`,
    );
    for (const secret of SECRETS) {
      for (const args of [
        ["--servers", `inventory,${secret}`],
        ["--label", `${secret}=x`],
        ["--label", `${secret}=x`, "--label", `${secret}=y`],
      ]) {
        const r = await wrap(args);
        const what = `${args.join(" ")}: ${r.stderr}`;
        expect(r.code, what).toBe(2);
        expect(r.stderr.split("\n").filter(Boolean), what).toHaveLength(1);
        expect(r.stderr, what).toContain("not shown: it reads as a secret typed in the wrong place");
        expect(r.stdout + r.stderr, what).not.toContain(secret.slice(0, 8));
      }
    }
  });
});
