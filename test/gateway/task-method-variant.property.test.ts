// The classifier that refuses the client's task methods (isTaskMethod, src/gateway/protocol.ts;
// docs/security.md: "the client's `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` (and
// names folding to them) are refused -32601"). test/gateway/guarded-method-variant.property.test.ts
// searches the same fold for the guarded methods and leaves tasks/* out; this file searches it for
// the task methods. The function's comment names what folds: "compatibility forms, accents, case,
// whitespace, invisible characters and slashes". fast-check writes each task method with those
// changes (one kind at a time, then all together) and looks for a spelling a lenient server could
// dispatch as the task method but which the classifier lets through:
//   - case, letter by letter: ASCII, and every other character whose upper or lower case is that
//     letter (`ſ`, the Kelvin sign `K`);
//   - accents and compatibility forms: every character whose NFKD, marks dropped, in either case,
//     is the letter (`á`, fullwidth `ｔ`, mathematical `𝐭`, the fullwidth solidus `／`), and the
//     ligatures that spell two letters at once (`ﬆ` for "st" in tasks/list);
//   - whitespace, control and format characters and the other Default_Ignorable_Code_Points,
//     anywhere;
//   - slashes doubled, and trailing slashes.
// Controls: the methods as written are task methods; other methods (tasks/create, the server's
// notifications/tasks/status, the guarded and unguarded methods, and their variants) are not;
// and a string whose letters are not a task method's letters is not flagged.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isGuardedMethod, isTaskMethod } from "../../src/gateway/protocol.js";

const TASKS = ["tasks/get", "tasks/result", "tasks/list", "tasks/cancel"] as const;
const NOT_TASKS = [
  "tasks/create",
  "tasks/update",
  "tasks",
  "tasks/",
  "task/get",
  "tasks/gets",
  "tasks/results",
  "notifications/tasks/status",
  "tools/call",
  "tools/list",
  "resources/list",
  "ping",
  "initialize",
  "subscriptions/listen",
] as const;

// ---- character tables, from this node's Unicode data ----

/** The fold as the doc states it, for one character: NFKD, marks dropped, case folded both ways. */
const foldChar = (c: string) => c.normalize("NFKD").replace(/\p{M}/gu, "").toUpperCase().toLowerCase();

/** non-ASCII characters that fold to one ASCII letter or "/" (key: that character) */
const FOLDS_TO = new Map<string, string[]>();
/** non-ASCII characters that fold to two or more ASCII letters (key: those letters) */
const LIGATURES = new Map<string, string[]>();
const WHITESPACE: string[] = [];
const INVISIBLE: string[] = [];
const push = (m: Map<string, string[]>, k: string, c: string) => {
  const list = m.get(k);
  if (list) list.push(c);
  else m.set(k, [c]);
};
for (let cp = 0; cp <= 0x10ffff; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  const c = String.fromCodePoint(cp);
  if (/\s/u.test(c)) WHITESPACE.push(c);
  else if (/[\p{Cc}\p{Cf}]/u.test(c) || (/\p{Default_Ignorable_Code_Point}/u.test(c) && !/\p{Cn}/u.test(c)))
    INVISIBLE.push(c);
  if (cp < 0x80 || /\p{Cn}/u.test(c)) continue;
  const f = foldChar(c);
  const upper = c.toUpperCase().toLowerCase();
  for (const g of new Set([f, upper, c.toLowerCase()])) {
    if (/^[a-z/]$/.test(g)) push(FOLDS_TO, g, c);
    else if (/^[a-z]{2,3}$/.test(g) && foldChar(c) === g) push(LIGATURES, g, c);
  }
}
for (const [k, list] of FOLDS_TO) FOLDS_TO.set(k, [...new Set(list)]);

/** One character of a method written by `spell`, the others kept. */
const perChar = (method: string, spell: (ch: string) => string[]) =>
  fc.tuple(...[...method].map((ch) => fc.constantFrom(ch, ...spell(ch)))).map((parts) => parts.join(""));

const asciiCase = (ch: string) => (/[a-z]/i.test(ch) ? [ch.toUpperCase()] : []);
const folded = (ch: string) => FOLDS_TO.get(ch) ?? [];

/** Each run of letters a ligature spells, written as that ligature, where it stands in `method`. */
const withLigatures = (method: string) => {
  const spots: { at: number; letters: string; forms: string[] }[] = [];
  for (const [letters, forms] of LIGATURES)
    for (let at = method.indexOf(letters); at !== -1; at = method.indexOf(letters, at + 1))
      spots.push({ at, letters, forms });
  if (spots.length === 0) return fc.constant(method);
  return fc
    .constantFrom(...spots)
    .chain(({ at, letters, forms }) =>
      fc.constantFrom(...forms).map((form) => method.slice(0, at) + form + method.slice(at + letters.length)),
    );
};

/** `text` with 1 to `max` characters of `pool` inserted anywhere. */
const inserted = (text: fc.Arbitrary<string>, pool: readonly string[], max = 4) =>
  fc
    .tuple(text, fc.array(fc.tuple(fc.nat(), fc.constantFrom(...pool)), { minLength: 1, maxLength: max }))
    .map(([t, adds]) => {
      const chars = [...t];
      for (const [at, c] of adds) chars.splice(at % (chars.length + 1), 0, c);
      return chars.join("");
    });

/** Each slash doubled up to 3 times, and up to 3 slashes added at the end. */
const slashes = (text: fc.Arbitrary<string>) =>
  fc
    .tuple(text, fc.integer({ min: 1, max: 4 }), fc.nat(3))
    .map(([t, n, trailing]) => t.replace(/\//g, "/".repeat(n)) + "/".repeat(trailing));

const anyTask = fc.constantFrom(...TASKS);

function classifiedAsTask(method: string, variant: string): void {
  expect(isTaskMethod(variant), `${JSON.stringify(variant)} folds to ${method}`).toBe(true);
}

const RUNS = { numRuns: 300 };

describe("isTaskMethod: any spelling of a task method a lenient server could read as one", () => {
  it("the tables are what this test means them to be", () => {
    for (const m of TASKS) expect(isTaskMethod(m), m).toBe(true);
    expect(FOLDS_TO.get("s")).toEqual(expect.arrayContaining(["\u017f", "\uff53", "\u015b"]));
    expect(FOLDS_TO.get("k")).toContain("\u212a");
    expect(FOLDS_TO.get("/")).toContain("\uff0f");
    expect(FOLDS_TO.get("a")).toEqual(expect.arrayContaining(["á", "ａ", "\u{1d41a}"]));
    expect(LIGATURES.get("st")).toEqual(expect.arrayContaining(["\ufb06"]));
    expect(WHITESPACE).toEqual(expect.arrayContaining([" ", "\t", "\u00a0", "\u3000", "\ufeff"]));
    expect(INVISIBLE).toEqual(
      expect.arrayContaining(["\u0000", "\u200b", "\u00ad", "\u034f", "\ufe0f", "\u{e0041}"]),
    );
  });

  it("ASCII case, letter by letter", () => {
    fc.assert(
      fc.property(
        anyTask.chain((m) => perChar(m, asciiCase).map((v) => [m, v] as const)),
        ([m, v]) => classifiedAsTask(m, v),
      ),
      RUNS,
    );
  });

  it("accents, compatibility forms and other-script case mates, letter by letter", () => {
    fc.assert(
      fc.property(
        anyTask.chain((m) => perChar(m, folded).map((v) => [m, v] as const)),
        ([m, v]) => classifiedAsTask(m, v),
      ),
      RUNS,
    );
  });

  it("ligatures that spell two letters of it", () => {
    fc.assert(
      fc.property(
        anyTask.chain((m) => withLigatures(m).map((v) => [m, v] as const)),
        ([m, v]) => classifiedAsTask(m, v),
      ),
      RUNS,
    );
  });

  it("whitespace, and invisible characters, anywhere", () => {
    fc.assert(
      fc.property(
        anyTask.chain((m) =>
          inserted(fc.constant(m), [...WHITESPACE, ...INVISIBLE]).map((v) => [m, v] as const),
        ),
        ([m, v]) => classifiedAsTask(m, v),
      ),
      RUNS,
    );
  });

  it("slashes doubled, trailing slashes", () => {
    fc.assert(
      fc.property(
        anyTask.chain((m) => slashes(fc.constant(m)).map((v) => [m, v] as const)),
        ([m, v]) => classifiedAsTask(m, v),
      ),
      RUNS,
    );
  });

  it("every change together", () => {
    fc.assert(
      fc.property(
        anyTask.chain((m) =>
          inserted(
            slashes(withLigatures(m).chain((l) => perChar(l, (ch) => [...asciiCase(ch), ...folded(ch)]))),
            [...WHITESPACE, ...INVISIBLE],
            5,
          ).map((v) => [m, v] as const),
        ),
        ([m, v]) => classifiedAsTask(m, v),
      ),
      { numRuns: 1000 },
    );
  });
});

describe("isTaskMethod: nothing else", () => {
  it("other methods, and their spellings, are not task methods", () => {
    const other = fc.constantFrom(...NOT_TASKS);
    fc.assert(
      fc.property(
        other.chain((m) =>
          fc.oneof(
            fc.constant(m),
            perChar(m, (ch) => [...asciiCase(ch), ...folded(ch)]),
            inserted(fc.constant(m), [...WHITESPACE, ...INVISIBLE]),
            slashes(fc.constant(m)),
          ),
        ),
        (v) => {
          expect(isTaskMethod(v), JSON.stringify(v)).toBe(false);
        },
      ),
      { numRuns: 600 },
    );
    for (const m of NOT_TASKS) if (isGuardedMethod(m)) expect(isTaskMethod(m)).toBe(false);
  });

  it("a string whose letters are not a task method's letters is not flagged", () => {
    const letters = (t: string) => foldChar(t).replace(/[^a-z]/g, "");
    const TASK_LETTERS = new Set(TASKS.map(letters));
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 20 }),
          fc.string({ unit: fc.constantFrom(..."tasksgetresultlistcancel/ ".split("")), maxLength: 16 }),
        ),
        (s) => {
          fc.pre(!TASK_LETTERS.has(letters(s)));
          expect(isTaskMethod(s), JSON.stringify(s)).toBe(false);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
