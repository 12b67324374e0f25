// "A label is plain by rule, in portcullis.json and for `run --label` alike (letters, digits, `.`,
// `_`, `-`; anything else is a usage error)" (docs/security.md). `run --label` is attacked in
// terminal-escapes.test.ts; here the other half: a portcullis.json whose servers are keyed by
// what a hostile repository (or an agent that writes the project's files) would put there. The
// file is refused whole (exit 2, naming the file and the key, the key shown escaped), whichever
// of its labels is asked for, and no server of it starts: each entry's command writes a marker.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LABEL_PATTERN } from "../../src/config/config.js";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** C0 and C1 control characters other than the newline a message ends with. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are the subject
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
/** Bidi overrides and isolates, zero-width and other format characters, line separators. */
const HIDDEN = /[\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/;

/** The maximum, from the rule itself: a first character and up to 63 more. */
const MAX = 64;

// a label that is not a plain name is shown quoted in brackets (as every key of the file that is
// not), its hidden characters escaped: `servers.a b` read as two words, `servers["a b"]` does not
const BAD: [what: string, key: string, shown: string][] = [
  ["a space", "a b", 'servers["a b"] '],
  ["ESC (a colour)", "a\u001b[31mb", 'servers["a\\u001b[31mb"] '],
  ["an OSC title with BEL", "a\u001b]0;pwned\u0007b", 'servers["a\\u001b]0;pwned\\u0007b"] '],
  ["a C1 CSI", "a\u009b2Jb", 'servers["a\\u009b2Jb"] '],
  ["a right-to-left override", "ok\u202egnp.exe", 'servers["ok\\u202egnp.exe"] '],
  ["a zero-width space", "o\u200bk", 'servers["o\\u200bk"] '],
  ["a line separator", "a\u2028b", 'servers["a\\u2028b"] '],
  [`${MAX + 1} characters`, "x".repeat(MAX + 1), `servers["${"x".repeat(MAX)}… (${MAX + 1} characters)"] `],
  ["a leading '-'", "-x", "servers.-x "],
  ["a leading '.'", ".x", 'servers[".x"] '],
  ["the empty string", "", 'servers[""] '],
  ["a letter of another script", "d\u0435ploy", 'servers["d\u0435ploy"] '],
];

/** A project directory whose portcullis.json holds `servers`, each entry's command writing `marker`. */
function project(keys: string[], top: "servers" | "mcpServers" = "servers") {
  const dir = tempDir("portcullis-label-rule-");
  const marker = join(dir, "started");
  const entry = {
    command: NODE,
    args: ["-e", "require('fs').appendFileSync(process.argv[1], 'started\\n')", marker],
  };
  const servers: Record<string, unknown> = {};
  for (const k of keys) servers[k] = entry;
  const file = join(dir, "portcullis.json");
  // JSON.stringify writes control characters as \u escapes, the others as they are: a hostile
  // file may hold either, both decode to the same key
  writeFileSync(file, `${JSON.stringify({ [top]: servers }, null, 2)}\n`);
  return { dir, file, marker };
}

describe("a portcullis.json server key that is not a plain label", () => {
  it("the rule's maximum is what this file attacks", () => {
    expect(LABEL_PATTERN.test("x".repeat(MAX))).toBe(true);
    expect(LABEL_PATTERN.test("x".repeat(MAX + 1))).toBe(false);
  });

  it.each(BAD)(
    "%s: run of another, valid label in the same file is a usage error naming the file and the key; nothing starts",
    async (_what, key, shown) => {
      expect(LABEL_PATTERN.test(key)).toBe(false);
      const stateDir = newStateDir();
      const p = project(["ok", key]);
      const r = await runCli(["run", "ok"], { stateDir, cwd: p.dir, input: "" });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toContain(`${p.file}: ${shown}is not a valid label (`);
      expect(r.stderr).not.toMatch(CONTROL);
      expect(r.stderr).not.toMatch(HIDDEN);
      expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
      expect(existsSync(p.marker), "a server of the refused file started").toBe(false);

      // given with --config from elsewhere, and under the mcpServers alias: the same
      const q = project([key, "ok"], "mcpServers");
      const elsewhere = tempDir("portcullis-label-cwd-");
      const r2 = await runCli(["run", "ok", "--config", q.file], { stateDir, cwd: elsewhere, input: "" });
      expect(r2.code, r2.stderr).toBe(2);
      expect(r2.stderr).toContain(
        `${q.file}: mcpServers${shown.slice("servers".length)}is not a valid label (`,
      );
      expect(r2.stderr).not.toMatch(CONTROL);
      expect(r2.stderr).not.toMatch(HIDDEN);
      expect(existsSync(q.marker)).toBe(false);
    },
  );

  it.each(BAD)("%s: run of that label itself is a usage error; nothing starts", async (_what, key) => {
    const stateDir = newStateDir();
    const p = project([key]);
    // "-x" as a word is an option to run; every form is refused before anything starts
    const r = await runCli(["run", key], { stateDir, cwd: p.dir, input: "" });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).not.toMatch(CONTROL);
    expect(r.stderr).not.toMatch(HIDDEN);
    expect(existsSync(p.marker), "a server of the refused file started").toBe(false);
  });

  it(`a key of ${MAX} plain characters is a label: its server starts (the marker works)`, async () => {
    const stateDir = newStateDir();
    const longest = `a${"b.c_d-9".repeat(9)}`.slice(0, MAX);
    expect(longest).toHaveLength(MAX);
    const p = project(["ok", longest]);
    const r = await runCli(["run", longest], { stateDir, cwd: p.dir, input: "" });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`portcullis[${longest}]: serving`);
    expect(existsSync(p.marker)).toBe(true);
  });

  it("a bad key in a file found upward from a subdirectory is refused the same", async () => {
    const stateDir = newStateDir();
    const p = project(["ok", "a\u001b[2Jb"]);
    const sub = join(p.dir, "src", "deep");
    mkdirSync(sub, { recursive: true });
    const r = await runCli(["run", "ok"], { stateDir, cwd: sub, input: "" });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`${p.file}: servers["a\\u001b[2Jb"] is not a valid label (`);
    expect(r.stderr).not.toMatch(CONTROL);
    expect(existsSync(p.marker)).toBe(false);
  });
});
