// A state directory that does not exist (a typo in --state-dir or PORTCULLIS_HOME) is refused by
// every command that acts on state, including those given no other argument: `lock` must not say
// "the vault was already locked" about a directory no gateway uses while the real vault stays
// unlocked. And a state directory that is a file is refused by init too. The real CLI.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { commandNamed } from "../helpers/commandNamed.js";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { passphraseEnv } from "../helpers/state.js";

describe("a state directory that is not there", () => {
  it.each([["lock"], ["unlock"]])("bare `%s` refuses it and creates nothing", async (command) => {
    const missing = join(tempDir(), "typo");
    const env = passphraseEnv();
    for (const r of [
      await runCli([command, "--state-dir", missing], { env }),
      await runCli([command], { stateDir: missing, env }), // PORTCULLIS_HOME
    ]) {
      expect(r.code).toBe(2);
      expect(r.stdout).not.toMatch(/already locked|vault locked|unlocked/);
      expect(r.stderr).toBe(
        `portcullis ${command}: no state directory at ${missing}: nothing was created. A gateway started with another --state-dir or PORTCULLIS_HOME keeps its state elsewhere; give the same one here. To set up this one, run: portcullis init --state-dir ${missing}\n`,
      );
    }
    expect(existsSync(missing)).toBe(false);
  });

  it("a first command before any init says how to set up the default one", async () => {
    const home = tempDir("portcullis-home-");
    const r = await runCli(["status"], { env: { HOME: home } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `no state directory at ${join(home, ".local", "state", "portcullis")}: nothing was created.`,
    );
    expect(r.stderr).toMatch(/ To set up this one, run: portcullis init\n$/);
    expect(existsSync(join(home, ".local"))).toBe(false);
  });

  it("the init it prints pastes whole into bash, the path holding a quote, a space, a newline or an escape sequence", async () => {
    for (const name of ["it's a dir", "new\nline\u001b[2J"]) {
      const missing = join(tempDir(), name);
      const r = await runCli(["status", "--state-dir", missing]);
      expect(r.code).toBe(2);
      // the command last, after a colon, in no quotes of the sentence's own; nothing printed raw
      const printed = /To set up this one, run: (portcullis init .+)\n$/.exec(r.stderr)?.[1];
      expect(printed, r.stderr).toBeDefined();
      // biome-ignore lint/suspicious/noControlCharactersInRegex: what must not be printed
      expect(printed).not.toMatch(/[\u0000-\u001f\u007f]/);
      const pasted = spawnSync("bash", ["-c", `portcullis() { "$NODE_BIN" "$CLI_JS" "$@"; }\n${printed}`], {
        env: { ...process.env, ...passphraseEnv(), PORTCULLIS_HOME: "", NODE_BIN: NODE, CLI_JS: CLI },
        encoding: "utf8",
      });
      expect(pasted.status, pasted.stderr).toBe(0);
      expect(readdirSync(missing)).toContain("keyring.json");
    }
  });

  it("run refuses it as it refuses a directory without a keyring, and makes nothing", async () => {
    const missing = join(tempDir(), "typo", "state");
    const r = await runCli(["run", "--state-dir", missing, "--", NODE, "-e", "0"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `portcullis run: no keyring in ${missing}; set it up first (it asks for a passphrase once) with: portcullis init --state-dir ${missing}\n`,
    );
    expect(existsSync(join(missing, ".."))).toBe(false);
  });

  it("bare audit, vault and passkey still print their help without one", async () => {
    const missing = join(tempDir(), "typo");
    for (const command of ["audit", "vault", "passkey"]) {
      const r = await runCli([command], { stateDir: missing });
      expect(r.code).toBe(2);
      expect(r.stdout).toMatch(/usage/i);
      // one sentence asking for the subcommand, nothing about the state directory
      expect(r.stderr).toMatch(new RegExp(`^portcullis ${command}: give a subcommand \\(`));
      expect(r.stderr).not.toMatch(/state dir/i);
    }
  });

  it("bare init creates it, and refuses a file in its place in one sentence", async () => {
    const made = join(tempDir(), "new");
    const ok = await runCli(["init"], { stateDir: made, env: passphraseEnv() });
    expect(ok.code, ok.stderr).toBe(0);
    expect(existsSync(join(made, "keyring.json"))).toBe(true);

    const file = join(tempDir(), "state");
    writeFileSync(file, "x");
    const r = await runCli(["init"], { stateDir: file, env: passphraseEnv() });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      new RegExp(
        `^portcullis init: the state directory ${file} \\(from PORTCULLIS_HOME\\) is not a directory`,
      ),
    );
    // where the path came from is said, with the fix
    const home = await runCli(["status"], { env: { PORTCULLIS_HOME: file } });
    expect(home.stderr).toBe(
      `portcullis status: the state directory ${file} (from PORTCULLIS_HOME) is not a directory: move that file aside, or give the state directory in use with --state-dir or PORTCULLIS_HOME.\n`,
    );
    expect(r.stderr).not.toMatch(/internal error/);
  });
  it("an empty --state-dir (a variable that was not set) is refused, not taken as the default", async () => {
    const home = tempDir();
    const env = { ...passphraseEnv(), HOME: home, XDG_STATE_HOME: join(home, "xdg") };
    // named by the command, as every failure is
    const said = (command: string) =>
      `portcullis ${command}: --state-dir is empty; give a directory, or leave the flag out for the default.\n`;
    for (const args of [
      ["init", "--state-dir", ""],
      ["status", "--state-dir="],
      ["vault", "list", "--state-dir", ""],
      ["doctor", "--state-dir", ""],
      ["wrap", "--dry-run", "--state-dir", ""],
      ["run", "--state-dir", "", "--", "node", "-e", "0"],
    ]) {
      const r = await runCli(args, { env, cwd: home });
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toBe(said(commandNamed(args)));
    }
    expect(existsSync(join(home, "xdg"))).toBe(false);
    expect(existsSync(join(home, ".local"))).toBe(false);
    // without the flag: $XDG_STATE_HOME/portcullis, as documented
    const made = await runCli(["init"], { env, cwd: home });
    expect(made.code, made.stderr).toBe(0);
    expect(existsSync(join(home, "xdg", "portcullis", "keyring.json"))).toBe(true);
  });
});

describe("a state directory that is there but was never set up by init", () => {
  it("the commands that only read refuse it in one sentence naming it (exit 2) and create no store", async () => {
    const empty = join(tempDir(), "state");
    mkdirSync(empty, { mode: 0o700 });
    const said = (command: string) =>
      `portcullis ${command}: the state directory ${empty} has no keyring and no store (portcullis.db): nothing was created. A gateway started with another --state-dir or PORTCULLIS_HOME keeps its state elsewhere; give the same one here. To set up this one, run: portcullis init --state-dir ${empty}\n`;
    for (const args of [
      ["audit", "verify"],
      ["audit", "export"],
      ["audit", "checkpoint"],
      ["status"],
      ["approvals"],
      ["grants"],
      ["catalog", "list", "inv"],
      ["egress"],
      ["passkey", "list"],
      // not "the vault was already locked": `lock --state-dir ~` left the real vault unlocked
      ["lock"],
    ]) {
      const r = await runCli([...args, "--state-dir", empty]);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stdout, args.join(" ")).toBe("");
      expect(r.stderr, args.join(" ")).toBe(said(commandNamed(args)));
      expect(readdirSync(empty), args.join(" ")).toEqual([]);
    }
    // once init has run, the same directory reads as an empty log
    const init = await runCli(["init", "--state-dir", empty], { env: passphraseEnv() });
    expect(init.code, init.stderr).toBe(0);
    const verify = await runCli(["audit", "verify", "--state-dir", empty]);
    expect(verify.code, verify.stderr).toBe(0);
  });
});

describe("--state-dir given twice", () => {
  it("is refused by every command in one sentence naming it, whichever way it is written, and nothing is created", async () => {
    const root = tempDir();
    const [a, b] = [join(root, "a"), join(root, "b")];
    // commands whose own parser reads it, and those it is taken from before theirs (main.ts):
    // before, status took the last, vault list the first, audit verify said "unknown option"
    for (const command of [
      ["status"],
      ["approvals"],
      ["doctor"],
      ["wrap", "--dry-run"],
      ["audit", "verify"],
      ["vault", "list"],
      ["init"],
      ["lock"],
    ]) {
      for (const twice of [
        ["--state-dir", a, "--state-dir", b],
        [`--state-dir=${a}`, "--state-dir", b],
      ]) {
        const r = await runCli([...command, ...twice], { env: passphraseEnv(), cwd: root });
        expect(r.code, command.join(" ")).toBe(2);
        expect(r.stderr, command.join(" ")).toMatch(
          new RegExp(
            `^portcullis ${commandNamed(command)}: --state-dir is given more than once; give it once\\.\n$`,
          ),
        );
      }
    }
    expect(existsSync(a)).toBe(false);
    expect(existsSync(b)).toBe(false);
  });

  // the commands it is taken from before their own parser (main.ts) said "portcullis: --state-dir
  // needs a directory.", naming no command, where the others said "portcullis status: … needs a value"
  it("without its value, is refused by every command naming the command and the option", async () => {
    for (const command of [
      ["status"],
      ["audit", "verify"],
      ["vault", "list"],
      ["passkey", "list"],
      ["init"],
      ["lock"],
    ]) {
      const r = await runCli([...command, "--state-dir"], { env: passphraseEnv(), cwd: tempDir() });
      expect(r.code, command.join(" ")).toBe(2);
      expect(r.stderr, command.join(" ")).toMatch(
        new RegExp(`^portcullis ${commandNamed(command)}: --state-dir needs a value\\.\n$`),
      );
    }
  });

  it("so is any other option that takes one value (run --label), never naming the values", async () => {
    const r = await runCli(["run", "--label", "one", "--label", "two", "--", "node", "-e", "0"], {
      stateDir: join(tempDir(), "state"),
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("portcullis run: --label is given more than once; give it once.\n");
  });

  // audit and init end the parser's sentence with their own words: one period, at the end
  it("ends with one period where a command adds to the sentence (audit verify --file, init)", async () => {
    const stateDir = join(tempDir(), "state");
    const audit = await runCli(["audit", "verify", "--file", "a", "--file", "b"], { stateDir });
    expect(audit.code).toBe(2);
    expect(audit.stderr).toBe(
      "portcullis audit verify: --file is given more than once; give it once; see 'portcullis audit --help'.\n",
    );
    const needs = await runCli(["audit", "verify", "--file"], { stateDir });
    expect(needs.stderr).toBe(
      "portcullis audit verify: --file needs a value; see 'portcullis audit --help'.\n",
    );
    const init = await runCli(["init", "word"], { stateDir });
    expect(init.code).toBe(2);
    expect(init.stderr).toBe(
      "portcullis init: unexpected argument (1, not shown: a passphrase or a secret is never given on the command line); see portcullis init --help.\n",
    );
  });
});
