// `portcullis wrap /tmp/nofile.json` said only "the argument given is neither a host … nor an
// existing file", never which path was not found, even when the argument is plainly a path: the
// user could not tell a typo in the path from a wrap that does not take files. Now a word that
// starts as a path does (/, ./, ../, ~/) or ends as a host file does (.json, .jsonc, .toml) is
// named, resolved, with what wrap takes; any other word (a token pasted in the wrong place, a
// base64 secret holding a '/') is still never repeated. The real CLI, for wrap and unwrap.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

const TAKES =
  "a host (claude-code, claude-desktop, cursor, vscode, codex) or the path of an existing host file (such as .mcp.json, .vscode/mcp.json or ~/.codex/config.toml)";

describe("wrap FILE where FILE does not exist", () => {
  it("a path is named, resolved, with what wrap and unwrap take; exit 2, nothing made", async () => {
    const cwd = tempDir("portcullis-wrap-missing-");
    const stateDir = join(newStateDir(), "never");
    const cases: [string, string][] = [
      ["/tmp/portcullis-no-such-dir/nofile.json", "/tmp/portcullis-no-such-dir/nofile.json"],
      ["./mcp.json", join(cwd, "mcp.json")],
      ["../gone/config.toml", join(cwd, "..", "gone", "config.toml")],
      ["settings.JSONC", join(cwd, "settings.JSONC")],
      ["/tmp/portcullis-no-such-dir/a\u001b[2Jb", "/tmp/portcullis-no-such-dir/a\\u001b[2Jb"],
    ];
    for (const [given, named] of cases)
      for (const [command, nothing] of [
        ["wrap", "nothing was written"],
        ["unwrap", "nothing was restored"],
      ]) {
        const r = await runCli([command!, given, "--state-dir", stateDir], { cwd, noTerminal: true });
        expect(r.stderr, given).toBe(
          `portcullis ${command}: ${named} does not exist; ${command} takes ${TAKES}; ${nothing}.\n`,
        );
        expect(r.stdout).toBe("");
        expect(r.code).toBe(2);
      }
    expect(readdirSync(cwd)).toEqual([]);
  });

  it("a word that is not plainly a path is not repeated, even with a '/' in it", async () => {
    const cwd = tempDir("portcullis-wrap-missing-");
    for (const given of [
      "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
      "sk-live-4eC39HqLyjWDarjtT1zdp7dc",
      "claude",
    ]) {
      const r = await runCli(["wrap", given], { cwd, noTerminal: true });
      expect(r.stderr).toBe(
        `portcullis wrap: the argument given is neither a host nor an existing file (it is not repeated, in case it is a secret typed in the wrong place); wrap takes ${TAKES}; nothing was written.\n`,
      );
      expect(r.code).toBe(2);
    }
  });

  it("a mistyped host gets the host it most likely meant, the word still not repeated", async () => {
    // it was answered as any unknown word: the user of `wrap clade-code` read the list to find the typo
    const cwd = tempDir("portcullis-wrap-missing-");
    for (const [given, meant] of [
      ["clade-code", "claude-code"],
      ["claude-dekstop", "claude-desktop"],
      ["cursr", "cursor"],
      ["vscod", "vscode"],
    ])
      for (const [command, nothing] of [
        ["wrap", "nothing was written"],
        ["unwrap", "nothing was restored"],
      ]) {
        const r = await runCli([command!, given!], { cwd, noTerminal: true });
        expect(r.stderr, given).toBe(
          `portcullis ${command}: the argument given is neither a host nor an existing file (it is not repeated, in case it is a secret typed in the wrong place; did you mean ${meant}?); ${command} takes ${TAKES}; ${nothing}.\n`,
        );
        expect(r.code).toBe(2);
      }
  });
});
