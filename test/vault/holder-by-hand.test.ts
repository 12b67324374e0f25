// The vault holder's hidden command (`portcullis __vault-holder`) is reachable from a shell: run
// by hand, or fed anything but what `unlock` writes to it, it says so in one sentence and exits 2,
// holding nothing, never quoting what it read (it may hold secrets) and never with a stack trace.
// Before, junk on its input ended in "internal error: SyntaxError …" (exit 70) quoting the input.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

const TOKEN = "sk-live-4eC39HqLyjWDarjtT1zdp7dc";
let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) removeDir(d);
  dirs = [];
});

describe("portcullis __vault-holder run by hand", () => {
  const cases: [string, string][] = [
    ["nothing", ""],
    ["text that is not JSON, holding a token", `{"secrets": {"a": ${TOKEN}`],
    ["JSON of another shape, holding a token", JSON.stringify({ secrets: { a: TOKEN }, ca: null })],
    ["a list", JSON.stringify([TOKEN])],
  ];
  for (const [what, input] of cases) {
    it(`given ${what}: one sentence, exit 2, nothing quoted, nothing held`, async () => {
      const stateDir = newStateDir();
      dirs.push(stateDir);
      const r = await runCli(["__vault-holder", "--until", "2099-01-01T00:00:00Z"], { stateDir, input });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toBe(
        "failed: the vault holder is started by 'portcullis unlock', which hands it the opened secrets; what it read is not that\n",
      );
      expect(r.stdout + r.stderr).not.toContain(TOKEN.slice(0, 10));
      expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
      expect(existsSync(join(stateDir, "vault.sock"))).toBe(false);
    });
  }

  it("given a past --until: refused before it listens", async () => {
    const stateDir = newStateDir();
    dirs.push(stateDir);
    const r = await runCli(["__vault-holder", "--until", "2001-01-01T00:00:00Z"], {
      stateDir,
      input: JSON.stringify({ secrets: { a: { value: TOKEN, deliver: "env", hosts: [] } }, ca: null }),
    });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("failed: --until is already past\n");
    expect(r.stdout + r.stderr).not.toContain(TOKEN.slice(0, 10));
    expect(existsSync(join(stateDir, "vault.sock"))).toBe(false);
  });
});
