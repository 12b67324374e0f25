// The help texts and the README's "Commands" block say what the commands accept: every flag
// below is named by the command's own --help, by `portcullis --help` and by the README (deny's
// --verbose and --chain also run). Real CLI processes; each `portcullis WORDS --help` is run once
// for the file (helpOf), as its text depends on the words alone, and several cases read it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type CliResult, runCli } from "../helpers/gateway.js";
import { REPO } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

/** [the command's words, flags it takes that every help must name] */
const FLAGS: [string[], string[]][] = [
  [["approvals"], ["--json", "--watch", "--verbose", "--all"]],
  [["approve"], ["--next", "--for", "--json", "--verbose"]],
  [["deny"], ["--next", "--reason", "--json", "--verbose"]],
  [
    ["catalog", "show"],
    ["--revision", "--json"],
  ],
  [["console"], ["--port", "--no-open", "--proof-window", "--idle-timeout"]],
  [["demo"], ["--keep", "--console"]],
  [["status"], ["--json", "--all"]],
  [["grants"], ["--json"]],
  [["egress"], ["--json"]],
  [["doctor"], ["--json"]],
  [["unlock"], ["--for"]],
  [["wrap"], ["--dry-run", "--servers", "--label"]],
  [["drill"], ["--file", "--rebuild", "--tool", "--args"]],
];

const helpRuns = new Map<string, Promise<CliResult>>();
let helpHome: string | undefined;

/**
 * `portcullis WORDS --help` (`portcullis --help` for none), run on the first ask and shared by the
 * cases after it: one process for each help text, not one for each case that reads it.
 */
function helpOf(words: string[]): Promise<CliResult> {
  const key = words.join(" ");
  let run = helpRuns.get(key);
  if (!run) {
    helpHome ??= newStateDir();
    run = runCli([...words, "--help"], { stateDir: helpHome });
    helpRuns.set(key, run);
  }
  return run;
}

/** The lines of `text` about one command: from a line naming it to the next one naming another. */
function linesOf(text: string, prefix: RegExp, words: string[]): string {
  const lines = text.split("\n");
  const start = lines.findIndex((l) => new RegExp(`${prefix.source}${words.join(" ")}\\b`).test(l));
  expect(start, `a line for ${words.join(" ")}`).toBeGreaterThanOrEqual(0);
  const end = lines.findIndex((l, i) => i > start && prefix.test(l) && !/^\s{10,}/.test(l));
  return lines.slice(start, end === -1 ? undefined : end).join("\n");
}

const readmeCommands = (): string => {
  const readme = readFileSync(join(REPO, "README.md"), "utf8");
  return /## Commands\n\n```\n([\s\S]*?)```/.exec(readme)![1]!;
};

describe("help and README name what the commands accept", () => {
  it("each flag is named by the command's --help, `portcullis --help` and the README", async () => {
    const top = await helpOf([]);
    expect(top.code).toBe(0);
    const readme = readmeCommands();
    for (const [words, flags] of FLAGS) {
      const help = await helpOf(words);
      expect(help.code, `${words.join(" ")} --help`).toBe(0);
      const topLines = linesOf(top.stdout, /^ {2}/, words);
      // the README writes `portcullis deny …`, sometimes two commands to a line
      const readmeLines = readme
        .split("\n")
        .filter((l) => l.includes(`portcullis ${words.join(" ")} `))
        .map((l) => l.slice(l.indexOf(`portcullis ${words.join(" ")} `)).split(/ {3,}portcullis /)[0])
        .join("\n");
      for (const flag of flags) {
        expect(help.stdout, `${words.join(" ")} --help names ${flag}`).toContain(flag);
        expect(topLines, `portcullis --help names ${words.join(" ")} ${flag}`).toContain(flag);
        expect(readmeLines, `README names ${words.join(" ")} ${flag}`).toContain(flag);
      }
    }
  });

  it("every command that acts on a state directory names --state-dir in its own --help", async () => {
    for (const words of [
      ["status"],
      ["grants"],
      ["approvals"],
      ["approve"],
      ["revoke"],
      ["catalog"],
      ["egress"],
      ["passkey"],
      ["audit"],
      ["vault"],
      ["unlock"],
      ["lock"],
      ["console"],
      ["run"],
      ["init"],
      ["doctor"],
    ]) {
      const r = await helpOf(words);
      expect(r.code, words.join(" ")).toBe(0);
      expect(r.stdout, words.join(" ")).toContain("--state-dir");
    }
  });

  it("deny takes --verbose and --chain, as approve does, and its help says so", async () => {
    for (const cmd of ["approve", "deny"]) {
      for (const flag of ["--verbose", "--chain"]) {
        // parsed before --help is acted on: an unknown flag would be exit 2
        const r = await runCli([cmd, flag, "--help"], { stateDir: newStateDir() });
        expect(r.code, `${cmd} ${flag}`).toBe(0);
        expect(r.stdout).toMatch(/--verbose .*whole process chain \(also --chain\)/);
      }
    }
  });

  it("every flag the README's Commands block gives a command is named by that command's --help", async () => {
    // the block's lines, each command's segment (`portcullis CMD …` up to the next `portcullis`)
    // and the lines that continue it (run's options run over several indented lines)
    const segments: [string, string][] = [];
    for (const line of readmeCommands().split("\n")) {
      if (!line.includes("portcullis ")) {
        const last = segments.at(-1);
        if (last) last[1] += ` ${line}`;
        continue;
      }
      for (const part of line.split(/(?=portcullis )/).filter((p) => p.startsWith("portcullis "))) {
        const command = /^portcullis ([a-z][a-z-]*)/.exec(part)?.[1];
        if (command) segments.push([command, part]);
      }
    }
    expect(segments.length).toBeGreaterThan(20);
    const helps = new Map<string, string>();
    for (const [command, text] of segments) {
      if (command === "help") continue;
      if (!helps.has(command)) {
        const r = await helpOf([command]);
        expect(r.code, `${command} --help`).toBe(0);
        helps.set(command, r.stdout);
      }
      for (const [flag] of text.matchAll(/--[a-z][a-z-]*/g))
        expect(helps.get(command), `${command} --help names ${flag} (README: ${text.trim()})`).toContain(
          flag,
        );
    }
  });

  it("--version is named by `portcullis --help` and the README's Commands block, and works", async () => {
    const top = await helpOf([]);
    expect(top.stdout).toContain("portcullis --version");
    expect(readmeCommands()).toContain("portcullis --version");
    const version = await runCli(["--version"]);
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^portcullis \d+\.\d+\.\d+\n$/);
  });

  it("catalog diff LABEL [FROM TO] is in the README", () => {
    expect(readmeCommands()).toContain("portcullis catalog diff LABEL [FROM TO] [--json]");
  });

  it("audit checkpoint --json: documented, and the same JSON as without it", async () => {
    const stateDir = newStateDir();
    const help = await helpOf(["audit"]);
    expect(help.stdout).toMatch(/audit checkpoint \[--json\]/);
    expect(readmeCommands()).toMatch(/checkpoint \[--json\]/);
    const plain = await runCli(["audit", "checkpoint", "--state-dir", stateDir]);
    const json = await runCli(["audit", "checkpoint", "--json", "--state-dir", stateDir]);
    expect(json.code, json.stderr).toBe(0);
    const head = (text: string) => {
      const { seq, hash } = JSON.parse(text);
      return { seq, hash };
    };
    expect(head(json.stdout)).toEqual(head(plain.stdout));
  });

  // Every read command takes --json; export, whose output is always lines of JSON, refused it
  // ("unknown option --json", exit 2), as checkpoint did before it accepted it.
  it("audit export --json: documented, and the same lines as without it", async () => {
    const stateDir = newStateDir();
    const help = await helpOf(["audit"]);
    expect(help.stdout).toMatch(/audit export \[--json\]/);
    expect(readmeCommands()).toMatch(/audit export \[--json\]/);
    const plain = await runCli(["audit", "export", "--state-dir", stateDir]);
    const json = await runCli(["audit", "export", "--json", "--state-dir", stateDir]);
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout).toBe(plain.stdout);
    for (const line of json.stdout.split("\n").filter((l) => l !== "")) JSON.parse(line);
  });
});

describe("the command word", () => {
  it("`help COMMAND` is that command's --help; an unknown one is refused", async () => {
    for (const command of ["run", "status", "approve", "audit"]) {
      const help = await runCli(["help", command]);
      const own = await helpOf([command]);
      expect(help.code, `help ${command}`).toBe(0);
      expect(help.stdout, `help ${command}`).toBe(own.stdout);
      // on stdout, run's too (it was written to stderr: `run --help | grep listen` found nothing)
      expect(help.stdout).toMatch(new RegExp(`^usage:\\s+portcullis ${command}`, "i"));
      expect(own.stderr, `${command} --help`).toBe("");
    }
    // every command: each is served from a file of its own (scripts/bundle.mjs), and one left
    // out of the dispatch would reach a file that cannot load it
    const table = readFileSync(join(REPO, "src", "cli", "main.ts"), "utf8");
    const named = [
      ...[...table.matchAll(/^ {2}"?([a-z][\w-]*)"?: async \(\) =>/gm)].map((m) => m[1]!),
      ...JSON.parse(/for \(const name of (\[[^\]]*\]) as const\)/.exec(table)![1]!),
    ] as string[];
    expect(named).toEqual(
      expect.arrayContaining(["run", "status", "approve", "revoke", "unlock", "lock", "demo"]),
    );
    for (const command of named.filter((c) => !["run", "status", "approve", "audit"].includes(c))) {
      const help = await runCli(["help", command]);
      expect(help.code, `help ${command}`).toBe(0);
      expect(help.stdout, `help ${command}`).toMatch(
        new RegExp(`^usage:(?:.*\\n)*?\\s+portcullis ${command}\\b`, "i"),
      );
    }
    const unknown = await runCli(["help", "lsit"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(
      // the command it most likely meant, as `portcullis lsit` says it
      "portcullis help: unknown command \"lsit\" (did you mean init?); run 'portcullis --help' for the list.\n",
    );
  });

  it("every command's failure names the command once: 'portcullis CMD: …', never 'portcullis: CMD: …'", async () => {
    const table = readFileSync(join(REPO, "src", "cli", "main.ts"), "utf8");
    const named = [
      ...[...table.matchAll(/^ {2}"?([a-z][\w-]*)"?: async \(\) =>/gm)].map((m) => m[1]!),
      ...JSON.parse(/for \(const name of (\[[^\]]*\]) as const\)/.exec(table)![1]!),
    ] as string[];
    expect(named.length).toBeGreaterThan(15);
    const stateDir = newStateDir();
    for (const command of named) {
      const r = await runCli([command, "--no-such-option"], { stateDir });
      expect(r.code, command).toBe(2);
      // a command group reads the word as its subcommand's name (not shown: it may be a secret)
      expect(r.stderr, command).toMatch(
        new RegExp(`^portcullis ${command}: [^\\n]*(?:--no-such-option|subcommand)`),
      );
    }
    for (const args of [
      ["vault", "set", "--no-such-option"],
      ["catalog", "diff", "--no-such-option"],
      ["passkey", "list", "--no-such-option"],
    ]) {
      const r = await runCli(args, { stateDir });
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toMatch(
        new RegExp(`^portcullis ${args[0]}(?: ${args[1]})?: [^\\n]*--no-such-option`),
      );
    }
  });

  it("a command or a command group without what it needs: the help on stdout, one sentence on stderr, exit 2", async () => {
    const stateDir = newStateDir();
    for (const [args, said] of [
      [[], "portcullis: give a command; the help above says what each does.\n"],
      [
        ["audit"],
        "portcullis audit: give a subcommand (verify, export, checkpoint, sessions, activity, show); the help above says what each does.\n",
      ],
      [
        ["vault"],
        "portcullis vault: give a subcommand (set, list, rm); the help above says what each does.\n",
      ],
      [
        ["catalog"],
        "portcullis catalog: give a subcommand (show, diff, list); the help above says what each does.\n",
      ],
      [
        ["passkey"],
        "portcullis passkey: give a subcommand (list, add, rm); the help above says what each does.\n",
      ],
    ] as const) {
      const r = await runCli([...args], { stateDir });
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stdout, args.join(" ")).toMatch(/portcullis/);
      expect(r.stderr, args.join(" ")).toBe(said);
    }
  });

  it("every command's help opens the same way: 'usage: portcullis COMMAND'", async () => {
    for (const command of [
      "run",
      "status",
      "catalog",
      "approvals",
      "approve",
      "deny",
      "grants",
      "revoke",
      "init",
      "passkey",
      "vault",
      "unlock",
      "lock",
      "egress",
      "audit",
      "console",
      "demo",
      "wrap",
      "unwrap",
      "doctor",
      "drill",
    ]) {
      const help = await helpOf([command]);
      expect(help.code, command).toBe(0);
      // init, vault (unlock, lock) and audit opened with "Usage:", the others with "usage:"
      expect(help.stdout, command).toMatch(/^usage:\s+portcullis /);
    }
  });

  it("an option before the command is said to go after it", async () => {
    const r = await runCli(["--state-dir", newStateDir(), "status"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "portcullis: --state-dir goes after the command (portcullis COMMAND --state-dir …); run 'portcullis --help' for the commands.\n",
    );
  });

  // The tables of commands and subcommands are plain objects: a name found on Object.prototype
  // was taken for a command and failed with an internal error and a stack (exit 70).
  it("a name of Object.prototype is an unknown command, not an internal error", async () => {
    const stateDir = newStateDir();
    for (const args of [
      ["constructor"],
      ["toString"],
      ["__proto__"],
      ["hasOwnProperty"],
      ["help", "constructor"],
      ["audit", "constructor"],
      ["audit", "toString"],
    ]) {
      const r = await runCli(args, { stateDir });
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toMatch(
        /^portcullis(?: audit| help)?: unknown (?:sub)?command (?:"|\(not shown)/,
      );
      expect(r.stderr, args.join(" ")).not.toMatch(/internal error|\n\s+at /);
    }
  });
});
