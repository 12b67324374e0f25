// A mistyped option is refused with the option it most likely meant, when one is near enough and
// no other is as near; otherwise with the usual sentence. The flag is named, never a value.
import { describe, expect, it } from "vitest";
import { nearestOption } from "../../src/cli/args.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

const OPTIONS = {
  json: { type: "boolean" },
  verbose: { type: "boolean" },
  file: { type: "string" },
  files: { type: "string" },
  "state-dir": { type: "string" },
} as const;

describe("did you mean", () => {
  it("one option within two edits (added, dropped, changed, swapped letters) is named; none, or two as near, is not", () => {
    expect(nearestOption("--jsno", OPTIONS)).toBe("json");
    expect(nearestOption("--verbos", OPTIONS)).toBe("verbose");
    expect(nearestOption("--state_dir", OPTIONS)).toBe("state-dir");
    expect(nearestOption("--stat-edir", OPTIONS)).toBe("state-dir");
    // "fil" is one edit from file and two from files: the nearer wins
    expect(nearestOption("--fil", OPTIONS)).toBe("file");
    // "filez" is one edit from file (a letter added) and one from files (a letter changed): a tie names neither
    expect(nearestOption("--filez", OPTIONS)).toBeNull();
    expect(nearestOption("--xyz", OPTIONS)).toBeNull();
    expect(nearestOption("-j", OPTIONS)).toBeNull();
    expect(nearestOption(`--${"a".repeat(100)}`, OPTIONS)).toBeNull();
  });

  it("on the command line: 'status --jsno' names --json, exit 2; an option near nothing keeps the usual sentence", async () => {
    const stateDir = newStateDir();
    const typo = await runCli(["status", "--jsno"], { stateDir });
    expect(typo.code).toBe(2);
    expect(typo.stderr).toBe("portcullis status: unknown option --jsno (did you mean --json?).\n");
    const far = await runCli(["status", "--xyz"], { stateDir });
    expect(far.stderr).toBe(
      "portcullis status: unknown option --xyz ('portcullis status --help' lists the options).\n",
    );
    // run alone takes a command after '--', where a value that starts with '-' goes
    const run = await runCli(["run", "--xyz", "--", "node"], { stateDir });
    expect(run.stderr).toBe(
      "portcullis run: unknown option --xyz (a value that starts with '-' goes after '--'; 'portcullis run --help' lists the options).\n",
    );
    // a value after '=' is never repeated, near or not
    const valued = await runCli(["status", "--jsno=sk-live-0123456789abcdef"], { stateDir });
    expect(valued.stderr).not.toContain("sk-live");
  });
});

describe("did you mean, before any command", () => {
  it("a mistyped command names the command it most likely meant; a word that reads as a secret is not shown and gets no guess", async () => {
    const stateDir = newStateDir();
    const typo = await runCli(["stauts"], { stateDir });
    expect(typo.code).toBe(2);
    expect(typo.stderr).toBe(
      "portcullis: unknown command \"stauts\" (did you mean status?); run 'portcullis --help' for the list.\n",
    );
    const far = await runCli(["xyzzy"], { stateDir });
    expect(far.stderr).toBe("portcullis: unknown command \"xyzzy\"; run 'portcullis --help' for the list.\n");
    const secret = await runCli(["sk-live-0123456789abcdef"], { stateDir });
    expect(secret.code).toBe(2);
    expect(secret.stderr).not.toContain("sk-live");
    expect(secret.stderr).not.toContain("did you mean");
  });

  it("-v and a mistyped --version or --help are said to be that, not an option to put after a command", async () => {
    const stateDir = newStateDir();
    for (const [flag, meant] of [
      ["-v", "--version"],
      ["--versoin", "--version"],
      ["--hepl", "--help"],
    ]) {
      const r = await runCli([flag!], { stateDir });
      expect(r.code, flag).toBe(2);
      expect(r.stderr).toBe(
        `portcullis: unknown option ${flag} (did you mean ${meant}?); run 'portcullis --help' for the commands.\n`,
      );
    }
    // an option of a command, given before it, is still told to go after it
    const misplaced = await runCli(["--json", "status"], { stateDir });
    expect(misplaced.stderr).toBe(
      "portcullis: --json goes after the command (portcullis COMMAND --json …); run 'portcullis --help' for the commands.\n",
    );
  });
});
