// Two ways README's "Commands" promises were not kept. `portcullis --version --json` was
// "unexpected argument (1, not shown …)", where `--help --json` names --json and says where a
// command's options go (portcullis's own options are given alone). And `portcullis help status
// --json` was refused as "give one command (portcullis help COMMAND)", one command given, though
// `help COMMAND` is `COMMAND --help`, which takes the command's options (`status --json --help`
// prints the help). The real CLI.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";

describe("--version beside another word", () => {
  it.each(["--version", "-V"])("%s --json names --json and where a command's options go", async (asked) => {
    const r = await runCli([asked, "--json"]);
    expect(r.stderr).toBe(
      `portcullis ${asked}: --json is not one of portcullis's own options (--help, --version); a command's options go after the command (portcullis COMMAND --json …), and 'portcullis help COMMAND' says which it takes.\n`,
    );
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
  });

  it("--help beside it is said to be given alone; a typo is named; a word that is no option is not shown", async () => {
    const alone = await runCli(["--version", "--help"]);
    expect(alone.stderr).toBe("portcullis --version: --version is given alone (portcullis --version).\n");
    const typo = await runCli(["--version", "--verison"]);
    expect(typo.stderr).toBe("portcullis --version: unknown option --verison (did you mean --version?).\n");
    const word = await runCli(["--version", "sk-live-version-word-1b2c"]);
    expect(word.stderr).toBe(
      "portcullis --version: unexpected argument (1, not shown: a passphrase or a secret is never given on the command line).\n",
    );
    const pasted = await runCli(["--version", "-sk_live_0123456789abcdef"]);
    expect(pasted.stderr).not.toContain("sk_live");
    for (const r of [alone, typo, word, pasted]) {
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
    }
  });
});

describe("help COMMAND with the command's options", () => {
  it("is COMMAND OPTIONS --help: the help printed, exit 0, as `status --json --help` does", async () => {
    for (const asked of ["help", "--help", "-h"]) {
      const viaHelp = await runCli([asked, "status", "--json"]);
      const direct = await runCli(["status", "--json", "--help"]);
      expect(viaHelp.stderr, asked).toBe("");
      expect(viaHelp.code, asked).toBe(0);
      expect(viaHelp.stdout, asked).toBe(direct.stdout);
      expect(viaHelp.stdout).toContain("usage: portcullis status");
    }
  });

  it("a group's subcommand takes its own options, and refuses one it does not take, as COMMAND --help does", async () => {
    const list = await runCli(["help", "vault", "list", "--json"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toBe((await runCli(["vault", "list", "--help"])).stdout);
    const set = await runCli(["help", "vault", "set", "--json"]);
    expect(set.code).toBe(2);
    expect(set.stderr).toBe((await runCli(["vault", "set", "--json", "--help"])).stderr);
    expect(set.stderr).toContain("unknown option --json");
  });

  it("a mistyped option is named by the command; a word that is no option is still two commands", async () => {
    const typo = await runCli(["help", "status", "--jsno"]);
    expect(typo.stderr).toBe("portcullis status: unknown option --jsno (did you mean --json?).\n");
    const word = await runCli(["help", "status", "extra"]);
    expect(word.stderr).toBe("portcullis help: give one command (portcullis help COMMAND).\n");
    expect([typo.code, word.code]).toEqual([2, 2]);
  });
});
