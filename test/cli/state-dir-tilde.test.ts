// bash leaves `--state-dir=~/x` as it is (a `~` is expanded only at the start of a word), and a
// host file's args or a quoted `PORTCULLIS_HOME="~/x"` are never expanded: `init` made and used
// `./~/x` in the directory it ran from (a gateway, in its host's), a state directory nobody
// meant. Refused instead by every command, exit 2, naming the flag or the variable and the full
// path to write; nothing is created. The real CLI.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { passphraseEnv } from "../helpers/state.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) removeDir(d);
});

describe("a state directory starting with an unexpanded ~", () => {
  it("--state-dir=~/… is refused by init, run, status, doctor and wrap, naming the full path; nothing is made", async () => {
    const home = tempDir();
    const cwd = tempDir();
    dirs.push(home, cwd);
    const env = { ...passphraseEnv(), HOME: home };
    for (const args of [
      ["init", "--state-dir=~/pc"],
      ["run", "--state-dir=~/pc", "--", ...fixtureCommand("echo")],
      ["status", "--state-dir", "~/pc"],
      ["doctor", "--state-dir=~/pc"],
      ["wrap", "--dry-run", "--state-dir=~/pc"],
    ]) {
      const r = await runCli(args, { cwd, env, input: "" });
      expect(r.stderr, args.join(" ")).toBe(
        `portcullis ${args[0]}: --state-dir starts with "~", which nothing expanded (bash leaves "--state-dir=~/…" as it is, and a host file's args are never expanded): it would name a directory "~" inside the current one; write the full path: --state-dir ${join(home, "pc")}.\n`,
      );
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stdout).toBe("");
    }
    expect(existsSync(join(cwd, "~"))).toBe(false);
  });

  it('PORTCULLIS_HOME="~/…" is refused naming the variable; a name that only starts with ~ is a name', async () => {
    const home = tempDir();
    const cwd = tempDir();
    dirs.push(home, cwd);
    const r = await runCli(["init"], {
      cwd,
      env: { ...passphraseEnv(), HOME: home, PORTCULLIS_HOME: "~/pc" },
    });
    expect(r.stderr).toBe(
      `portcullis init: PORTCULLIS_HOME starts with "~", which nothing expanded (a quoted "~/…" is not expanded, nor is a host file's env): it would name a directory "~" inside the current one; write the full path: PORTCULLIS_HOME=${join(home, "pc")}.\n`,
    );
    expect(r.code).toBe(2);
    expect(existsSync(join(cwd, "~"))).toBe(false);
    const named = await runCli(["status", "--state-dir", "~backup"], { cwd, env: { HOME: home } });
    expect(named.stderr).toContain(`no state directory at ${join(cwd, "~backup")}`);
    expect(named.code).toBe(2);
  });
});
