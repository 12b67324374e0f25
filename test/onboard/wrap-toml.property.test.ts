// Property tests of wrap and unwrap on generated Codex config.toml files (src/onboard/wrap.ts,
// document.ts, tomlEdit.ts; docs/onboarding.md: "of each wrapped server only the values of
// `command` and `args` are rewritten; comments, key order, quoting, blank lines and every other
// table stay byte for byte"). test/onboard/toml-roundtrip.test.ts covers the three shapes with a
// small alphabet; this one goes wider: headers spelled `[ mcp_servers . "k" ]`, quoted and
// literal keys (`"command" =`, `'args' =`), keys indented, basic, literal, multi-line basic and
// multi-line literal strings (one holding lines that look like a header and a `command = …`),
// \u and \U escapes in values, multi-line args with comments and a trailing comma, env as an
// inline table, as dotted keys or as a [mcp_servers.NAME.env] sub-table, extra keys of every TOML
// type (integers, floats, booleans, dates, arrays, inline tables), multi-line inline tables
// (TOML 1.1) with comments, `mcp_servers = { … }` whole, [[array]] tables (in and out of
// mcp_servers), HTTP entries, entries already wrapped, CRLF, a byte order mark, no final newline.
//
// Invariants, in process (wrapFile, planWrap, unwrapFile):
//   1. wrap reports exactly the stdio servers; the parsed document after wrap is the one before
//      with only those entries' command and args replaced;
//   2. every comment of the file is still there, in order (the generator writes each as a unique
//      `#~N~` marker), except those inside a wrapped server's old args value; that is, the file
//      was edited in place, not rewritten whole (docs: a whole rewrite happens only for a key with
//      an escape JSON has not, a line the reader cannot follow, or a value over 500 lines, none of
//      which is generated);
//   3. a second wrap wraps nothing and writes nothing; planWrap writes nothing;
//   4. unwrap gives back the original bytes;
//   5. wrap, an edit elsewhere (a comment line at the top, a key of another table changed, a
//      comment line under a wrapped section's header), then unwrap: the original bytes with that
//      edit;
//   6. a file that does not parse: OnboardError naming the file, nothing written.
//
//   7. through the real CLI (a few cases: `wrap FILE --dry-run`, `wrap`, `wrap` again, `unwrap`,
//      a damaged file): exit codes, bytes, one line naming the file, no state directory made.
//
// Seen failing when broken: (a) editTomlEntries returning null (always the whole-file rewrite)
// fails 2 ("comments after wrap: expected [] …") and 5; (b) spelledIn returning null (restored
// values re-spelled by smol-toml) fails 5; (c) scanInline's removal of a member taking one
// character more fails 5; (d) parseDocument returning {} for a TOML syntax error fails 6;
// (e) src/cli/wrap.ts calling wrapFile for --dry-run (rebuilt) fails 7.
// No counterexample on the current code (also none at 2,500 runs per property).

import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { parse as parseToml } from "smol-toml";
import { describe, expect, it } from "vitest";
import { OnboardError } from "../../src/onboard/document.js";
import { unknownEntryKeys } from "../../src/onboard/entryKeys.js";
import type { HostFile } from "../../src/onboard/hosts.js";
import { labelFor, planWrap, unwrapFile, wrapFile } from "../../src/onboard/wrap.js";
import { tempDir } from "../helpers/files.js";
import { wrapRoundTripByCli } from "../helpers/wrapRoundTrip.js";

// ---------------------------------------------------------------------------------------------
// TOML spellings

/** A basic string: ", \ and control characters (DEL included) escaped; perhaps non-ASCII as \u / \U. */
function basic(s: string, escapeNonAscii = false): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\t") out += "\\t";
    else if (c < 0x20 || c === 0x7f) out += `\\u${c.toString(16).padStart(4, "0")}`;
    else if (escapeNonAscii && c > 0x7e)
      out += c > 0xffff ? `\\U${c.toString(16).padStart(8, "0")}` : `\\u${c.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

type Spelling = "basic" | "escaped" | "literal" | "mlBasic" | "mlLiteral";

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters decide the spelling
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/;

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters decide the spelling
const ML_LITERAL_REFUSES = /[\u0000-\u0008\u000b-\u001f\u007f\r]/;

function tomlString(s: string, how: Spelling, eol: string): string {
  // a multi-line string keeps the file's line breaks: with CRLF, one holding a newline is written
  // on one line, so that the value read is the value meant
  if (eol !== "\n" && s.includes("\n") && (how === "mlBasic" || how === "mlLiteral")) how = "basic";
  switch (how) {
    case "literal":
      return s.includes("'") || CONTROL.test(s) ? basic(s) : `'${s}'`;
    case "mlLiteral":
      // a newline right after the opening quotes is trimmed by the reader: written as it is read
      return s.includes("'") || ML_LITERAL_REFUSES.test(s) || s.startsWith("\n")
        ? basic(s)
        : `'''${s.replace(/\n/g, eol)}'''`;
    case "mlBasic": {
      const body = [...s]
        .map((ch) => (ch === "\n" ? eol : ch === '"' ? '\\"' : basic(ch).slice(1, -1)))
        .join("");
      return body.startsWith(eol) ? basic(s) : `"""${body}"""`;
    }
    case "escaped":
      return basic(s, true);
    default:
      return basic(s);
  }
}

function tomlKey(k: string, quoted: number): string {
  if (/^[A-Za-z0-9_-]+$/.test(k) && quoted === 0) return k;
  if (quoted === 2 && !k.includes("'")) return `'${k}'`;
  return basic(k);
}

// ---------------------------------------------------------------------------------------------
// the model

type Shape = "section" | "dotted" | "inline" | "inlineMulti";
type Kind = "stdio" | "http" | "wrapped" | "array";
type Extra = [string, string]; // key, TOML value text

interface Server {
  key: string;
  kind: Kind;
  shape: Shape;
  command: string;
  args: string[] | undefined;
  argsMultiline: boolean;
  env: Record<string, string> | undefined;
  envShape: "inline" | "dotted" | "subtable";
  cwd: string | undefined;
  extras: Extra[];
  order: number[];
  spelling: Spelling;
  keyQuote: number;
  /** a propery key spelled quoted: 0 bare, 1 "basic", 2 'literal' */
  propQuote: number;
  headerSpaced: boolean;
  indent: string;
  tight: boolean;
  comments: boolean[];
}

/** Keys whose labels (labelFor) differ. */
const KEYS = ["alpha", "my server", "__proto__", "a.b", "x-y", "é srv", "beta_2"];

// no `#~` in any string: the markers of comments are found by plain search
const text = fc
  .oneof(
    fc.constantFrom(
      "node",
      "npx",
      "/usr/bin/python3",
      "C:\\tools\\run.exe",
      "a b",
      'say "hi"',
      "it's",
      "é ✓ 日本",
      "😀",
      "--flag=1",
      "-y",
      "",
      "# not a comment",
      "[mcp_servers.fake]",
      'command = "evil"',
      "multi\nline",
      "tab\there",
      "'''",
      '"""',
      "a\\b",
      "\u007f",
    ),
    fc.string({ maxLength: 8 }).filter((s) => !/[\ud800-\udfff]/.test(s)),
    fc.string({ unit: "grapheme", maxLength: 5 }),
  )
  .filter((s) => !s.includes("#~"));

const extra: fc.Arbitrary<Extra> = fc.oneof(
  fc.constantFrom<Extra>(
    ["startup_timeout_sec", "30"],
    ["tool_timeout_sec", "1.5"],
    ["enabled", "true"],
    ["oauth_resource", "1979-05-27T07:32:00Z"],
    ["bearer_token_env_var", "2024-01-02"],
    ["startup_timeout_ms", "0x7fff_ffff"],
    ["required", "-inf"],
    ["enabled_tools", '[1, "two", [3], { four = 4 }]'],
    ["tools", '{ a = { b = "c" } }'],
    ["default_tools_approval_mode", '"""\n[mcp_servers.fake]\ncommand = "x"\nargs = ["y"]\n"""'],
    ["scopes", "'''\n# not a comment\n[x]\n'''"],
    ["http_headers", "{}"],
    ["disabled_tools", "[ ]"],
    ["x_note", '"a key Codex does not read"'],
  ),
);

const server = (key: string): fc.Arbitrary<Server> =>
  fc.record({
    key: fc.constant(key),
    kind: fc.constantFrom<Kind>("stdio", "stdio", "stdio", "stdio", "http", "wrapped", "array"),
    shape: fc.constantFrom<Shape>("section", "section", "dotted", "inline", "inlineMulti"),
    command: text,
    args: fc.option(fc.array(text, { maxLength: 4 }), { nil: undefined }),
    argsMultiline: fc.boolean(),
    env: fc.option(fc.dictionary(fc.constantFrom("A", "LOG_LEVEL", "API_KEY"), text, { maxKeys: 2 }), {
      nil: undefined,
    }),
    envShape: fc.constantFrom<"inline" | "dotted" | "subtable">("inline", "dotted", "subtable"),
    cwd: fc.option(text, { nil: undefined }),
    extras: fc.uniqueArray(extra, { maxLength: 2, selector: ([k]) => k }),
    order: fc.array(fc.nat(), { minLength: 8, maxLength: 8 }),
    spelling: fc.constantFrom<Spelling>("basic", "escaped", "literal", "mlBasic", "mlLiteral"),
    keyQuote: fc.nat(2),
    propQuote: fc.nat(2),
    headerSpaced: fc.boolean(),
    indent: fc.constantFrom("", "", "  ", "\t"),
    tight: fc.boolean(),
    comments: fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }),
  });

type Layout = "header" | "root" | "whole";

interface Doc {
  servers: Server[];
  layout: Layout;
  crlf: boolean;
  bom: boolean;
  finalNewline: boolean;
  topExtras: Extra[];
  noise: number[];
  otherArray: boolean;
}

const docArb: fc.Arbitrary<Doc> = fc.record({
  servers: fc
    .uniqueArray(fc.constantFrom(...KEYS), { minLength: 1, maxLength: 5 })
    .chain((keys) => fc.tuple(...keys.map(server))),
  layout: fc.constantFrom<Layout>("header", "header", "root", "whole"),
  crlf: fc.boolean(),
  bom: fc.boolean(),
  finalNewline: fc.boolean(),
  topExtras: fc.uniqueArray(extra, { maxLength: 2, selector: ([k]) => k }),
  noise: fc.array(fc.nat(5), { minLength: 64, maxLength: 64 }),
  otherArray: fc.boolean(),
});

/** The document as written, and the number of comment markers in it. */
function render(d: Doc): string {
  const eol = d.crlf ? "\r\n" : "\n";
  const lines: string[] = [];
  let marker = 0;
  let noiseAt = 0;
  const comment = () => `#~${marker++}~`;
  const push = (line: string) => {
    const n = d.noise[noiseAt++ % d.noise.length]!;
    if (n === 0) lines.push(comment());
    if (n === 1) lines.push("");
    lines.push(line);
  };
  const eq = (s: Server) => (s.tight ? "=" : " = ");
  const str = (s: Server, v: string) => tomlString(v, s.spelling, eol);
  const arr = (s: Server, vs: string[], multi: boolean, indent: string) =>
    multi && vs.length > 0
      ? `[${eol}${vs.map((a, i) => `${indent}  ${str(s, a)},${i === 0 ? ` ${comment()}` : ""}`).join(eol)}${eol}${indent}]`
      : `[${vs.map((a) => str(s, a)).join(", ")}]`;
  const envInline = (s: Server) =>
    `{ ${Object.entries(s.env!)
      .map(([k, v]) => `${k}${eq(s)}${str(s, v)}`)
      .join(", ")} }`;
  const pk = (s: Server, k: string) => tomlKey(k, s.propQuote);

  /** The server's own key = value pairs (no env sub-table), in the generated order. */
  const pairs = (s: Server, multiArgs: boolean, indent: string): [string, string][] => {
    const out: [string, string][] = [];
    if (s.kind === "http") out.push(["url", str(s, "https://example.com/mcp")]);
    else if (s.kind === "wrapped")
      out.push(
        ["command", str(s, "portcullis")],
        ["args", arr(s, ["run", "--label", "x", "--", s.command], false, indent)],
      );
    else {
      out.push(["command", str(s, s.command)]);
      if (s.args !== undefined) out.push(["args", arr(s, s.args, multiArgs && s.argsMultiline, indent)]);
    }
    if (s.cwd !== undefined) out.push(["cwd", str(s, s.cwd)]);
    for (const e of s.extras) out.push(e);
    const weighted = out.map((p, i) => ({ p, w: s.order[i] ?? i }));
    weighted.sort((a, b) => a.w - b.w);
    return weighted.map((x) => x.p);
  };

  const keyLines = (s: Server, prefix: string) => {
    for (const [k, v] of pairs(s, true, s.indent))
      push(
        `${s.indent}${prefix}${pk(s, k)}${eq(s)}${v}${s.comments[k.length % 12] ? `   ${comment()}` : ""}`,
      );
    if (s.env !== undefined && s.envShape !== "subtable") {
      if (s.envShape === "dotted")
        for (const [k, v] of Object.entries(s.env)) push(`${s.indent}${prefix}env.${k}${eq(s)}${str(s, v)}`);
      else push(`${s.indent}${prefix}env${eq(s)}${envInline(s)}`);
    }
  };
  const inlineTable = (s: Server): string => {
    const members = pairs(s, false, "").map(([k, v]) => `${pk(s, k)}${eq(s)}${v}`);
    if (s.env !== undefined) members.push(`env${eq(s)}${envInline(s)}`);
    if (s.shape === "inlineMulti")
      return `{${eol}${members.map((m, i) => `    ${m},${s.comments[i] ? ` ${comment()}` : ""}`).join(eol)}${eol}}`;
    return `{ ${members.join(", ")} }`;
  };
  const sKey = (s: Server) => tomlKey(s.key, s.keyQuote);
  const header = (s: Server, path: string[]) =>
    s.headerSpaced ? `[ ${path.join(" . ")} ]` : `[${path.join(".")}]`;

  lines.push(comment());
  push('model = "o4-mini"');
  for (const [k, v] of d.topExtras) push(`${k} = ${v}`);
  const notArray = d.servers.filter((s) => s.kind !== "array");
  const arrays = d.servers.filter((s) => s.kind === "array");
  let sections: Server[];
  if (d.layout === "whole") {
    // mcp_servers = { NAME = { … }, … } at the top: every server inline
    push(
      `mcp_servers = { ${notArray.map((s) => `${sKey(s)} = ${inlineTable({ ...s, shape: "inline" })}`).join(", ")} }`,
    );
    sections = [];
  } else if (d.layout === "root") {
    for (const s of notArray.filter((x) => x.shape === "dotted")) keyLines(s, `mcp_servers.${sKey(s)}.`);
    for (const s of notArray.filter((x) => x.shape === "inline" || x.shape === "inlineMulti"))
      push(`mcp_servers.${sKey(s)}${eq(s)}${inlineTable(s)}${s.comments[11] ? ` ${comment()}` : ""}`);
    sections = notArray.filter((x) => x.shape === "section");
  } else {
    const under = notArray.filter((x) => x.shape !== "section");
    if (under.length > 0) {
      push(`[mcp_servers] ${comment()}`);
      for (const s of under.filter((x) => x.shape !== "dotted"))
        push(`${sKey(s)}${eq(s)}${inlineTable(s)}${s.comments[11] ? ` ${comment()}` : ""}`);
      for (const s of under.filter((x) => x.shape === "dotted")) keyLines(s, `${sKey(s)}.`);
    }
    sections = notArray.filter((x) => x.shape === "section");
  }
  for (const s of sections) {
    push(`${header(s, ["mcp_servers", sKey(s)])}${s.comments[10] ? ` ${comment()}` : ""}`);
    keyLines(s, "");
    if (s.env !== undefined && s.envShape === "subtable") {
      push(header(s, ["mcp_servers", sKey(s), "env"]));
      for (const [k, v] of Object.entries(s.env)) push(`${k} = ${str(s, v)}`);
    }
  }
  // a server table that is not a server: an array of tables (left alone by wrap)
  if (d.layout !== "whole")
    for (const s of arrays) {
      push(`[[mcp_servers.${sKey(s)}]]`);
      push(`command = ${basic(s.command)}`);
    }
  push("[profiles.fast]");
  push(`model = "gpt-4.1" ${comment()}`);
  if (d.otherArray) {
    push("[[profiles.list]]");
    push('name = "one"');
    push("[[profiles.list]]");
    push('name = "two"');
  }
  return `${d.bom ? "\uFEFF" : ""}${lines.join(eol)}${d.finalNewline ? eol : ""}`;
}

/** The servers wrap wraps: stdio, not array tables (dropped in the "whole" layout too), not wrapped. */
function expectedWrapped(d: Doc): Server[] {
  // an entry holding a mistyped key ("arg") is refused (src/onboard/entryKeys.ts)
  const host: HostFile = {
    host: "codex",
    file: "config.toml",
    format: "toml",
    tables: [["mcp_servers"]],
  };
  return d.servers.filter(
    (s) => s.kind === "stdio" && unknownEntryKeys(host, Object.fromEntries(s.extras)).length === 0,
  );
}

const markers = (t: string) => t.match(/#~\d+~/g) ?? [];

/** Markers inside multi-line args arrays (a wrapped server's is replaced with the value by wrap). */
function markersInArgs(t: string): Set<string> {
  const out = new Set<string>();
  const lines = t.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    if (!/(args|"args"|'args') ?= ?\[$/.test(lines[i]!)) continue;
    for (let j = i + 1; j < lines.length && !/^[ \t]*\]$/.test(lines[j]!); j++)
      for (const k of markers(lines[j]!)) out.add(k);
  }
  return out;
}

/** The offset just past the line of the `[table]` header whose path is `path`. */
function headerLineEnd(t: string, path: string[]): number {
  let at = 0;
  for (const line of t.split(/(?<=\n)/)) {
    const end = at + line.length;
    if (/^\uFEFF?[ \t]*\[(?!\[)/.test(line)) {
      try {
        let v = parseToml(line.replace(/^\uFEFF/, "")) as Record<string, unknown>;
        const got: string[] = [];
        while (Object.keys(v).length === 1) {
          const k = Object.keys(v)[0]!;
          got.push(k);
          v = v[k] as Record<string, unknown>;
        }
        if (JSON.stringify(got) === JSON.stringify(path)) return end;
      } catch {
        // not a header line after all (inside a multi-line string)
      }
    }
    at = end;
  }
  throw new Error(`no header ${path.join(".")}`);
}

// ---------------------------------------------------------------------------------------------

const LAUNCHER = { node: "/opt/node/bin/node", cli: "/opt/portcullis/dist/cli/main.cjs" };
const root = tempDir("portcullis-wrap-toml-prop-");
let runs = 0;

function setUp(d: Doc) {
  const dir = join(root, String(runs++));
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "config.toml");
  const t = render(d);
  writeFileSync(file, t);
  const original = readFileSync(file);
  const stateDir = join(dir, "state");
  const host: HostFile = { host: "codex", file, format: "toml", tables: [["mcp_servers"]] };
  return { dir, file, text: t, original, stateDir, host, launcher: { ...LAUNCHER, stateDir } };
}

/** A value with its objects' keys sorted, as text. */
function canon(v: unknown): string {
  const walk = (x: unknown): unknown => {
    if (Array.isArray(x)) return x.map(walk);
    if (x instanceof Date) return x.toISOString();
    if (x !== null && typeof x === "object")
      return Object.keys(x)
        .sort()
        .map((k) => [k, walk((x as Record<string, unknown>)[k])]);
    return x;
  };
  return JSON.stringify(walk(v));
}

const parse = (t: string) => parseToml(t.replace(/^\uFEFF/, "")) as Record<string, unknown>;
const NUM_RUNS = Number(process.env.PROP_RUNS ?? 200);

describe("Codex TOML: wrap then unwrap (generated, wide)", () => {
  it("the generator writes valid TOML with the servers it means", () => {
    fc.assert(
      fc.property(docArb, (d) => {
        const doc = parse(render(d)) as { mcp_servers: Record<string, Record<string, unknown>> };
        for (const s of d.servers.filter((x) => x.kind === "stdio"))
          expect(doc.mcp_servers[s.key]).toMatchObject({
            command: s.command,
            ...(s.args ? { args: s.args } : {}),
          });
      }),
      { numRuns: 300 },
    );
  });

  it("wrap edits only the entries it reports, in place (every comment kept); a second wrap and a plan write nothing; unwrap gives back the bytes", () => {
    fc.assert(
      fc.property(docArb, (d) => {
        const { dir, file, text: t, original, stateDir, host, launcher } = setUp(d);
        const want = expectedWrapped(d);
        const planned = planWrap(host, launcher).plan;
        expect(readdirSync(dir)).toEqual(["config.toml"]);
        const plan = wrapFile(host, launcher);
        expect([...plan.wrapped].sort()).toEqual(want.map((s) => s.key).sort());
        expect(planned.after).toBe(plan.after);
        const after = readFileSync(file, "utf8");
        if (want.length === 0) {
          expect(readFileSync(file).equals(original)).toBe(true);
          return;
        }
        // 1. only those entries' command and args
        const expected = parse(t) as { mcp_servers: Record<string, Record<string, unknown>> };
        for (const s of want) {
          const e = expected.mcp_servers[s.key]!;
          expected.mcp_servers[s.key] = {
            ...e,
            command: LAUNCHER.node,
            args: [
              LAUNCHER.cli,
              "run",
              "--state-dir",
              stateDir,
              "--label",
              labelFor(s.key),
              "--",
              e.command as string,
              ...((e.args as string[]) ?? []),
            ],
          };
        }
        expect(canon(parse(after))).toBe(canon(expected));
        // 2. in place: every comment kept, in order (those inside a replaced args value aside)
        const inArgs = markersInArgs(t);
        const kept = markers(t).filter((m) => !inArgs.has(m));
        expect(
          markers(after).filter((m) => !inArgs.has(m)),
          "comments after wrap",
        ).toEqual(kept);
        expect(after.startsWith("\uFEFF")).toBe(d.bom);
        // 3. a second wrap: nothing
        const again = wrapFile(host, launcher);
        expect(again.wrapped).toEqual([]);
        expect(readFileSync(file, "utf8")).toBe(after);
        // 4. unwrap: the bytes
        const back = unwrapFile(host, stateDir);
        expect(back.how).toBe("exact");
        expect(readFileSync(file).equals(original)).toBe(true);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("wrap, an edit elsewhere, unwrap: the user's file with that edit, byte for byte", () => {
    fc.assert(
      fc.property(docArb, fc.constantFrom("top", "profile", "end", "inEntry"), fc.nat(), (d, edit, pick) => {
        const want = expectedWrapped(d);
        fc.pre(want.length > 0);
        const sections = want.filter((s) => s.shape === "section" && d.layout !== "whole");
        if (edit === "inEntry") fc.pre(sections.length > 0);
        const { file, text: t, stateDir, host, launcher } = setUp(d);
        const eol = d.crlf ? "\r\n" : "\n";
        const editText = (x: string) => {
          if (edit === "inEntry") {
            // a comment line the host added under a wrapped server's header: inside the entry, outside its two values
            const key = sections[pick % sections.length]!.key;
            const at = headerLineEnd(x, ["mcp_servers", key]);
            return `${x.slice(0, at)}# added by the host${eol}${x.slice(at)}`;
          }
          if (edit === "top") return x.replace(/^(\uFEFF?)/, `$1# edited while wrapped${eol}`);
          if (edit === "profile") return x.replace('model = "gpt-4.1"', 'model = "gpt-5"');
          return `${x}${d.finalNewline ? "" : eol}# edited while wrapped${eol}`;
        };
        wrapFile(host, launcher);
        writeFileSync(file, editText(readFileSync(file, "utf8")));
        const back = unwrapFile(host, stateDir);
        expect(back.how).toBe("entries");
        expect(back.stuck).toEqual([]);
        expect(readFileSync(file, "utf8")).toBe(editText(t));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("a file that does not parse: OnboardError naming the file, nothing written", () => {
    const damage = fc.record({
      kind: fc.constantFrom("truncate", "insert", "delete"),
      at: fc.nat(),
      char: fc.constantFrom("[", "]", "{", "}", "=", '"', "'", ",", ".", "\n", "x", "\u0000"),
    });
    fc.assert(
      fc.property(docArb, damage, (d, dm) => {
        const t = render(d);
        const i = dm.at % (t.length + 1);
        const broken =
          dm.kind === "truncate"
            ? t.slice(0, i)
            : dm.kind === "insert"
              ? t.slice(0, i) + dm.char + t.slice(i)
              : t.slice(0, i) + t.slice(i + 1);
        let parses = true;
        try {
          parse(broken);
        } catch {
          parses = false;
        }
        fc.pre(!parses);
        const dir = join(root, String(runs++));
        mkdirSync(dir, { recursive: true });
        const file = join(dir, "config.toml");
        writeFileSync(file, broken);
        const bytes = readFileSync(file);
        const stateDir = join(dir, "state");
        let thrown: unknown = null;
        try {
          wrapFile(
            { host: "codex", file, format: "toml", tables: [["mcp_servers"]] },
            { ...LAUNCHER, stateDir },
          );
        } catch (e) {
          thrown = e;
        }
        expect(thrown, "wrap of a file that does not parse did not fail").toBeInstanceOf(OnboardError);
        expect((thrown as Error).message).toContain(file);
        expect((thrown as Error).message).toMatch(/nothing was written\.$/);
        expect(readFileSync(file).equals(bytes)).toBe(true);
        expect(readdirSync(dir)).toEqual(["config.toml"]);
        expect(existsSync(stateDir)).toBe(false);
      }),
      { numRuns: 200 },
    );
  });
  it("through the real CLI (FILE, --state-dir): --dry-run writes nothing, wrap then unwrap gives back the bytes, a second wrap writes nothing, a file that does not parse is one line naming it (exit 2)", async () => {
    await fc.assert(
      fc.asyncProperty(docArb, async (d) => {
        const dir = join(root, `cli-${runs++}`);
        const file = join(dir, "config.toml");
        mkdirSync(dir, { recursive: true });
        const text = render(d);
        const damaged = `${text}${d.crlf ? "\r\n" : "\n"}[mcp_servers.broken${d.crlf ? "\r\n" : "\n"}`;
        await wrapRoundTripByCli(dir, file, text, damaged);
      }),
      { numRuns: 3 },
    );
  });
});
