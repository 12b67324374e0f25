// A fresh user's walk through the command line found sentences that did not read as the rest:
// - `approve --next` / `deny --next` with nothing pending said "portcullis: no approval request is
//   pending." (every other refusal of theirs names the command: "portcullis approve --next: …");
// - `wrap` / `unwrap` where the host has no configuration said "portcullis: no claude-code
//   configuration found (…)", without the command or what else it takes (a host, or a file);
// - audit's subcommands' usage errors read "portcullis audit: verify: …", where vault's and
//   catalog's read "portcullis vault list: …", and "see portcullis audit --help" was the only
//   command in such a sentence not in quotes;
// - catalog's and passkey's option refusals named the group only ("portcullis catalog: unknown
//   option …"), where vault's and audit's name the subcommand;
// - a missing state directory, a store that cannot be used: "portcullis: no state directory at
//   …", the one sentence a first command meets, named by no command (main.ts reportFailure);
//   then, for audit, passkey and vault (whose state directory main.ts reads before the
//   subcommand runs), named by the group alone ("portcullis vault: …"), where every other failure
//   of theirs names the subcommand ("portcullis vault set: …"); so was a --state-dir given twice;
// - doctor on a state directory that does not exist offered "'portcullis console' starts it",
//   a command that would start a console on the default state directory, not this one.
// The real CLI, over pipes.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const TAKES =
  "a host (claude-code, claude-desktop, cursor, vscode, codex) or the path of an existing host file (such as .mcp.json, .vscode/mcp.json or ~/.codex/config.toml)";

describe("failures name their command", () => {
  it("approve --next and deny --next with nothing pending", async () => {
    const stateDir = newStateDir();
    for (const [command, args] of [
      ["approve", ["approve", "--next", "--for", "call"]],
      ["deny", ["deny", "--next"]],
    ] as const) {
      const r = await runCli([...args], { stateDir, env: passphraseEnv() });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe(`portcullis ${command} --next: no approval request is pending.\n`);
    }
  });

  it("wrap and unwrap where the host has no configuration: the command, where it looked, what else it takes", async () => {
    const home = tempDir("portcullis-home-");
    const cwd = tempDir("portcullis-cwd-");
    for (const [command, nothing] of [
      ["wrap", "nothing was written"],
      ["unwrap", "nothing was restored"],
    ] as const) {
      const r = await runCli([command, "--state-dir", newStateDir()], {
        cwd,
        env: { HOME: home },
        noTerminal: true,
      });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toBe(
        `portcullis ${command}: no claude-code configuration found (looked in ${join(cwd, ".mcp.json")}, ${join(home, ".claude.json")}); ${command} takes ${TAKES}; ${nothing}.\n`,
      );
    }
  });

  it("audit's subcommands, as vault's and catalog's: 'portcullis audit SUB: …'", async () => {
    const stateDir = newStateDir();
    const cases: [string[], string][] = [
      [
        ["audit", "sessions", "--bogus"],
        "portcullis audit sessions: unknown option --bogus ('portcullis audit sessions --help' lists the options).\n",
      ],
      [
        ["audit", "sessions", "extra"],
        "portcullis audit sessions: unexpected argument (1, not shown: a passphrase or a secret is never given on the command line); see 'portcullis audit --help'.\n",
      ],
      [["audit", "show"], "portcullis audit show: takes one record number (SEQ ≥ 1).\n"],
      [
        ["audit", "verify", "--file", ""],
        "portcullis audit verify: --file is empty; give the export to verify, or leave the flag out to verify the state directory's log.\n",
      ],
    ];
    for (const [args, said] of cases) {
      const r = await runCli(args, { stateDir });
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toBe(said);
    }
    // the same sentences as vault's
    const vault = await runCli(["vault", "list", "--bogus"], { stateDir });
    expect(vault.stderr).toMatch(/^portcullis vault list: unknown option --bogus/);
  });

  it("a failure inside vault's and audit's subcommands names the subcommand, as the README's Commands say", async () => {
    // these read "portcullis vault: …" and "portcullis audit: …" where a usage error of the same
    // subcommand, and every failure of catalog's and passkey's, named it
    const stateDir = newStateDir();
    const wrong = join(tempDir("portcullis-pass-"), "wrong");
    writeFileSync(wrong, "not the passphrase\n", { mode: 0o600 });
    const wrongEnv = { PORTCULLIS_PASSPHRASE_FILE: wrong, PORTCULLIS_INSECURE_TEST_KDF: "1" };
    const missing = join(tempDir(), "nope.jsonl");
    const cases: [string[], Record<string, string>, number, RegExp][] = [
      [
        ["vault", "rm", "nosuch"],
        passphraseEnv(),
        2,
        /^portcullis vault rm: there is no secret by that name /,
      ],
      [["vault", "rm", "nosuch"], wrongEnv, 2, /^portcullis vault rm: there is no secret by that name /],
      [
        ["vault", "set", "tok", "--deliver", "env", "--from-stdin"],
        wrongEnv,
        1,
        /^portcullis vault set: wrong passphrase/,
      ],
      [["audit", "sessions"], wrongEnv, 1, /^portcullis audit sessions: wrong passphrase/],
      [["audit", "--json", "show", "1"], wrongEnv, 1, /^portcullis audit show: wrong passphrase/],
      [["audit", "verify", "--file", missing], {}, 2, /^portcullis audit verify: cannot read /],
    ];
    for (const [args, env, code, said] of cases) {
      const r = await runCli(args, { stateDir, env, input: "value-1234567\n" });
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(code);
      expect(r.stderr, args.join(" ")).toMatch(said);
      expect(r.stderr.split("\n"), args.join(" ")).toHaveLength(2);
    }
  });

  it("catalog's and passkey's option refusals name the subcommand, as vault's and audit's do", async () => {
    const stateDir = newStateDir();
    const cases: [string[], string][] = [
      [
        ["catalog", "list", "web", "--bogus"],
        "portcullis catalog list: unknown option --bogus ('portcullis catalog list --help' lists the options).\n",
      ],
      [["catalog", "show", "web", "--revision"], "portcullis catalog show: --revision needs a value.\n"],
      [
        ["catalog", "--json", "--bogus", "diff", "web"],
        "portcullis catalog diff: unknown option --bogus ('portcullis catalog diff --help' lists the options).\n",
      ],
      [
        ["passkey", "list", "--bogus"],
        "portcullis passkey list: unknown option --bogus ('portcullis passkey list --help' lists the options).\n",
      ],
      [["passkey", "list", "--json=1"], "portcullis passkey list: --json takes no value.\n"],
      // no subcommand given: the group, as before
      [
        ["catalog", "--bogus"],
        "portcullis catalog: unknown option --bogus ('portcullis catalog --help' lists the options).\n",
      ],
    ];
    for (const [args, said] of cases) {
      const r = await runCli(args, { stateDir });
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toBe(said);
    }
    // the help each points to is there
    for (const args of [
      ["catalog", "list", "--help"],
      ["passkey", "list", "--help"],
    ]) {
      const help = await runCli(args, { stateDir });
      expect(help.code, args.join(" ")).toBe(0);
      expect(help.stdout).toMatch(/^usage: /);
    }
  });

  it("a missing state directory and a store that cannot be used are named by the command that met them", async () => {
    const missing = join(tempDir(), "no-such-state");
    for (const [name, args] of [
      ["status", ["status"]],
      ["approvals", ["approvals"]],
      // a group's subcommand, wherever its options are written
      ["vault list", ["vault", "list"]],
      ["vault set", ["vault", "set", "tok", "--deliver", "env", "--from-stdin"]],
      ["vault list", ["vault", "--json", "list"]],
      ["audit verify", ["audit", "verify"]],
      ["audit sessions", ["audit", "--json", "sessions"]],
      ["passkey rm", ["passkey", "rm", "-rX9"]],
      ["passkey list", ["passkey", "--json", "list"]],
      ["egress", ["egress"]],
    ] as const) {
      const r = await runCli([...args, "--state-dir", missing]);
      expect(r.code, name).toBe(2);
      expect(r.stderr, name).toMatch(
        new RegExp(`^portcullis ${name}: no state directory at ${missing}: nothing was created\\.`),
      );
    }
    // a store that is not one: the same sentence, named by each command
    const stateDir = newStateDir();
    writeFileSync(join(stateDir, "portcullis.db"), "not a database\n".repeat(100));
    for (const [name, args] of [
      ["grants", ["grants"]],
      ["catalog list", ["catalog", "list", "web"]],
      ["run", ["run", "--label", "x", "--", "true"]],
      ["vault list", ["vault", "list"]],
      ["audit export", ["audit", "export"]],
      ["passkey list", ["passkey", "list"]],
    ] as const) {
      const r = await runCli([...args], { stateDir });
      expect(r.code, name).toBe(2);
      expect(r.stderr, name).toMatch(
        new RegExp(`^portcullis ${name}: the store .* is not a portcullis store`),
      );
    }
  });

  it("a --state-dir given twice to audit, passkey or vault names the subcommand, as catalog's does", async () => {
    const root = tempDir();
    const twice = ["--state-dir", join(root, "a"), "--state-dir", join(root, "b")];
    for (const [name, args] of [
      ["vault set", ["vault", "set", "tok", ...twice]],
      ["vault rm", ["vault", ...twice, "rm", "tok"]],
      ["audit verify", ["audit", "verify", ...twice]],
      ["passkey list", ["passkey", "list", ...twice]],
      ["catalog list", ["catalog", "list", "web", ...twice]],
      // no subcommand given: the group, as before
      ["vault", ["vault", ...twice]],
    ] as const) {
      const r = await runCli([...args]);
      expect(r.code, name).toBe(2);
      expect(r.stderr, name).toBe(`portcullis ${name}: --state-dir is given more than once; give it once.\n`);
    }
  });

  it("doctor on a state directory that does not exist offers no console command for another one", async () => {
    const missing = join(tempDir(), "no-such-state");
    const r = await runCli(["doctor", "--json", "--state-dir", missing]);
    expect(r.code, r.stderr).toBe(1);
    const report = JSON.parse(r.stdout) as { console: unknown; findings: { what: string; next: string }[] };
    expect(report.console).toEqual({ running: false, start: null });
    const text = await runCli(["doctor", "--state-dir", missing]);
    expect(text.stdout).toContain(
      "console          not running (no state directory to run on: see the findings)\n",
    );
    expect(report.findings.some((f) => f.what.includes("does not exist"))).toBe(true);
  });
});
