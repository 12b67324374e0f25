// The classifier that refuses a method name which is not byte-for-byte a guarded method but folds
// to one (isGuardedMethodVariant, src/gateway/protocol.ts; docs/security.md, "Refused": `Tools/Call`,
// `"tools/call "`, `tools//call`, `tools/call/`, a zero-width space inside, …). A lenient server
// that folds method names would otherwise run, as a call, a request the guard never saw.
//
// fast-check writes each guarded method with one kind of change at a time, then with all of them
// together, and looks for a spelling the classifier lets through:
//   - case, letter by letter: ASCII, and the other characters whose JavaScript upper or lower case
//     IS that letter (`ı` U+0131 upper-cases to `I`, `ſ` U+017F to `S`, the Kelvin sign `K`
//     lower-cases to `k`): a server comparing upper-cased names (Python's str.upper, Java's
//     equalsIgnoreCase) dispatches them as the method;
//   - whitespace (every character `\s` matches) anywhere, leading and trailing included;
//   - control and format characters (Cc, Cf: zero-width characters, the soft hyphen, bidi
//     controls, tags) anywhere;
//   - the other assigned Default_Ignorable_Code_Points (the combining grapheme joiner, variation
//     selectors, Hangul fillers, Mongolian variation selectors, Khmer inherent vowels): characters
//     docs/security.md itself counts among those "a human cannot see" ("A tool that looks like
//     another");
//   - compatibility forms, letter by letter (every code point whose NFKC is the letter, or the
//     slash: fullwidth `ｔ`, mathematical `𝐭`, circled `ⓣ`, the fullwidth solidus `／`);
//   - the slash doubled, and trailing slashes.
// Not generated, because neither the function's comment nor docs/security.md says they fold, and
// no common name comparison folds them: look-alike letters of another script (Cyrillic `о`), other
// separators (`\`, `.`, `_`, U+2215 DIVISION SLASH), a leading slash.
//
// Controls: a guarded method as written is not a variant (it is guarded itself); the unguarded
// methods written with the same changes are not flagged; and any string whose letters (after NFKC
// and lower-casing: the only letters the fold can leave) are not a guarded method's is not flagged.
// Last, a sample of the generated variants goes through a real gateway to the lenient fixture
// (which folds names as a careless server does and logs every method it receives): each is
// answered -32601 and none reaches the server.
import { existsSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isGuardedMethod, isGuardedMethodVariant } from "../../src/gateway/protocol.js";
import { readJsonLines, removeDir, tempDir } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";

/** The guarded methods (docs/security.md, "What the guard sees"; checked against the code below). */
const GUARDED = [
  "tools/call",
  "tools/list",
  "resources/read",
  "resources/subscribe",
  "prompts/get",
  "completion/complete",
  "initialize",
  "subscriptions/listen",
] as const;

/** Methods the gateway relays (or answers) without the guard. */
const UNGUARDED = [
  "ping",
  "resources/list",
  "resources/templates/list",
  "resources/unsubscribe",
  "prompts/list",
  "logging/setLevel",
  "server/discover",
  "notifications/initialized",
  "notifications/cancelled",
  "sampling/createMessage",
  "elicitation/create",
  "roots/list",
] as const;

// ---- character tables, read from the Unicode data of this node (once) ----

/** non-ASCII characters whose lower or upper case is the ASCII letter (key: lower-case letter) */
const CASE_OTHERS = new Map<string, string[]>();
/** non-ASCII characters whose NFKC, lower-cased, is the letter or "/" (key: that character) */
const COMPAT = new Map<string, string[]>();
const WHITESPACE: string[] = [];
const CONTROL_OR_FORMAT: string[] = [];
/** assigned Default_Ignorable_Code_Points that are neither whitespace nor Cc nor Cf */
const OTHER_IGNORABLE: string[] = [];

const push = (m: Map<string, string[]>, k: string, c: string) => {
  const list = m.get(k);
  if (list) list.push(c);
  else m.set(k, [c]);
};
for (let cp = 0; cp <= 0x10ffff; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  const c = String.fromCodePoint(cp);
  if (/\s/u.test(c)) WHITESPACE.push(c);
  else if (/\p{Cc}|\p{Cf}/u.test(c)) CONTROL_OR_FORMAT.push(c);
  else if (/\p{Default_Ignorable_Code_Point}/u.test(c) && !/\p{Cn}/u.test(c)) OTHER_IGNORABLE.push(c);
  if (cp < 0x80) continue;
  const upper = c.toUpperCase();
  const lower = c.toLowerCase();
  if (/^[A-Z]$/.test(upper)) push(CASE_OTHERS, upper.toLowerCase(), c);
  else if (/^[a-z]$/.test(lower)) push(CASE_OTHERS, lower, c);
  const n = c.normalize("NFKC").toLowerCase();
  if (/^[a-z/]$/.test(n)) push(COMPAT, n, c);
}

/** One character of a method written by `spell`, the other characters kept. */
const perChar = (method: string, spell: (ch: string) => string[]) =>
  fc.tuple(...[...method].map((ch) => fc.constantFrom(ch, ...spell(ch)))).map((parts) => parts.join(""));

const asciiCase = (ch: string) => (/[a-z]/i.test(ch) ? [ch.toUpperCase(), ch.toLowerCase()] : []);
const unicodeCase = (ch: string) => CASE_OTHERS.get(ch.toLowerCase()) ?? [];
const compatForm = (ch: string) => COMPAT.get(ch.toLowerCase()) ?? [];

/** `text` with 1 to `max` characters of `pool` inserted anywhere (at the start and the end too). */
const inserted = (text: fc.Arbitrary<string>, pool: readonly string[], max = 4) =>
  fc
    .tuple(text, fc.array(fc.tuple(fc.nat(), fc.constantFrom(...pool)), { minLength: 1, maxLength: max }))
    .map(([t, adds]) => {
      const chars = [...t];
      for (const [at, c] of adds) chars.splice(at % (chars.length + 1), 0, c);
      return chars.join("");
    });

/** Each slash of `text` doubled up to 3 times, and up to 3 slashes added at the end. */
const slashes = (text: fc.Arbitrary<string>) =>
  fc
    .tuple(text, fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 4, maxLength: 4 }), fc.nat(3))
    .map(([t, counts, trailing]) => {
      let i = 0;
      return t.replace(/\//g, () => "/".repeat(counts[i++ % counts.length]!)) + "/".repeat(trailing);
    });

/** Every change the doc and the function's comment name, together, on `method`. */
const documentedChanges = (method: string) =>
  inserted(
    slashes(perChar(method, (ch) => [...asciiCase(ch), ...compatForm(ch)])),
    [...WHITESPACE, ...CONTROL_OR_FORMAT],
    5,
  );

const anyGuarded = fc.constantFrom(...GUARDED);

/** Asserts that `variant`, written for guarded method `method`, is handled as guarded. */
function treatedAsGuarded(method: string, variant: string): void {
  if (variant === method) {
    expect(isGuardedMethod(variant)).toBe(true);
    expect(isGuardedMethodVariant(variant)).toBe(false);
    return;
  }
  expect(isGuardedMethod(variant), JSON.stringify(variant)).toBe(false);
  expect(isGuardedMethodVariant(variant), `${JSON.stringify(variant)} folds to ${method}`).toBe(true);
}

/** The letters the fold can leave of `text`: NFKC, lower case, [a-z] only. */
const letters = (text: string) =>
  text
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[^a-z]/g, "");
const GUARDED_LETTERS = new Set(GUARDED.map(letters));

const RUNS = { numRuns: 300 };

describe("isGuardedMethodVariant: spellings of a guarded method", () => {
  it("the tables are what this test means them to be (so that no property passes on an empty pool)", () => {
    for (const m of GUARDED) expect(isGuardedMethod(m), m).toBe(true);
    for (const m of UNGUARDED) expect(isGuardedMethod(m), m).toBe(false);
    expect(CASE_OTHERS.get("i")).toContain("\u0131");
    expect(CASE_OTHERS.get("s")).toContain("\u017f");
    expect(COMPAT.get("/")).toContain("\uff0f");
    expect(COMPAT.get("t")).toEqual(expect.arrayContaining(["\uff54", "\u{1d42d}", "\u24e3"]));
    expect(WHITESPACE).toEqual(expect.arrayContaining([" ", "\t", "\u00a0", "\u3000", "\u2028", "\ufeff"]));
    expect(CONTROL_OR_FORMAT).toEqual(expect.arrayContaining(["\u0000", "\u200b", "\u00ad", "\u{e0041}"]));
    expect(OTHER_IGNORABLE).toEqual(expect.arrayContaining(["\u034f", "\ufe0f", "\u3164", "\u180b"]));
  });

  it("ASCII case changes, letter by letter", () => {
    fc.assert(
      fc.property(
        anyGuarded.chain((m) => perChar(m, asciiCase).map((v) => [m, v] as const)),
        ([m, v]) => treatedAsGuarded(m, v),
      ),
      RUNS,
    );
  });

  // Counterexample found: "tools/lıst" (U+0131 LATIN SMALL LETTER DOTLESS I, whose upper case is
  // "I") is not flagged, nor "ınitialize", "completıon/complete", "subscrıptions/listen": the fold
  // lower-cases, and "ı".toLowerCase() is "ı". Python's "tools/lıst".upper() == "TOOLS/LIST" and
  // Java's equalsIgnoreCase both take it for the method. ("toolſ/call", U+017F, is flagged: NFKC
  // makes it "s".) The fold now takes upper case, then lower, as those compares do.
  it("Unicode case: every character whose upper or lower case is the letter", () => {
    expect(isGuardedMethodVariant("toolſ/call")).toBe(true);
    fc.assert(
      fc.property(
        anyGuarded.chain((m) => perChar(m, unicodeCase).map((v) => [m, v] as const)),
        ([m, v]) => treatedAsGuarded(m, v),
      ),
      { ...RUNS, examples: [[["tools/list", "tools/l\u0131st"]]] },
    );
  });

  it("whitespace anywhere, leading and trailing included", () => {
    fc.assert(
      fc.property(
        anyGuarded.chain((m) => inserted(fc.constant(m), WHITESPACE).map((v) => [m, v] as const)),
        ([m, v]) => treatedAsGuarded(m, v),
      ),
      RUNS,
    );
  });

  it("control and format characters (zero-width, soft hyphen, bidi, tags) anywhere", () => {
    fc.assert(
      fc.property(
        anyGuarded.chain((m) => inserted(fc.constant(m), CONTROL_OR_FORMAT).map((v) => [m, v] as const)),
        ([m, v]) => treatedAsGuarded(m, v),
      ),
      RUNS,
    );
  });

  // Counterexample found: "tools/\u034fcall" (U+034F COMBINING GRAPHEME JOINER) is not flagged,
  // nor a variation selector (U+FE0F), a Hangul filler (U+3164, U+115F) or a Mongolian
  // variation selector (U+180B) inside the name: the fold removes whitespace, Cc and Cf only,
  // while the doc's own list of characters "a human cannot see" includes every
  // Default_Ignorable_Code_Point. The fold now drops those too.
  it("the other invisible characters (Default_Ignorable_Code_Point) anywhere", () => {
    fc.assert(
      fc.property(
        anyGuarded.chain((m) => inserted(fc.constant(m), OTHER_IGNORABLE).map((v) => [m, v] as const)),
        ([m, v]) => treatedAsGuarded(m, v),
      ),
      { ...RUNS, examples: [[["tools/call", "tools/\u034fcall"]]] },
    );
  });

  it("compatibility forms letter by letter (fullwidth, mathematical, circled letters, the fullwidth solidus)", () => {
    fc.assert(
      fc.property(
        anyGuarded.chain((m) => perChar(m, compatForm).map((v) => [m, v] as const)),
        ([m, v]) => treatedAsGuarded(m, v),
      ),
      RUNS,
    );
  });

  it("slashes doubled, and trailing slashes", () => {
    fc.assert(
      fc.property(
        anyGuarded.chain((m) => slashes(fc.constant(m)).map((v) => [m, v] as const)),
        ([m, v]) => treatedAsGuarded(m, v),
      ),
      RUNS,
    );
  });

  it("every documented change together", () => {
    fc.assert(
      fc.property(
        anyGuarded.chain((m) => documentedChanges(m).map((v) => [m, v] as const)),
        ([m, v]) => treatedAsGuarded(m, v),
      ),
      { numRuns: 1000 },
    );
  });
});

describe("isGuardedMethodVariant: what it must not flag", () => {
  it("a guarded method as written is guarded, not a variant", () => {
    for (const m of GUARDED) {
      expect(isGuardedMethod(m)).toBe(true);
      expect(isGuardedMethodVariant(m)).toBe(false);
    }
  });

  it("an unguarded method, written with the same changes, is not flagged", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...UNGUARDED).chain((m) => fc.oneof(fc.constant(m), documentedChanges(m))),
        (v) => {
          expect(isGuardedMethodVariant(v), JSON.stringify(v)).toBe(false);
        },
      ),
      RUNS,
    );
  });

  it("a near miss of a guarded method (a letter dropped, changed or added), with the same changes, is not flagged", () => {
    const nearMiss = anyGuarded
      .chain((m) =>
        fc.tuple(
          fc.constant(m),
          fc.nat(m.length - 1),
          fc.constantFrom("drop", "change", "add"),
          fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz"),
        ),
      )
      .map(([m, at, how, letter]) => {
        const i = at;
        if (how === "drop") return m.slice(0, i) + m.slice(i + 1);
        if (how === "change") return m.slice(0, i) + letter + m.slice(i + 1);
        return m.slice(0, i) + letter + m.slice(i);
      })
      .filter((m) => !GUARDED_LETTERS.has(letters(m)))
      .chain((m) => documentedChanges(m));
    fc.assert(
      fc.property(nearMiss, (v) => {
        expect(isGuardedMethodVariant(v), JSON.stringify(v)).toBe(false);
      }),
      RUNS,
    );
  });

  it("any string whose letters are not a guarded method's is not flagged", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ unit: "binary", maxLength: 40 }), fc.string({ maxLength: 40 })),
        (s) => {
          fc.pre(!GUARDED_LETTERS.has(letters(s)));
          expect(isGuardedMethodVariant(s), JSON.stringify(s)).toBe(false);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe("through a real gateway", () => {
  let dir: string;
  let peer: RawGateway;
  let methodLog: string;
  const received = () =>
    existsSync(methodLog) ? readJsonLines<{ method: string }>(methodLog).map((l) => l.method) : [];

  beforeAll(async () => {
    dir = tempDir();
    methodLog = join(dir, "methods.jsonl");
    peer = rawGateway({
      args: ["--label", "lenient", "--approval", "none", "--", NODE, FIXTURES.lenient],
      env: { FIXTURE_METHOD_LOG: methodLog },
    });
    const init = await peer.initialize();
    expect(init.error).toBeUndefined();
  });
  afterAll(async () => {
    await peer?.close();
    if (dir) removeDir(dir);
  });

  it("generated variants are answered -32601 and never reach the lenient server; the server was reachable", async () => {
    const sent: string[] = [];
    await fc.assert(
      fc.asyncProperty(
        anyGuarded.chain((m) => documentedChanges(m)).filter((v) => !isGuardedMethod(v)),
        async (v) => {
          sent.push(v);
          const r = await peer.request(v, { name: "echo", arguments: { message: "x" } });
          expect(r.error, JSON.stringify(v)).toMatchObject({ code: -32601 });
          expect(r.result).toBeUndefined();
        },
      ),
      { numRuns: 40 },
    );
    // an ordinary call and an unguarded method still go through: the server was there all along
    const call = await peer.request("tools/call", { name: "echo", arguments: { message: "ok" } });
    expect(call.error).toBeUndefined();
    expect((await peer.request("ping")).error).toBeUndefined();
    const methods = received();
    expect(methods).toContain("tools/call");
    expect(methods).toContain("ping");
    expect(sent.length).toBeGreaterThan(0);
    for (const v of sent) expect(methods, JSON.stringify(v)).not.toContain(v);
    // what reached the server: the handshake and the gateway's own catalog fetch (tools/list as
    // written), then only the two requests the client sent as written
    expect(
      methods.filter((m) => !["initialize", "notifications/initialized", "tools/list"].includes(m)),
    ).toEqual(["tools/call", "ping"]);
  });
});
