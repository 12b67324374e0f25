// The words a command reads where its subcommand, or its options, go are refused in the shared
// sentences (src/cli/args.ts), as every other command refuses them:
// - `demo --x` said "unknown option --x; see portcullis demo --help." where every other command
//   says "(… lists the options)" or offers the option meant;
// - `audit --json` and `vault --json` called the option an unknown subcommand that "may be a
//   secret": options may come before a group's subcommand now (group-options.test.ts), so given
//   alone they ask for the subcommand, as `catalog --json` does, and an unknown one is named;
// - `vault ''` (an unset `$SUB`) printed the help as if no subcommand were given, and `portcullis
//   ''` the command list: refused as unknown, saying the word is empty, as an empty option value
//   is refused; `audit ''`, `catalog ''` and `passkey ''` said an empty word was "not shown".
// The real CLI, with no state directory (none of these needs one).
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";

async function refused(args: string[]): Promise<string> {
  const r = await runCli(args, { env: { HOME: tempDir("portcullis-home-") } });
  expect(r.code, r.stderr).toBe(2);
  expect(r.stdout).toBe("");
  return r.stderr;
}

describe("words in the wrong place", () => {
  it("demo refuses an unknown option as every command does", async () => {
    expect(await refused(["demo", "--x"])).toBe(
      "portcullis demo: unknown option --x ('portcullis demo --help' lists the options).\n",
    );
    expect(await refused(["demo", "--kep"])).toBe(
      "portcullis demo: unknown option --kep (did you mean --keep?).\n",
    );
  });

  it.each(["audit", "vault"])(
    "%s given only an option asks for the subcommand, as catalog and passkey do; an unknown option is named as there",
    async (group) => {
      const r = await runCli([group, "--json"], { env: { HOME: tempDir("portcullis-home-") } });
      expect(r.code).toBe(2);
      expect(r.stdout).toMatch(/^usage:/);
      expect(r.stderr).toMatch(new RegExp(`^portcullis ${group}: give a subcommand \\(`));
      expect(await refused([group, "--jsno", "list"])).toBe(
        `portcullis ${group}: unknown option --jsno (did you mean --json?).\n`,
      );
      // one that does not read as an option is not repeated
      const secret = "--sk_live_4eC39HqLyjWDarjtT1zdp7dc";
      const said = await refused([group, secret]);
      expect(said).not.toContain("sk_live");
      expect(said).toBe(
        `portcullis ${group}: unknown option (not shown: it does not read as one, and may be a secret typed in the wrong place); 'portcullis ${group} --help' lists the options.\n`,
      );
    },
  );

  it.each([
    [
      ["vault", ""],
      "portcullis vault: unknown subcommand \"\" (an empty word); use set, list or rm ('portcullis vault --help' says what each does).",
    ],
    [
      ["audit", ""],
      "portcullis audit: unknown subcommand \"\" (an empty word); use verify, export, checkpoint, sessions, activity or show ('portcullis audit --help' says what each does).",
    ],
    [
      ["catalog", ""],
      "portcullis catalog: unknown subcommand \"\" (an empty word); use show, diff or list ('portcullis catalog --help' says what each does).",
    ],
    [[""], "portcullis: unknown command \"\" (an empty word); run 'portcullis --help' for the list."],
  ])(
    "an empty subcommand or command (%j) is refused as unknown, not answered with the help",
    async (args, said) => {
      expect(await refused(args)).toBe(`${said}\n`);
    },
  );
});
