// Property tests of wrap and unwrap on generated JSONC host files (src/onboard/wrap.ts,
// document.ts; docs/onboarding.md): Claude Code's .mcp.json and ~/.claude.json (a project's table
// shadowing the user's, another project's table out of reach), Claude Desktop, Cursor, VS Code
// ("servers"). Files carry comments (line and block, between keys, inside args arrays), trailing
// commas, unknown keys at every level, entries on one line or spread over lines, tabs or spaces,
// CRLF, a byte order mark, keys and strings spelled with \u escapes, HTTP entries, entries without
// a command, values that are not entries, entries already wrapped, and servers with and without
// env, cwd and args (with spaces, quotes, backslashes and unicode).
//
// Invariants, in process (wrapFile, planWrap, unwrapFile on a HostFile):
//   1. wrap reports exactly the stdio servers the host runs (not shadowed, not HTTP, with a string
//      command, not already wrapped); the document after wrap is the document before with only
//      those entries' command and args replaced as wrap promises;
//   2. every byte outside the reported entries is unchanged, and inside them every comment outside
//      the old args value is kept, in order;
//   3. a second wrap wraps nothing and writes nothing (file, record and backup bytes unchanged);
//   4. planWrap (what --dry-run runs) writes nothing;
//   5. unwrap gives back the original bytes ("exact");
//   6. wrap, then an edit elsewhere (a key added at the top, a comment at the end, a key added first
//      inside a wrapped entry), then unwrap: the original bytes with that edit ("a file whose only edits since are outside wrap's two
//      values comes back as the user's file with those edits, byte for byte");
//   7. a file that does not parse: OnboardError naming the file, nothing written (the file, its
//      backup, the state directory).
//
//   8. through the real CLI (a few cases: `wrap FILE --dry-run`, `wrap`, `wrap` again, `unwrap`,
//      a damaged file): exit codes, bytes, one line naming the file, no state directory made.
//
// Seen failing when broken: (a) jsonSpelling returning null (restored values re-spelled by
// JSON.stringify) fails 6 on an escaped string; (b) replaceEntriesIn editing each entry with one
// whole-entry jsonc `modify` (no editJsonEntry) fails 2 ("comments of constructor: expected []
// to deeply equal ['// about command']"); (c) planWrap without the isWrapped skip fails 3;
// (d) jsonDocument ignoring parse errors fails 7; (e) src/cli/wrap.ts calling wrapFile for
// --dry-run (rebuilt) fails 8.
//
// Found by it, fixed since (wrap-duplicate-path.test.ts pins the two shapes): a table's own key
// written twice, {"mcpServers": {}, "mcpServers": {"a": {"command": "x"}}}: wrap said "wrapped a"
// and wrote the entry into the FIRST table, while the host (JSON.parse keeps the last key) ran it
// bare; the same with a project's path twice under "projects" in ~/.claude.json. Such a file is
// now refused as a key twice inside a server table is (src/onboard/document.ts,
// refuseDuplicatePath).

import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import {
  createScanner,
  findNodeAtLocation,
  getNodeValue,
  type Node,
  parseTree,
  SyntaxKind,
} from "jsonc-parser";
import { describe, expect, it } from "vitest";
import { OnboardError } from "../../src/onboard/document.js";
import { unknownEntryKeys } from "../../src/onboard/entryKeys.js";
import type { HostFile } from "../../src/onboard/hosts.js";
import { labelFor, planWrap, unwrapFile, wrapFile } from "../../src/onboard/wrap.js";
import { tempDir } from "../helpers/files.js";
import { wrapRoundTripByCli } from "../helpers/wrapRoundTrip.js";

type J = null | boolean | number | string | J[] | { [k: string]: J };

// ---------------------------------------------------------------------------------------------
// the model: servers and documents

type Kind = "stdio" | "http" | "nocommand" | "badcommand" | "notentry" | "wrapped";

interface Server {
  key: string;
  kind: Kind;
  /** props in the order written (a notentry's value is `value`) */
  props: [string, J][];
  value: J;
  oneLine: boolean;
  /** per prop: a comment before it (0 none, 1 line, 2 block) */
  comments: number[];
  trailingComma: boolean;
  argsMultiline: boolean;
}

/** Server keys whose labels (labelFor) differ, so no two wrapped servers clash. */
const KEYS = [
  "alpha",
  "beta",
  "my server",
  "__proto__",
  "constructor",
  "é-srv",
  "a.b",
  "x/y",
  "toString",
  "日本",
];

const str = fc.oneof(
  fc.constantFrom(
    "node",
    "npx",
    "/usr/bin/python3",
    "C:\\tools\\run.exe",
    "a b",
    'say "hi"',
    "é ✓ 日本",
    "😀",
    "--flag=1",
    "-y",
    "",
    "// not a comment",
    "/* nor this */",
    "\\u0041",
    "tab\there",
    "line\nbreak",
    "https://example.com/x",
  ),
  fc.string({ maxLength: 8 }),
  fc.string({ unit: "grapheme", maxLength: 6 }),
);

const extraValue: fc.Arbitrary<J> = fc.oneof(
  fc.constantFrom<J>(true, false, null, 30, 1.5, -0.25, 1e21, [], {}, { a: { b: null } }, ["x", 1, null]),
  str,
);

// keys the hosts read that wrap leaves as they are, and keys they do not read (other clients'
// "disabled", "autoApprove"): an entry with one of those is refused by name (expectedWrapped)
const extraKey = fc.constantFrom(
  "headers",
  "envFile",
  "oauth",
  "auth",
  "disabled",
  "x-note",
  "alwaysAllow",
  "timeout",
  "autoApprove",
  "🙂",
  "__proto__x",
);

const server = (key: string): fc.Arbitrary<Server> =>
  fc
    .record({
      kind: fc.constantFrom<Kind>(
        "stdio",
        "stdio",
        "stdio",
        "stdio",
        "http",
        "nocommand",
        "badcommand",
        "notentry",
        "wrapped",
      ),
      command: str.filter((s) => !/^portcullis/.test(s)),
      args: fc.option(fc.array(str, { maxLength: 4 }), { nil: undefined }),
      env: fc.option(fc.dictionary(fc.constantFrom("A", "LOG_LEVEL", "API_KEY", "é"), str, { maxKeys: 3 }), {
        nil: undefined,
      }),
      cwd: fc.option(str, { nil: undefined }),
      typeStdio: fc.boolean(),
      extras: fc.array(fc.tuple(extraKey, extraValue), { maxLength: 2 }),
      order: fc.array(fc.nat(), { minLength: 12, maxLength: 12 }),
      oneLine: fc.boolean(),
      comments: fc.array(fc.constantFrom(0, 0, 0, 1, 2), { minLength: 12, maxLength: 12 }),
      trailingComma: fc.boolean(),
      argsMultiline: fc.boolean(),
      notEntry: fc.constantFrom<J>("a string", ["a", "list"], null, 7),
    })
    .map((r): Server => {
      const props: [string, J][] = [];
      switch (r.kind) {
        case "stdio":
          props.push(["command", r.command]);
          if (r.args !== undefined) props.push(["args", r.args]);
          if (r.typeStdio) props.push(["type", "stdio"]);
          break;
        case "wrapped":
          props.push(["command", "portcullis"], ["args", ["run", "--label", "x", "--", r.command]]);
          break;
        case "http":
          props.push(["url", "https://example.com/mcp"]);
          if (r.typeStdio) props.push(["type", "http"]);
          break;
        case "badcommand":
          props.push(["command", ["node", "x.js"]]);
          break;
        case "nocommand":
          break;
      }
      if (r.env !== undefined) props.push(["env", r.env]);
      if (r.cwd !== undefined) props.push(["cwd", r.cwd]);
      const seen = new Set(props.map(([k]) => k));
      for (const [k, v] of r.extras)
        if (!seen.has(k)) {
          seen.add(k);
          props.push([k, v]);
        }
      // a stable shuffle by the generated weights
      const order = props.map((p, i) => ({ p, w: r.order[i]! }));
      order.sort((a, b) => a.w - b.w);
      return {
        key,
        kind: r.kind,
        props: order.map((o) => o.p),
        value: r.notEntry,
        oneLine: r.oneLine,
        comments: r.comments,
        trailingComma: r.trailingComma,
        argsMultiline: r.argsMultiline,
      };
    });

const servers = fc
  .uniqueArray(fc.constantFrom(...KEYS), { maxLength: 5 })
  .chain((keys) => (keys.length === 0 ? fc.constant([] as Server[]) : fc.tuple(...keys.map(server))));

type Flavour = "mcpServers" | "vscode" | "claude-home";

interface Doc {
  flavour: Flavour;
  /** the project's table (claude-home), else the one table */
  main: Server[];
  /** claude-home: the user's table (may hold keys of `main`: shadowed) and another project's */
  user: Server[];
  other: Server[];
  indent: string;
  eol: string;
  bom: boolean;
  finalNewline: boolean;
  topComment: boolean;
  extrasBefore: [string, J][];
  extrasAfter: [string, J][];
  tableTrailingComma: boolean;
  escapeStrings: boolean;
  emptyTable: boolean;
  /**
   * The table's key (for ~/.claude.json: the project's path) written once more before the real
   * one, holding this: a file the host reads with JSON.parse, which keeps the last.
   */
  decoy?: J;
}

const doc: fc.Arbitrary<Doc> = fc.record({
  flavour: fc.constantFrom<Flavour>("mcpServers", "vscode", "claude-home"),
  main: servers,
  user: servers,
  other: servers,
  indent: fc.constantFrom("\t", "  ", "    "),
  eol: fc.constantFrom("\n", "\n", "\r\n"),
  bom: fc.boolean(),
  finalNewline: fc.boolean(),
  topComment: fc.boolean(),
  extrasBefore: fc.array(fc.tuple(fc.constantFrom("$schema", "inputs", "numStartups"), extraValue), {
    maxLength: 2,
  }),
  extrasAfter: fc.array(fc.tuple(fc.constantFrom("theme", "tipsHistory", "zz"), extraValue), {
    maxLength: 2,
  }),
  tableTrailingComma: fc.boolean(),
  escapeStrings: fc.boolean(),
  emptyTable: fc.boolean(),
});

/** A string as JSON, perhaps spelled with escapes a person or a tool might write (`\u00e9`, `\/`). */
function jsonString(s: string, escaped: boolean): string {
  const plain = JSON.stringify(s);
  if (!escaped) return plain;
  return plain.replace(/[^\x20-\x7e]|\//g, (c) =>
    c === "/" ? "\\/" : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

function inline(v: J, esc: boolean): string {
  if (typeof v === "string") return jsonString(v, esc);
  if (Array.isArray(v)) return `[${v.map((x) => inline(x, esc)).join(", ")}]`;
  if (v !== null && typeof v === "object")
    return `{ ${Object.entries(v)
      .map(([k, x]) => `${jsonString(k, esc)}: ${inline(x, esc)}`)
      .join(", ")} }`;
  return JSON.stringify(v);
}

function render(d: Doc): string {
  const { indent: ind, eol } = d;
  const esc = d.escapeStrings;
  const pad = (n: number) => ind.repeat(n);
  const entry = (s: Server, depth: number): string => {
    if (s.kind === "notentry") return inline(s.value, esc);
    if (s.oneLine || s.props.length === 0) {
      const parts = s.props.map(
        ([k, v], i) => `${s.comments[i] === 2 ? "/* c */ " : ""}${jsonString(k, esc)}: ${inline(v, esc)}`,
      );
      return `{ ${parts.join(", ")}${s.trailingComma && parts.length ? "," : ""} }`;
    }
    const lines = s.props.map(([k, v], i) => {
      const c = s.comments[i];
      const before =
        c === 1 ? `${pad(depth + 1)}// about ${k}${eol}` : c === 2 ? `${pad(depth + 1)}/* ${k} */ ` : "";
      let value = inline(v, esc);
      if (k === "args" && Array.isArray(v) && s.argsMultiline && v.length > 0)
        value = `[${eol}${v.map((a, j) => `${pad(depth + 2)}${inline(a, esc)},${j === 0 ? " // first" : ""}`).join(eol)}${eol}${pad(depth + 1)}]`;
      return `${before}${c === 2 ? "" : pad(depth + 1)}${jsonString(k, esc)}: ${value}`;
    });
    return `{${eol}${lines.join(`,${eol}`)}${s.trailingComma ? "," : ""}${eol}${pad(depth)}}`;
  };
  const table = (ss: Server[], depth: number): string => {
    if (ss.length === 0) return "{}";
    const lines = ss.map((s) => `${pad(depth + 1)}${jsonString(s.key, esc)}: ${entry(s, depth + 1)}`);
    return `{${eol}${lines.join(`,${eol}`)}${d.tableTrailingComma ? "," : ""}${eol}${pad(depth)}}`;
  };
  const top: string[] = [];
  const prop = (k: string, v: string) => `${pad(1)}${JSON.stringify(k)}: ${v}`;
  for (const [k, v] of d.extrasBefore)
    if (!top.some((l) => l.startsWith(prop(k, "")))) top.push(prop(k, inline(v, esc)));
  const name = d.flavour === "vscode" ? "servers" : "mcpServers";
  const decoy = (key: string, depth: number) =>
    d.decoy === undefined ? "" : `${pad(depth)}${JSON.stringify(key)}: ${inline(d.decoy, esc)},${eol}`;
  if (d.flavour !== "claude-home" && d.decoy !== undefined)
    top.push(decoy(name, 1).slice(0, -1 - eol.length));
  if (d.flavour === "claude-home") {
    top.push(
      prop(
        "projects",
        `{${eol}${pad(2)}"/other/project": { "mcpServers": ${table(d.other, 2)} },${eol}${decoy(PROJECT, 2)}${pad(2)}${JSON.stringify(PROJECT)}: {${eol}${pad(3)}"allowedTools": [],${eol}${pad(3)}"mcpServers": ${table(d.main, 3)}${eol}${pad(2)}}${eol}${pad(1)}}`,
      ),
    );
    top.push(prop("mcpServers", table(d.user, 1)));
  } else if (!(d.emptyTable && d.main.length === 0)) top.push(prop(name, table(d.main, 1)));
  for (const [k, v] of d.extrasAfter)
    if (!top.some((l) => l.startsWith(prop(k, "")))) top.push(prop(k, inline(v, esc)));
  const head = d.topComment ? `// ${d.flavour} configuration${eol}/* more */${eol}` : "";
  const body = top.length === 0 ? "{}" : `{${eol}${top.join(`,${eol}`)}${eol}}`;
  return `${d.bom ? "\uFEFF" : ""}${head}${body}${d.finalNewline ? eol : ""}`;
}

const PROJECT = "/home/me/project";

function hostOf(d: Doc, file: string): HostFile {
  if (d.flavour === "vscode") return { host: "vscode", file, format: "jsonc", tables: [["servers"]] };
  if (d.flavour === "claude-home")
    return {
      host: "claude-code",
      file,
      format: "jsonc",
      tables: [["projects", PROJECT, "mcpServers"], ["mcpServers"]],
    };
  return { host: "cursor", file, format: "jsonc", tables: [["mcpServers"]] };
}

/** The servers the host runs from here, in order, with their table: shadowed ones left out. */
function tablesOf(d: Doc): { table: string[]; servers: Server[] }[] {
  if (d.flavour === "vscode") return [{ table: ["servers"], servers: d.main }];
  if (d.flavour === "claude-home")
    return [
      { table: ["projects", PROJECT, "mcpServers"], servers: d.main },
      { table: ["mcpServers"], servers: d.user },
    ];
  return [{ table: ["mcpServers"], servers: d.main }];
}

function expectedWrapped(d: Doc): { table: string[]; s: Server }[] {
  const host = hostOf(d, "mcp.json");
  const seen = new Set<string>();
  const out: { table: string[]; s: Server }[] = [];
  for (const { table, servers: ss } of tablesOf(d))
    for (const s of ss) {
      if (s.kind === "notentry") continue;
      if (seen.has(s.key)) continue;
      seen.add(s.key);
      // an entry holding a mistyped key ("arg") is refused (src/onboard/entryKeys.ts)
      if (s.kind === "stdio" && unknownEntryKeys(host, Object.fromEntries(s.props)).length === 0)
        out.push({ table, s });
    }
  return out;
}

// ---------------------------------------------------------------------------------------------
// reading the files back

const LAUNCHER = { node: "/opt/node/bin/node", cli: "/opt/portcullis/dist/cli/main.cjs" };

function tree(text: string): Node {
  const body = text.startsWith("\uFEFF") ? text.slice(1) : text;
  const t = parseTree(body, [], { allowTrailingComma: true });
  if (!t) throw new Error("no tree");
  return t;
}

/** A value with its objects' keys sorted, as text: one document compared with another. */
function canon(v: unknown): string {
  const walk = (x: unknown): unknown => {
    if (Array.isArray(x)) return x.map(walk);
    if (x !== null && typeof x === "object")
      return Object.keys(x)
        .sort()
        .map((k) => [k, walk((x as Record<string, unknown>)[k])]);
    return x;
  };
  return JSON.stringify(walk(v));
}

/** The comments of a text, in order, with their offsets. */
function comments(text: string, from = 0, to = text.length): { at: number; text: string }[] {
  const s = createScanner(text, false);
  const out: { at: number; text: string }[] = [];
  for (let k = s.scan(); k !== SyntaxKind.EOF; k = s.scan()) {
    if (k === SyntaxKind.LineCommentTrivia || k === SyntaxKind.BlockCommentTrivia) {
      const at = s.getTokenOffset();
      if (at >= from && at < to) out.push({ at, text: text.slice(at, at + s.getTokenLength()) });
    }
  }
  return out;
}

/** The text with the given spans (offsets into the text without its BOM) each replaced by a marker. */
function blanked(text: string, spans: [number, number][]): string {
  const bom = text.startsWith("\uFEFF") ? 1 : 0;
  let out = "";
  let at = 0;
  for (const [a, b] of [...spans].sort((x, y) => x[0] - y[0])) {
    out += `${text.slice(at, a + bom)}<entry>`;
    at = b + bom;
  }
  return out + text.slice(at);
}

const span = (n: Node): [number, number] => [n.offset, n.offset + n.length];

// ---------------------------------------------------------------------------------------------

const root = tempDir("portcullis-wrap-jsonc-prop-");
let runs = 0;

function setUp(d: Doc) {
  const dir = join(root, String(runs++));
  mkdirSync(dir, { recursive: true });
  const file = join(
    dir,
    d.flavour === "vscode" ? "mcp.json" : d.flavour === "claude-home" ? ".claude.json" : "mcp.json",
  );
  writeFileSync(file, render(d));
  // what the file holds (a lone surrogate a generated string may carry is written as U+FFFD)
  const original = readFileSync(file);
  const stateDir = join(dir, "state");
  return { dir, file, original, stateDir, host: hostOf(d, file), launcher: { ...LAUNCHER, stateDir } };
}

const NUM_RUNS = Number(process.env.PROP_RUNS ?? 200);

describe("JSONC host files: wrap then unwrap (generated)", () => {
  it("wrap changes only the entries it reports, keeps every other byte and comment; a second wrap and a plan write nothing; unwrap gives back the bytes", () => {
    fc.assert(
      fc.property(doc, (d) => {
        const { dir, file, original, stateDir, host, launcher } = setUp(d);
        const text = original.toString("utf8");
        const want = expectedWrapped(d);

        // 4. the plan (what --dry-run runs) writes nothing
        const planned = planWrap(host, launcher).plan;
        expect(readFileSync(file).equals(original)).toBe(true);
        expect(existsSync(stateDir)).toBe(false);
        expect(readdirSync(dir).sort()).toEqual([file.split("/").pop()]);

        // 1. exactly the stdio servers the host runs here
        const plan = wrapFile(host, launcher);
        expect(plan.wrapped).toEqual(want.map((w) => w.s.key));
        expect(planned.after).toBe(plan.after);
        const after = readFileSync(file, "utf8");
        if (want.length === 0) {
          expect(readFileSync(file).equals(original), "nothing to wrap, nothing written").toBe(true);
          expect(existsSync(stateDir)).toBe(false);
          return;
        }
        const before = tree(text);
        const now = tree(after);
        const expected = getNodeValue(before);
        for (const { table, s } of want) {
          let at = expected;
          for (const k of table) at = at[k];
          const e = at[s.key];
          const args = [
            LAUNCHER.cli,
            "run",
            "--state-dir",
            stateDir,
            "--label",
            labelFor(s.key),
            "--",
            e.command,
            ...(e.args ?? []),
          ];
          at[s.key] = { ...e, command: LAUNCHER.node, args };
        }
        expect(canon(getNodeValue(now))).toBe(canon(expected));

        // 2. bytes outside the reported entries unchanged; comments inside them kept
        const entrySpans = (t: Node) =>
          want.map(({ table, s }) => span(findNodeAtLocation(t, [...table, s.key])!));
        expect(blanked(after, entrySpans(now))).toBe(blanked(text, entrySpans(before)));
        const bodyOf = (t: string) => (t.startsWith("\uFEFF") ? t.slice(1) : t);
        for (const { table, s } of want) {
          const b = findNodeAtLocation(before, [...table, s.key])!;
          const n = findNodeAtLocation(now, [...table, s.key])!;
          const oldArgs = findNodeAtLocation(before, [...table, s.key, "args"]);
          const kept = comments(bodyOf(text), ...span(b))
            .filter((c) => !oldArgs || c.at < oldArgs.offset || c.at >= oldArgs.offset + oldArgs.length)
            .map((c) => c.text);
          const newArgs = findNodeAtLocation(now, [...table, s.key, "args"])!;
          const nowComments = comments(bodyOf(after), ...span(n))
            .filter((c) => c.at < newArgs.offset || c.at >= newArgs.offset + newArgs.length)
            .map((c) => c.text);
          expect(nowComments, `comments of ${s.key}`).toEqual(kept);
        }

        // 3. a second wrap: nothing wrapped, nothing written
        const record = readdirSync(join(stateDir, "wrapped"));
        expect(record).toHaveLength(1);
        const recordPath = join(stateDir, "wrapped", record[0]!);
        const recordBytes = readFileSync(recordPath);
        const again = wrapFile(host, launcher);
        expect(again.wrapped).toEqual([]);
        expect(readFileSync(file, "utf8")).toBe(after);
        expect(readFileSync(recordPath).equals(recordBytes)).toBe(true);
        expect(readFileSync(`${file}.portcullis-backup`).equals(original)).toBe(true);

        // 5. unwrap: the original bytes
        const back = unwrapFile(host, stateDir);
        expect(back.how).toBe("exact");
        expect(readFileSync(file).equals(original)).toBe(true);
        expect(existsSync(recordPath)).toBe(false);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("wrap, an edit elsewhere (a key at the top, a comment at the end, a key inside a wrapped entry), unwrap: the user's file with that edit, byte for byte", () => {
    fc.assert(
      fc.property(doc, fc.constantFrom("key", "comment", "both", "inEntry"), fc.nat(), (d, edit, pick) => {
        const want = expectedWrapped(d);
        fc.pre(want.length > 0);
        const { file, original, stateDir, host, launcher } = setUp(d);
        const text = original.toString("utf8");
        const bom = text.startsWith("\uFEFF") ? 1 : 0;
        const target = want[pick % want.length]!;
        const editText = (t: string): string => {
          let out = t;
          if (edit === "inEntry") {
            // a key the host added inside a wrapped entry, first in it: outside wrap's two values
            const at = findNodeAtLocation(tree(out), [...target.table, target.s.key])!.offset + 1 + bom;
            return `${out.slice(0, at)} "addedByHost": 1,${out.slice(at)}`;
          }
          if (edit === "key" || edit === "both") {
            const at = tree(out).offset + 1 + bom; // right after the root's "{"
            out = `${out.slice(0, at)}${d.eol}${d.indent}"edited-while-wrapped": true,${out.slice(at)}`;
          }
          if (edit === "comment" || edit === "both")
            out = `${out}${d.finalNewline ? "" : d.eol}// edited while wrapped${d.eol}`;
          return out;
        };
        wrapFile(host, launcher);
        writeFileSync(file, editText(readFileSync(file, "utf8")));
        const back = unwrapFile(host, stateDir);
        expect(back.how).toBe("entries");
        expect(back.stuck).toEqual([]);
        expect(back.restored.sort()).toEqual(
          expectedWrapped(d)
            .map((w) => w.s.key)
            .sort(),
        );
        expect(readFileSync(file, "utf8")).toBe(editText(text));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("the table's key written twice (the host keeps the last): refused, or what wrap reports wrapped is what the host runs", () => {
    const decoy = fc.constantFrom<J>(
      {},
      null,
      [],
      { alpha: { command: "decoy-alpha" } },
      { beta: { command: "decoy-beta", args: ["x"] } },
      { mcpServers: { alpha: { command: "decoy-alpha" } } },
    );
    fc.assert(
      fc.property(doc, decoy, (d0, dc) => {
        const d = { ...d0, decoy: dc };
        fc.pre(expectedWrapped(d).length > 0);
        const { dir, file, original, stateDir, host, launcher } = setUp(d);
        let plan: ReturnType<typeof wrapFile>;
        try {
          plan = wrapFile(host, launcher);
        } catch (e) {
          // refused as the docs refuse a key twice in a server table: nothing written
          expect(e).toBeInstanceOf(OnboardError);
          expect((e as Error).message).toContain(file);
          expect(readFileSync(file).equals(original)).toBe(true);
          expect(readdirSync(dir)).toEqual([file.split("/").pop()]);
          return;
        }
        // the document as the host reads it (JSON.parse: the last of two keys)
        const hostView = getNodeValue(tree(readFileSync(file, "utf8")));
        for (const { table, s } of expectedWrapped(d)) {
          let at = hostView;
          for (const k of [...table, s.key]) at = at?.[k];
          expect(plan.wrapped).toContain(s.key);
          expect(at?.command, `${s.key}: reported wrapped, but the host still runs it bare`).toBe(
            LAUNCHER.node,
          );
        }
        unwrapFile(host, stateDir);
        expect(readFileSync(file).equals(original)).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it("a file that does not parse: OnboardError naming the file, nothing written", () => {
    const damage = fc.record({
      kind: fc.constantFrom("truncate", "insert", "delete"),
      at: fc.nat(),
      char: fc.constantFrom("{", "}", "[", "]", ",", ":", '"', "/", "*", "x", "\u0000"),
    });
    fc.assert(
      fc.property(doc, damage, (d, dm) => {
        const text = render(d);
        const i = dm.at % (text.length + 1);
        const broken =
          dm.kind === "truncate"
            ? text.slice(0, i)
            : dm.kind === "insert"
              ? text.slice(0, i) + dm.char + text.slice(i)
              : text.slice(0, i) + text.slice(i + 1);
        const errors: unknown[] = [];
        parseTree(broken.replace(/^\uFEFF/, ""), errors as never, { allowTrailingComma: true });
        fc.pre(errors.length > 0);
        const dir = join(root, String(runs++));
        mkdirSync(dir, { recursive: true });
        const file = join(dir, "mcp.json");
        writeFileSync(file, broken);
        const bytes = readFileSync(file);
        const stateDir = join(dir, "state");
        let thrown: unknown = null;
        try {
          wrapFile(hostOf(d, file), { ...LAUNCHER, stateDir });
        } catch (e) {
          thrown = e;
        }
        expect(thrown, "wrap of a file that does not parse did not fail").toBeInstanceOf(OnboardError);
        expect((thrown as Error).message).toContain(file);
        expect((thrown as Error).message).toMatch(/nothing was written\.$/);
        expect(readFileSync(file).equals(bytes)).toBe(true);
        expect(readdirSync(dir)).toEqual(["mcp.json"]);
      }),
      { numRuns: 200 },
    );
  });
  it("through the real CLI (FILE, --state-dir): --dry-run writes nothing, wrap then unwrap gives back the bytes, a second wrap writes nothing, a file that does not parse is one line naming it (exit 2)", async () => {
    await fc.assert(
      fc.asyncProperty(
        doc.filter((d) => d.flavour !== "claude-home" && d.decoy === undefined),
        async (d) => {
          const dir = join(root, `cli-${runs++}`);
          const file = d.flavour === "vscode" ? join(dir, ".vscode", "mcp.json") : join(dir, "mcp.json");
          mkdirSync(join(dir, ".vscode"), { recursive: true });
          const text = render(d);
          const damaged = text.replace(/\}(\s*)$/, "$1"); // the root's closing brace gone
          await wrapRoundTripByCli(dir, file, text, damaged);
        },
      ),
      { numRuns: 3 },
    );
  });
});
