// The flags each command's parser accepts, learnt from the parser itself (a preload records the
// options every strict node:util parseArgs call is given: test/fixtures/parse-args-recorder.cjs),
// against what the help texts and the README's "Commands" block say: a flag the parser takes and
// no text names (console's --on-demand was in no --help), and a flag a text names that the parser
// refuses, both fail here. Real CLI processes.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { REPO } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

const RECORDER = join(REPO, "test", "fixtures", "parse-args-recorder.cjs");

/**
 * Every command line with a parser of its own, as the docs name it, and the words that reach it
 * (`--help` is added). The demo is read without --help, which it answers before parsing: a
 * --state-dir it refuses once its options are parsed.
 */
const COMMANDS: [name: string, words: string[]][] = [
  ["run", ["run"]],
  ["status", ["status"]],
  ["catalog show", ["catalog", "show"]],
  ["catalog diff", ["catalog", "diff"]],
  ["catalog list", ["catalog", "list"]],
  ["init", ["init"]],
  ["passphrase", ["passphrase"]],
  ["rotate-keys", ["rotate-keys"]],
  ["audit verify", ["audit", "verify"]],
  ["audit export", ["audit", "export"]],
  ["audit checkpoint", ["audit", "checkpoint"]],
  ["audit sessions", ["audit", "sessions"]],
  ["audit activity", ["audit", "activity"]],
  ["audit show", ["audit", "show"]],
  ["passkey list", ["passkey", "list"]],
  ["passkey add", ["passkey", "add"]],
  ["passkey rm", ["passkey", "rm"]],
  ["demo", ["demo", "--state-dir", "/nonexistent"]],
  ["wrap", ["wrap"]],
  ["unwrap", ["unwrap"]],
  ["doctor", ["doctor"]],
  ["console", ["console"]],
  ["drill", ["drill"]],
  ["vault set", ["vault", "set"]],
  ["vault list", ["vault", "list"]],
  ["vault rm", ["vault", "rm"]],
  ["unlock", ["unlock"]],
  ["lock", ["lock"]],
  ["egress", ["egress"]],
  ["approvals", ["approvals"]],
  ["approve", ["approve"]],
  ["deny", ["deny"]],
  ["grants", ["grants"]],
  ["revoke", ["revoke"]],
];

/** A group's main.ts strips --state-dir before its subcommand's parser sees it (main.ts withStateDir). */
const STATE_DIR_TAKEN_BY_MAIN = ["vault", "unlock", "lock", "init", "passphrase", "rotate-keys", "audit"];
/** These make a throwaway state directory of their own and refuse --state-dir, by name. */
const STATE_DIR_REFUSED = ["demo", "drill"];

interface Probe {
  accepted: Set<string>;
  help: string;
}

async function probe(words: string[]): Promise<Probe> {
  const record = join(tempDir("portcullis-flags-"), "parse-args.jsonl");
  const stateDir = newStateDir();
  const r = await runCli(words[0] === "demo" ? words : [...words, "--help"], {
    stateDir,
    env: { PARSE_ARGS_RECORD: record },
    nodeFlags: ["--require", RECORDER],
  });
  expect(r.code, `${words.join(" ")}: ${r.stderr}`).toBe(words[0] === "demo" ? 2 : 0);
  const lines = readFileSync(record, "utf8").trim().split("\n");
  const accepted = new Set(lines.flatMap((l) => JSON.parse(l).options as string[]));
  accepted.delete("help");
  if (STATE_DIR_TAKEN_BY_MAIN.includes(words[0]!)) accepted.add("state-dir");
  const help = words[0] === "demo" ? (await runCli(["demo", "--help"])).stdout : r.stdout;
  return { accepted, help };
}

const readme = readFileSync(join(REPO, "README.md"), "utf8");
const block = /## Commands\n\n```\n([\s\S]*?)```/.exec(readme)![1]!;
const afterBlock = readme.slice(readme.indexOf(block) + block.length).split("\n## ")[0]!;

/** The README block's segments (`portcullis CMD …` to the next `portcullis`), continued lines joined. */
function readmeSegments(): string[] {
  const segments: string[] = [];
  for (const line of block.split("\n")) {
    if (!line.includes("portcullis ")) {
      if (segments.length) segments[segments.length - 1] += ` ${line}`;
      continue;
    }
    for (const part of line.split(/(?=portcullis )/)) if (part.startsWith("portcullis ")) segments.push(part);
  }
  return segments;
}

/** The command a segment `portcullis WORDS…` is about: one of COMMANDS' names, the longest that fits. */
function commandOf(text: string): string | null {
  const words = text.replace(/^portcullis /, "").trim();
  const fits = COMMANDS.map(([n]) => n).filter((n) => words === n || words.startsWith(`${n} `));
  return fits.sort((a, b) => b.length - a.length)[0] ?? null;
}

const flagsIn = (text: string): string[] =>
  [...text.matchAll(/(?<![\w-])--([a-z][a-z-]*)/g)].map((m) => m[1]!);

/** Names a README segment of a group reads as: `audit export … | checkpoint …` is audit's. */
function namesOf(segment: string): string[] {
  const named = commandOf(segment);
  if (!named) return [];
  const group = named.split(" ")[0]!;
  // a segment of a group names each subcommand after `|` (audit) or in `a|b|c`: every one counts
  const subs = COMMANDS.map(([n]) => n).filter((n) => n.startsWith(`${group} `));
  return subs.length && segment.includes("|")
    ? [named, ...subs.filter((s) => segment.includes(s.split(" ")[1]!))]
    : [named];
}

describe("every flag a parser accepts is documented, and every documented flag is accepted", () => {
  const probes = new Map<string, Probe>();
  let top = "";
  beforeAll(async () => {
    await Promise.all(COMMANDS.map(async ([name, words]) => probes.set(name, await probe(words))));
    top = (await runCli(["--help"])).stdout;
  }, 60_000);

  it("the recorder saw each parser (a command with none would pass everything unseen)", () => {
    expect(probes.get("run")!.accepted).toContain("listen");
    expect(probes.get("demo")!.accepted).toEqual(new Set(["keep", "console"]));
    expect(probes.get("audit verify")!.accepted).toContain("checkpoint");
  });

  it("every read command takes --json", () => {
    const reads = ["status", "catalog show", "catalog diff", "catalog list", "approvals", "grants", "egress"];
    reads.push("doctor", "vault list", "passkey list", "audit verify", "audit export", "audit checkpoint");
    reads.push("audit sessions", "audit activity", "audit show");
    expect(reads.filter((name) => !probes.get(name)!.accepted.has("json"))).toEqual([]);
  });

  it("the command's own --help names each flag its parser accepts", () => {
    const missing: string[] = [];
    for (const [name, { accepted, help }] of probes)
      for (const flag of accepted) {
        if (flag === "state-dir" && STATE_DIR_REFUSED.includes(name)) continue;
        if (!help.includes(`--${flag}`)) missing.push(`${name} --${flag}`);
      }
    expect(missing).toEqual([]);
  });

  it("the README's Commands block names each flag, --state-dir, --chain and --on-demand in the lines after it", () => {
    const segments = readmeSegments();
    const missing: string[] = [];
    for (const [name, { accepted }] of probes) {
      // a group's lines together: catalog's and passkey's one parser takes every subcommand's
      // flags (and refuses one given to another subcommand after parsing)
      const group = name.split(" ")[0]!;
      const text = segments.filter((s) => namesOf(s).some((n) => n.split(" ")[0] === group)).join("\n");
      expect(text, `README block has a line for ${name}`).not.toBe("");
      for (const flag of accepted) {
        if (flag === "state-dir" || flag === "chain" || (name === "console" && flag === "on-demand"))
          continue;
        if (!text.includes(`--${flag}`)) missing.push(`${name} --${flag}`);
      }
    }
    expect(missing).toEqual([]);
    expect(afterBlock).toMatch(/uses a state directory takes `--state-dir DIR`/);
    expect(afterBlock).toMatch(
      /`--verbose` of `approvals`,\s+`approve` and `deny` is also written `--chain`/,
    );
    expect(afterBlock).toMatch(/`console --on-demand`/);
    expect(readFileSync(join(REPO, "docs", "console.md"), "utf8")).toContain(
      "portcullis console --no-open --on-demand",
    );
  });

  it("each flag the README's Commands block gives a command is one its parser accepts", () => {
    const refused: string[] = [];
    for (const segment of readmeSegments()) {
      const names = namesOf(segment);
      if (names.length === 0) continue;
      const accepted = new Set(names.flatMap((n) => [...probes.get(n)!.accepted]));
      for (const flag of flagsIn(segment)) if (!accepted.has(flag)) refused.push(`${names[0]} --${flag}`);
    }
    expect(refused).toEqual([]);
  });

  it("each flag a help's usage lines and option lines name is one the parser accepts", () => {
    const refused: string[] = [];
    // a help printed by several commands (a group's, wrap and unwrap's): its option lines may be any of theirs
    const byHelp = new Map<string, Set<string>>();
    for (const { accepted, help } of probes.values())
      byHelp.set(help, new Set([...(byHelp.get(help) ?? []), ...accepted]));
    for (const [help, accepted] of byHelp) {
      let usage: string | null = null;
      for (const line of help.split("\n")) {
        const option = /^ {2}--([a-z][a-z-]*)/.exec(line)?.[1];
        if (option && !accepted.has(option)) refused.push(`option line: --${option}`);
        const at = line.indexOf("portcullis ");
        if (at !== -1 && /^(?:usage:)?\s*$/i.test(line.slice(0, at))) usage = commandOf(line.slice(at));
        else if (!/^\s+\[/.test(line)) usage = null;
        if (usage === null) continue;
        // the usage's own words, not the description a group's usage has after it
        const words = line.slice(at === -1 ? 0 : at).split(/ {3,}(?!\[)/)[0]!;
        for (const flag of flagsIn(words))
          if (!probes.get(usage)!.accepted.has(flag))
            refused.push(`${usage} --${flag} (usage: ${words.trim()})`);
      }
    }
    expect(refused).toEqual([]);
  });

  it("each flag `portcullis --help` gives a command is one its parser accepts", () => {
    const refused: string[] = [];
    let current: string | null = null;
    for (const line of top.split("\n")) {
      // a continued usage (`          [--idle-timeout S]`) goes on with the command before it
      if (/^ {3,}\[/.test(line) && current) {
        for (const flag of flagsIn(line.trim().split(/ {3,}/)[0]!))
          if (!probes.get(current)!.accepted.has(flag)) refused.push(`${current} --${flag}`);
        continue;
      }
      current = null;
      if (!/^ {2}[a-z]/.test(line)) continue;
      // `grants [--json]  revoke GRANT [--json]`: two commands; the description after 3+ spaces
      for (const part of line
        .trim()
        .split(/ {3,}/)[0]!
        .split(/ {2}(?=[a-z])/)) {
        const name = commandOf(part);
        if (!name) continue;
        current = name;
        for (const flag of flagsIn(part))
          if (!probes.get(name)!.accepted.has(flag)) refused.push(`${name} --${flag}`);
      }
    }
    expect(refused).toEqual([]);
  });
});
