// A fresh user's walk through the command line found words passed over or misnamed:
// - `portcullis --version extra` printed the version and exit 0, where every command refuses a
//   word too many (exit 2, the word not shown: it may be a secret typed in the wrong place), and
//   `portcullis --help run` printed the whole list, where `portcullis help run` prints run's help;
// - `lock --help` and `unlock --help` printed the vault's whole help (secrets, delivery), where
//   each command's help is its own;
// - `catalog diff LABEL 1 2 3` said "give both FROM and TO, or neither", when both were given and
//   the trouble was a word too many;
// - `passkey rm ID` of no passkey said "portcullis passkey: …", where passkey's other refusals
//   name the subcommand ("portcullis passkey rm: …").
// The real CLI, over pipes.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

const NOT_SHOWN = "not shown: a passphrase or a secret is never given on the command line";

describe("words a fresh user typed", () => {
  it("--version and -V refuse a word after them, without showing it", async () => {
    for (const [flag, extra] of [
      ["--version", ["s3cr3t-token"]],
      ["-V", ["a", "b"]],
    ] as const) {
      const r = await runCli([flag, ...extra]);
      expect(r.code, flag).toBe(2);
      expect(r.stdout, flag).toBe("");
      expect(r.stderr).toBe(
        `portcullis ${flag}: unexpected argument${extra.length === 1 ? "" : "s"} (${extra.length}, ${NOT_SHOWN}).\n`,
      );
      expect(r.stderr).not.toContain("s3cr3t");
    }
    // alone, it still works
    expect((await runCli(["--version"])).stdout).toMatch(/^portcullis \d+\.\d+\.\d+\n$/);
  });

  it("--help COMMAND and -h COMMAND are the command's help, as 'help COMMAND' is", async () => {
    for (const flag of ["--help", "-h"]) {
      const r = await runCli([flag, "lock"]);
      expect(r.code, `${flag} lock`).toBe(0);
      expect(r.stdout, `${flag} lock`).toMatch(/^usage: portcullis lock /);
      const run = await runCli([flag, "run"]);
      expect(run.stdout, `${flag} run`).toMatch(/^usage: portcullis run /);
      // a word too many is refused as 'help a b' refuses it, named as the user typed it
      // (it said 'portcullis help:', a command not typed)
      const two = await runCli([flag, "lock", "unlock"]);
      expect(two.code).toBe(2);
      expect(two.stderr).toBe(`portcullis ${flag}: give one command (portcullis ${flag} COMMAND).\n`);
      const unknown = await runCli([flag, "zzzzzz"]);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toBe(
        `portcullis ${flag}: unknown command "zzzzzz"; run 'portcullis --help' for the list.\n`,
      );
      // a mistyped command gets the one it most likely meant, as 'portcullis statsu' does
      const near = await runCli([flag, "statsu"]);
      expect(near.stderr).toBe(
        `portcullis ${flag}: unknown command "statsu" (did you mean status?); run 'portcullis --help' for the list.\n`,
      );
    }
  });

  it("lock --help and unlock --help are each their own, not the vault's", async () => {
    const stateDir = newStateDir();
    for (const [command, opening, says] of [
      ["lock", "usage: portcullis lock [--state-dir DIR]\n", "does not ask\nfor the passphrase"],
      ["unlock", "usage: portcullis unlock [--for DURATION] [--state-dir DIR]\n", "default 30m"],
    ] as const) {
      for (const flag of ["--help", "-h"]) {
        const r = await runCli([command, flag], { stateDir });
        expect(r.code, `${command} ${flag}`).toBe(0);
        expect(r.stdout.startsWith(opening), r.stdout).toBe(true);
        expect(r.stdout).toContain(says);
        // the vault's subcommands are vault --help's
        expect(r.stdout, `${command} ${flag}`).not.toContain("vault set NAME");
      }
    }
  });

  it("catalog diff with three revisions says there is a word too many", async () => {
    const r = await runCli(["catalog", "diff", "docs", "1", "2", "3"], { stateDir: newStateDir() });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      "portcullis catalog diff: takes a LABEL and at most two revisions (FROM TO); 3 words were given after the LABEL.\n",
    );
    // one revision alone is still the FROM without its TO
    const one = await runCli(["catalog", "diff", "docs", "1"], { stateDir: newStateDir() });
    expect(one.code).toBe(2);
    expect(one.stderr).toBe("portcullis catalog diff: give both FROM and TO, or neither.\n");
  });

  it("passkey rm of an ID that names no passkey is named 'passkey rm'", async () => {
    const stateDir = newStateDir();
    const r = await runCli(["passkey", "rm", "nosuchpasskey"], { stateDir });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/^portcullis passkey rm: there is no passkey with that ID \(not shown/);
    expect(r.stderr).not.toContain("nosuchpasskey");
  });
});
