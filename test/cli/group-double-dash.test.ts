// `--` in the command groups (audit, catalog, passkey, vault), as POSIX reads it: it ends the
// options, and every word after it is an operand. catalog and passkey, which read their whole line
// with one parser, took `catalog --json -- list LABEL`; vault and audit, which move the options
// written before the subcommand after it (args.ts subcommandFirst), refused `vault --json -- list`
// and even `vault -- list` as "unexpected argument". Now each group takes the word after `--` as
// its subcommand, the words after that stay operands (`vault -- list --json` is refused, saying
// that a word after '--' is never an option), and `--state-dir` after a `--` is an operand too, as
// every parser reads it. The real CLI against a state directory made by init.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const OPERAND = "every word after '--' is an operand, never an option: give the options before it";

describe("'--' in a command group", () => {
  it("ends the options: the word after it is the subcommand, in vault and audit as in catalog and passkey", async () => {
    const stateDir = newStateDir();
    // audit sessions opens the log: the passphrase from a file
    const env = passphraseEnv();
    const same = async (given: string[], meant: string[]) => {
      const a = await runCli(given, { stateDir, env });
      const b = await runCli(meant, { stateDir, env });
      expect(a.stderr, given.join(" ")).toBe(b.stderr);
      expect(a.code, `${given.join(" ")}: ${a.stderr}`).toBe(b.code);
      expect(a.stdout, given.join(" ")).toBe(b.stdout);
      return a;
    };
    for (const [given, meant] of [
      [
        ["vault", "--json", "--", "list"],
        ["vault", "list", "--json"],
      ],
      [
        ["vault", "--", "list"],
        ["vault", "list"],
      ],
      [
        ["audit", "--json", "--", "sessions"],
        ["audit", "sessions", "--json"],
      ],
      [
        ["audit", "--", "verify"],
        ["audit", "verify"],
      ],
      [
        ["passkey", "--json", "--", "list"],
        ["passkey", "list", "--json"],
      ],
    ]) {
      const r = await same(given!, meant!);
      expect(r.code, given!.join(" ")).toBe(0);
    }
    // a label nothing is recorded under: the same refusal either way
    const catalog = await same(
      ["catalog", "--json", "--", "list", "web"],
      ["catalog", "list", "web", "--json"],
    );
    expect(catalog.code).toBe(2);
  });

  it("a word after '--' is an operand, even one that reads as an option: refused, saying where options go", async () => {
    const stateDir = newStateDir();
    for (const args of [
      ["vault", "--", "list", "--json"],
      ["audit", "--", "sessions", "--json"],
      ["vault", "list", "--", "--json"],
    ]) {
      const r = await runCli(args, { stateDir });
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stdout, args.join(" ")).toBe("");
      expect(r.stderr, args.join(" ")).toContain(OPERAND);
    }
    // after '--', '--json' is the subcommand's place: no subcommand of that name
    const sub = await runCli(["vault", "--", "--json", "list"], { stateDir });
    expect(sub.code).toBe(2);
    expect(sub.stderr).toContain("portcullis vault: unknown subcommand");
  });

  it("'--' with no subcommand after it asks for one, with the help", async () => {
    const stateDir = newStateDir();
    for (const group of ["vault", "audit"]) {
      const r = await runCli([group, "--json", "--"], { stateDir });
      expect(r.code, group).toBe(2);
      expect(r.stdout, group).toMatch(/^usage:/);
      expect(r.stderr, group).toContain(`portcullis ${group}: give a subcommand`);
    }
  });

  it("passkey rm's ID that starts with '-', after a '--' before the subcommand, is the ID", async () => {
    const stateDir = newStateDir();
    // no passkey is registered: each form is refused as an ID that names none (not as a missing ID)
    for (const args of [
      ["passkey", "rm", "-rX9abcdef"],
      ["passkey", "rm", "--", "-rX9abcdef"],
      ["passkey", "--", "rm", "-rX9abcdef"],
    ]) {
      const r = await runCli(args, { stateDir });
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toMatch(/^portcullis passkey rm: there is no passkey with that ID/);
    }
  });

  it("--state-dir after '--' is an operand, not the state directory", async () => {
    const stateDir = newStateDir();
    // read as the flag, this lists the (empty) sessions of the state directory it names
    const r = await runCli(["audit", "--", "sessions", "--state-dir", stateDir], { stateDir: newStateDir() });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain(OPERAND);
    expect(r.stderr).not.toContain(stateDir);
  });
});
