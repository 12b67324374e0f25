// The four command groups (audit, catalog, passkey, vault) read their words alike:
// - an option may come before the subcommand: `catalog --json list` and `passkey --json list`
//   worked, while `vault --json list` and `audit --json verify` were refused ("--json goes after
//   the subcommand"); now each is read as the subcommand followed by the option, an option that
//   takes a value keeping it (`audit --file EXPORT verify`);
// - a word that is none of a group's subcommands is refused in one sentence, the mistyped one
//   offered, as `portcullis lsit` is: catalog said "use show, diff or list.", audit "see portcullis
//   audit --help", vault "(see portcullis vault --help)", and none offered the one meant.
// The real CLI against a state directory made by init.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

describe("a command group's words", () => {
  it("each group's --help says an option may come before the subcommand, where a user looks", async () => {
    const stateDir = newStateDir();
    for (const group of ["audit", "catalog", "passkey", "vault"]) {
      const r = await runCli([group, "--help"], { stateDir });
      expect(r.code, group).toBe(0);
      expect(r.stdout, group).toMatch(new RegExp(`An option may come before the subcommand: '${group} --`));
    }
  });

  it("an option before the subcommand is read as after it, in vault and audit as in catalog and passkey", async () => {
    const stateDir = newStateDir();
    const same = async (before: string[], after: string[]) => {
      const a = await runCli(before, { stateDir });
      const b = await runCli(after, { stateDir });
      expect(a.stderr, before.join(" ")).toBe(b.stderr);
      expect(a.code, `${before.join(" ")}: ${a.stderr}`).toBe(b.code);
      expect(a.stdout).toBe(b.stdout);
      return a;
    };
    const vault = await same(["vault", "--json", "list"], ["vault", "list", "--json"]);
    expect(vault.code).toBe(0);
    expect(JSON.parse(vault.stdout)).toMatchObject({ unlocked: false, secrets: [] });
    const verified = await same(["audit", "--json", "verify"], ["audit", "verify", "--json"]);
    expect(verified.code).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true });
    // a value taken by an option before the subcommand stays that option's
    const notExport = join(tempDir(), "not-an-export.jsonl");
    writeFileSync(notExport, "hello\n");
    const file = await same(
      ["audit", "--file", notExport, "--json", "verify"],
      ["audit", "verify", "--json", "--file", notExport],
    );
    expect(file.code).toBe(1);
    expect(file.stdout).toContain("does not read as an audit export");
    await same(["passkey", "--json", "list"], ["passkey", "list", "--json"]);
    // an option a subcommand does not take is refused by that subcommand, wherever it was written
    await same(["vault", "--json", "rm", "X"], ["vault", "rm", "X", "--json"]);
  });

  it("a word that is no subcommand is refused in one sentence by every group, the one meant offered", async () => {
    const stateDir = newStateDir();
    const refused = async (args: string[]) => {
      const r = await runCli(args, { stateDir });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toBe("");
      return r.stderr;
    };
    const sentence = (group: string, word: string, meant: string | null, subcommands: string) =>
      `portcullis ${group}: unknown subcommand ${word}${meant ? ` (did you mean ${meant}?)` : ""}; use ${subcommands} ('portcullis ${group} --help' says what each does).\n`;
    const AUDIT = "verify, export, checkpoint, sessions, activity or show";
    expect(await refused(["vault", "lsit"])).toBe(sentence("vault", '"lsit"', "list", "set, list or rm"));
    expect(await refused(["catalog", "lsit", "x"])).toBe(
      sentence("catalog", '"lsit"', "list", "show, diff or list"),
    );
    expect(await refused(["passkey", "lsit"])).toBe(sentence("passkey", '"lsit"', "list", "list, add or rm"));
    expect(await refused(["audit", "verfy"])).toBe(sentence("audit", '"verfy"', "verify", AUDIT));
    expect(await refused(["audit", "zzzzz"])).toBe(sentence("audit", '"zzzzz"', null, AUDIT));
    // a word that may be a secret pasted on the wrong line is not shown, by any group
    const secret = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";
    const hidden = "(not shown: it does not read as one, and may be a secret typed in the wrong place)";
    expect(await refused(["vault", secret])).toBe(sentence("vault", hidden, null, "set, list or rm"));
    expect(await refused(["audit", "--json", secret])).toBe(sentence("audit", hidden, null, AUDIT));
  });
});
