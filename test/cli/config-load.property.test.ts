// Property tests of loading portcullis.json (src/config/config.ts, docs/configuration.md): "an
// unknown key, a wrong type, a value out of range or a key written twice in one object is an
// error (exit 2) that names the file and the key"; "a file that is not JSON is refused naming the
// line and the column"; "Nothing is ignored silently".
//
// fast-check generates (a) arbitrary JSON values (unicode strings and keys), (b) near-valid
// configurations made by mutating a valid one (a value of the wrong type, a huge or negative
// number, null, an unknown, unicode, "__proto__" or "constructor" key, a key removed), and (c)
// text-level damage of a valid file (a BOM, a comment, a trailing comma, a key written twice,
// truncation, a stray character). Invariant, in process (loadConfigFile and resolveServer):
//   - either a map of servers is returned, every label of which follows LABEL_PATTERN,
//   - or a ConfigError is thrown whose message starts with the file and, when the text is JSON,
//     names a key path (a top-level key, servers.LABEL…, mcpServers.LABEL…, console…, or "the
//     top level"), and when it is not, the line and column (or "the file is empty");
//   - never any other exception type.
// Then a handful of the same inputs through the real CLI (`run LABEL` in a temporary directory,
// `doctor --json`): `run` exits 2 with exactly one line on stderr naming the file; doctor never
// exits 70 and reports the file's sentence.
//
// Seen failing when broken: with `throw new Error(...)` in place of the ConfigError of
// parseConsoleSection's unknown key (near-valid and text-damage properties: "not a ConfigError"),
// with the refuseDuplicateKeys call removed (the key-twice property and the text-damage one), and,
// for the CLI part, with main.ts's reportFailure writing the sentence without safeText (after
// `npm run build`: the label with a newline became two lines).
//
// Found by it, fixed since: a document nested deep and cut short, {"console": {}, "$schema":
// [[[[… (6,143 "[" and nothing after them), was refused as "not valid JSON (the text is not
// JSON)", with no line or column: jsonc-parser notes the missing bracket only as its recursion
// unwinds, and V8 names no position for "Unexpected end of JSON input". The end of the text is
// named now (src/config/jsonSyntax.ts).

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ConfigError, LABEL_PATTERN, loadConfigFile, resolveServer } from "../../src/config/config.js";
import { setOwn } from "../../src/util/setOwn.js";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** A configuration that loads: every key of docs/configuration.md in use somewhere. */
function validConfig(): { [k: string]: Json } {
  return {
    $schema: "https://example.com/schema.json",
    servers: {
      "inventory-local": {
        command: "node",
        args: ["dist/server.js", "a b", "é ✓"],
        cwd: ".",
        env: { LOG_LEVEL: "debug" },
        identity: { include: ["dist/**"] },
        onChange: "restart",
        onExpand: "tool",
        approval: { default: "session", tools: { inventory_adjust: "per-call" }, resources: "session" },
        credentials: {
          INVENTORY_API_KEY: { secret: "inventory-api-staging", hosts: ["api.inventory.example"] },
          REPORTS_TOKEN: "reports-ro",
        },
        tools: {
          inventory_adjust: { credentials: ["inventory-api-staging"] },
          inventory_ping: { credentials: [] },
        },
        egress: "declared-only",
        audit: { arguments: "digest" },
        maxMessageBytes: 8388608,
        listen: "127.0.0.1:8765",
        listenTokenFile: "token.txt",
        type: "stdio",
      },
      "docs-remote": {
        type: "http",
        url: "https://mcp.example.com/mcp",
        headers: { Authorization: { secret: "remote-mcp-token", format: "Bearer {}" }, "X-Plain": "v" },
      },
    },
    console: { proofWindow: 300 },
  };
}

/** Every path to a value of the document (objects and arrays), the root included. */
function paths(v: Json, at: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [at];
  if (Array.isArray(v)) for (const [i, x] of v.entries()) out.push(...paths(x, [...at, i]));
  else if (v !== null && typeof v === "object")
    for (const [k, x] of Object.entries(v)) out.push(...paths(x, [...at, k]));
  return out;
}

function parentOf(doc: Json, path: (string | number)[]): Json {
  let at = doc;
  for (const k of path) at = (at as Record<string, Json>)[k as string]!;
  return at;
}

const wrongValue: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom<Json>(
    null,
    true,
    false,
    0,
    -1,
    1e308,
    -1e308,
    2 ** 53 + 1,
    1.5,
    "",
    "x",
    "\u0000",
    "\u001b[31m",
    "restart\n",
    [],
    {},
    [null],
    { a: null },
    { __proto__x: 1 },
    "http://example.com/x",
    "https://u:p@example.com/",
    "127.0.0.1:99999",
    "..",
  ),
  fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>,
);

const oddKey = fc.oneof(
  fc.constantFrom(
    "__proto__",
    "constructor",
    "toString",
    "hasOwnProperty",
    "prototype",
    "",
    " ",
    "a\nb",
    "\u001b]0;x\u0007",
    "d\u0435ploy",
    "\u202egnp",
    "servers",
    "mcpServers",
    "onchange",
    "commnd",
    "x".repeat(300),
    "\ud800",
    "😀",
  ),
  fc.string({ unit: "binary", maxLength: 12 }),
);

type Mutation =
  | { kind: "set"; pick: number; value: Json }
  | { kind: "add"; pick: number; key: string; value: Json }
  | { kind: "delete"; pick: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant("set" as const), pick: fc.nat(), value: wrongValue }),
  fc.record({ kind: fc.constant("add" as const), pick: fc.nat(), key: oddKey, value: wrongValue }),
  fc.record({ kind: fc.constant("delete" as const), pick: fc.nat() }),
);

/** The valid configuration with each mutation applied at a path chosen by `pick`. */
function mutate(ms: Mutation[]): Json {
  let doc: Json = validConfig();
  for (const given of ms) {
    // A copy: the value is put in the document, which later mutations change in place, and
    // fast-check hands the same value again (a constant such as `{}`, or a run replayed as it
    // shrinks); put in by reference, it once came to hold the document itself (a seed found a
    // cycle: "Converting circular structure to JSON").
    const m = "value" in given ? { ...given, value: structuredClone(given.value) } : given;
    const all = paths(doc);
    const path = all[m.pick % all.length]!;
    if (m.kind === "add") {
      const target = parentOf(doc, path);
      if (target !== null && typeof target === "object" && !Array.isArray(target))
        setOwn(target as Record<string, Json>, m.key, m.value); // "__proto__" an own key, as JSON.parse makes it
      else if (Array.isArray(target)) target.push(m.value);
      continue;
    }
    if (path.length === 0) {
      if (m.kind === "set") doc = m.value;
      continue;
    }
    const parent = parentOf(doc, path.slice(0, -1)) as Record<string, Json> & Json[];
    const last = path.at(-1)!;
    if (m.kind === "set") setOwn(parent, String(last), m.value);
    else if (Array.isArray(parent)) parent.splice(last as number, 1);
    else delete parent[last as string];
  }
  return doc;
}

type TextDamage =
  | { kind: "bom" }
  | { kind: "comment"; at: number; block: boolean }
  | { kind: "trailingComma"; at: number }
  | { kind: "duplicate"; at: number }
  | { kind: "truncate"; at: number }
  | { kind: "insert"; at: number; char: string }
  | { kind: "crlf" };

const textDamage: fc.Arbitrary<TextDamage> = fc.oneof(
  fc.constant<TextDamage>({ kind: "bom" }),
  fc.constant<TextDamage>({ kind: "crlf" }),
  fc.record({ kind: fc.constant("comment" as const), at: fc.nat(), block: fc.boolean() }),
  fc.record({ kind: fc.constant("trailingComma" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("duplicate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant("insert" as const),
    at: fc.nat(),
    char: fc.constantFrom("{", "}", "[", "]", ",", ":", '"', "\\", "\u0000", "\u2028", "x", "-", "0", "\t"),
  }),
);

/** Indices in `text` just before one of `chars` (outside no analysis: a plain scan). */
function positions(text: string, test: (c: string, i: number) => boolean): number[] {
  const out: number[] = [];
  for (let i = 0; i < text.length; i++) if (test(text[i]!, i)) out.push(i);
  return out;
}

function damage(text: string, ds: TextDamage[]): string {
  for (const d of ds) {
    switch (d.kind) {
      case "bom":
        text = `\uFEFF${text}`;
        break;
      case "crlf":
        text = text.replace(/\n/g, "\r\n");
        break;
      case "comment": {
        const at = positions(text, (c) => c === "\n" || c === ",");
        if (at.length === 0) break;
        const i = at[d.at % at.length]! + 1;
        text = text.slice(0, i) + (d.block ? "/* note */" : "// note\n") + text.slice(i);
        break;
      }
      case "trailingComma": {
        const at = positions(text, (c) => c === "}" || c === "]");
        if (at.length === 0) break;
        const i = at[d.at % at.length]!;
        text = `${text.slice(0, i)},${text.slice(i)}`;
        break;
      }
      case "duplicate": {
        // a key of an object written again right after its object opens: `{"k": v, ...` → `{"k": 1, "k": v, ...`
        const at = positions(text, (c, i) => c === "{" && /^\s*"/.test(text.slice(i + 1, i + 40)));
        if (at.length === 0) break;
        const i = at[d.at % at.length]!;
        const m = /^\s*("(?:[^"\\]|\\.)*")\s*:/.exec(text.slice(i + 1));
        if (!m) break;
        text = `${text.slice(0, i + 1)}${m[1]}: 1, ${text.slice(i + 1)}`;
        break;
      }
      case "truncate":
        text = text.slice(0, d.at % (text.length + 1));
        break;
      case "insert": {
        const i = d.at % (text.length + 1);
        text = text.slice(0, i) + d.char + text.slice(i);
        break;
      }
    }
  }
  return text;
}

const dir = tempDir("portcullis-config-prop-");
const FILE = join(dir, "portcullis.json");

/** Whether the text, as the loader reads it (a BOM skipped), is JSON. */
function isJson(text: string): boolean {
  try {
    JSON.parse(text.startsWith("\uFEFF") ? text.slice(1) : text);
    return true;
  } catch {
    return false;
  }
}

// (a key written twice is found in the text before the keys are judged, so its path may begin
// with a top-level key that is not a known one: a seed damaged "servers" into "-servers")
const KEY_PATH =
  /(: (the top level|servers|mcpServers|console|\$schema)[ .[]|: \["|: ([\w$-]+|\["[\s\S]*"\]) is not a known key \(|"servers"|"mcpServers"|has both "servers" and "mcpServers"|: [\s\S]+ has the key "[\s\S]*" twice \(lines \d+ and \d+\))/;

/** The invariant, for one text: a map, or a ConfigError naming the file and the key (or the position). */
function check(text: string): void {
  writeFileSync(FILE, text);
  let servers: Map<string, unknown>;
  try {
    servers = loadConfigFile(FILE);
  } catch (e) {
    if (!(e instanceof ConfigError))
      throw new Error(`not a ConfigError: ${(e as Error)?.name}: ${(e as Error)?.message}`);
    expect(e.message.startsWith(`${FILE}: `), e.message).toBe(true);
    if (isJson(text)) expect(e.message, "names no key path").toMatch(KEY_PATH);
    else expect(e.message).toMatch(/: not valid JSON \((line \d+, column \d+: |the file is empty)/);
    return;
  }
  for (const label of servers.keys()) expect(label).toMatch(LABEL_PATTERN);
  // the label's own checks (cwd) also end in a ConfigError or a server
  for (const label of servers.keys())
    try {
      resolveServer(label, dir, FILE);
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      expect(e.message.startsWith(`${FILE}: `), e.message).toBe(true);
    }
}

const PARAMS = { numRuns: 400 };

describe("portcullis.json: loaded, or refused with a ConfigError naming the file and the key", () => {
  it("arbitrary JSON values (unicode keys and strings)", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.jsonValue({ maxDepth: 4 }),
          fc.record({ servers: fc.jsonValue({ maxDepth: 3 }) }),
          fc.record({ servers: fc.constant({}), console: fc.jsonValue({ maxDepth: 2 }) }),
          fc.record({ servers: fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 })) }),
          fc.record({ mcpServers: fc.dictionary(oddKey, fc.dictionary(oddKey, wrongValue)) }),
        ),
        (v) => check(JSON.stringify(v)),
      ),
      PARAMS,
    );
  });

  it("near-valid configurations: a valid one with values of the wrong type, odd keys, keys removed", () => {
    // the valid one itself loads
    writeFileSync(FILE, JSON.stringify(validConfig(), null, 2));
    expect(loadConfigFile(FILE).size).toBe(2);
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 4 }), fc.boolean(), (ms, pretty) =>
        check(JSON.stringify(mutate(ms), null, pretty ? 2 : undefined)),
      ),
      PARAMS,
    );
  });

  it("text-level damage: BOM, comments, trailing commas, a key twice, truncation, stray characters", () => {
    fc.assert(
      fc.property(
        fc.array(mutation, { maxLength: 2 }),
        fc.array(textDamage, { minLength: 1, maxLength: 3 }),
        (ms, ds) => check(damage(JSON.stringify(mutate(ms), null, 2), ds)),
      ),
      PARAMS,
    );
  });

  it("a document nested deep and cut short is refused naming the line and the column", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 100, max: 30_000 }),
        fc.constantFrom("[", '{"a":'),
        fc.constantFrom("$schema", "servers"),
        (depth, open, key) => check(`{"console": {}, ${JSON.stringify(key)}: ${open.repeat(depth)}`),
      ),
      { numRuns: 40 },
    );
  });

  it("a key written twice under a key that is no plain name is named by a path that cannot be misread", () => {
    // found by the text-damage property: a `{` typed into "servers" made the top-level key
    // `{servers`, and the path read `{servers.inventory-local.audit`
    writeFileSync(
      FILE,
      '{"{servers": {"inventory-local": {"audit": {"arguments": "digest",\n"arguments": "full"}}}}',
    );
    expect(() => loadConfigFile(FILE)).toThrow(
      `${FILE}: ["{servers"].inventory-local.audit has the key "arguments" twice (lines 1 and 2); only the last would be read, so remove one.`,
    );
    writeFileSync(FILE, `{"servers": {"a.b\\nc": {"x": 1,\n"x": 2}}}`);
    expect(() => loadConfigFile(FILE)).toThrow(`${FILE}: servers["a.b\\nc"] has the key "x" twice`);
  });

  it("a key written twice anywhere is refused naming the object and both lines", () => {
    fc.assert(
      fc.property(fc.nat(), (at) => {
        const text = damage(JSON.stringify(validConfig(), null, 2), [{ kind: "duplicate", at }]);
        writeFileSync(FILE, text);
        expect(() => loadConfigFile(FILE)).toThrow(/ has the key ".*" twice \(lines \d+ and \d+\)/);
      }),
      { numRuns: 60 },
    );
  });
});

describe("portcullis.json through the real CLI: exit 2, one line naming the file", () => {
  const samples: [string, string][] = [
    ["a label with a newline", JSON.stringify({ servers: { "a\nb": { command: "x" } } })],
    ["a top-level key with ESC and a newline", JSON.stringify({ servers: {}, "k\u001b[2J\nx": 1 })],
    [
      "an unknown server key with a newline",
      JSON.stringify({ servers: { a: { command: "x", "on\nChange": 1 } } }),
    ],
    ["__proto__ as a server key", '{"servers": {"a": {"command": "x", "__proto__": {"command": "y"}}}}'],
    ["a BOM, then a comment", '\uFEFF{"servers": {"a": {"command": "x"}} // note\n}'],
    ["a trailing comma", '{"servers": {"a": {"command": "x",}}}'],
    ["a huge number", '{"servers": {"a": {"command": "x", "maxMessageBytes": 1e400}}}'],
    ["nested nulls", '{"servers": {"a": {"command": "x", "approval": {"tools": {"t": null}}}}}'],
    ["a key twice", '{"servers": {"a": {"command": "x"},\n "a": {"command": "y"}}}'],
  ];
  it("run LABEL and doctor --json", async () => {
    const stateDir = newStateDir();
    for (const [what, text] of samples) {
      const d = tempDir("portcullis-config-cli-");
      const file = join(d, "portcullis.json");
      writeFileSync(file, text);
      const r = await runCli(["run", "a"], { stateDir, cwd: d, input: "" });
      const shown = `${what}: exit ${r.code}\n${r.stderr}`;
      expect(r.code, shown).toBe(2);
      expect(r.stderr.endsWith("\n"), shown).toBe(true);
      // biome-ignore lint/suspicious/noControlCharactersInRegex: a raw ESC or line break is the failure
      expect(r.stderr.slice(0, -1), shown).not.toMatch(/[\n\r\u001b]/);
      expect(r.stderr.startsWith(`portcullis run: ${file}: `), shown).toBe(true);
    }
    // doctor reads the same file from its working directory: a finding, never an internal error
    for (const [what, text] of samples.slice(0, 4)) {
      const d = tempDir("portcullis-config-cli-");
      const file = join(d, "portcullis.json");
      writeFileSync(file, text);
      const r = await runCli(["doctor", "--json"], { stateDir, cwd: d, env: { HOME: d } });
      const shown = `doctor, ${what}: exit ${r.code}\n${r.stderr}\n${r.stdout}`;
      expect(r.code, shown).not.toBe(70);
      expect(r.stderr, shown).not.toMatch(/internal error|at .*\.js:\d+/i);
      expect(r.stdout, shown).toContain(JSON.stringify(file).slice(1, -1));
    }
  });
});
