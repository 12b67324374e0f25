// Property tests of the scrubbing of released values (src/vault/scrub.ts): fast-check looks for
// a value (regex metacharacters, quotes, backslashes, non-ASCII, astral characters) and a
// surrounding text in which some form of the value survives scrubbing, and for a text without
// the value that scrubbing changes. The forms the tests embed are computed here, independently
// of the module: raw, base64 (standard and URL-safe) alone and inside longer data at every
// alignment, encodeURIComponent, form encoding, and the value inside JSON strings (once and twice).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ReleasedValues } from "../../src/vault/scrub.js";
import { formsOf } from "../../src/vault/valueForms.js";

const SCOPE = "api";
const MARK = "[redacted:api]";

const tricky = fc.constantFrom(
  ..."abcXYZ019".split(""),
  ..."\\^$.*+?()[]{}|/-".split(""),
  '"',
  "'",
  "`",
  " ",
  "\t",
  "\n",
  "%",
  "&",
  "=",
  "é",
  "ü",
  "ß",
  "中",
  "😀",
  "\u0000",
  "\u2028",
  "<",
  "&",
);
const value = (minLength: number) => fc.string({ unit: tricky, minLength, maxLength: 40 });
const text = fc.string({ unit: fc.oneof(tricky, fc.string({ minLength: 1, maxLength: 1 })), maxLength: 60 });

/** The parts of scrubbed output outside the redaction markers. */
function outside(out: string): string[] {
  return out.split(MARK);
}

/**
 * Each part of `out` outside the markers that holds one of `forms`, with the form: none, when
 * scrubbing did its work. (Gathered and asserted once: an expect() per part and form, about 200
 * per case, cost vitest more than the scrubbing under test.)
 */
function survivors(out: string, forms: string[]): [string, string][] {
  return outside(out).flatMap((part) =>
    forms.filter((f) => part.includes(f)).map((f) => [part, f] as [string, string]),
  );
}

function scrubberOf(v: string): ReleasedValues {
  const r = new ReleasedValues();
  r.add(SCOPE, v);
  return r;
}

/** The base64 characters that `v` alone determines inside base64(prefix + v + suffix). */
function embeddedBase64(prefix: Buffer, v: string, suffix: Buffer): { whole: string; own: string } {
  const bytes = Buffer.from(v, "utf8");
  const whole = Buffer.concat([prefix, bytes, suffix]).toString("base64");
  const first = Math.ceil((prefix.length * 8) / 6);
  const end = Math.floor(((prefix.length + bytes.length) * 8) / 6);
  return { whole, own: whole.slice(first, end) };
}

const hex4 = (c: string) => c.charCodeAt(0).toString(16).padStart(4, "0");

const ENCODINGS: Record<string, (v: string) => string> = {
  raw: (v) => v,
  base64: (v) => Buffer.from(v, "utf8").toString("base64"),
  base64url: (v) => Buffer.from(v, "utf8").toString("base64url"),
  uri: (v) => encodeURIComponent(v),
  form: (v) => new URLSearchParams({ v }).toString().slice(2),
  json: (v) => JSON.stringify(v).slice(1, -1),
  jsonTwice: (v) => JSON.stringify(JSON.stringify(v)).slice(1, -1),
  // Python's json.dumps (ensure_ascii): non-ASCII as lower-case \uxxxx
  jsonPython: (v) =>
    JSON.stringify(v)
      .slice(1, -1)
      .replace(/[\u0080-\uffff]/g, (c) => `\\u${hex4(c)}`),
  // PHP's json_encode: "/" as "\/" and non-ASCII as \uxxxx
  jsonPhp: (v) =>
    JSON.stringify(v)
      .slice(1, -1)
      .replaceAll("/", "\\/")
      .replace(/[\u0080-\uffff]/g, (c) => `\\u${hex4(c)}`),
  // the UTF-8 bytes in hex
  hex: (v) => Buffer.from(v, "utf8").toString("hex"),
  HEX: (v) => Buffer.from(v, "utf8").toString("hex").toUpperCase(),
  // Python's urllib.parse.quote(): "/" kept
  pythonQuote: (v) =>
    encodeURIComponent(v)
      .replaceAll("%2F", "/")
      .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`),
  // Go's url.PathEscape: "$", "&", "+", ":", "=", "@" kept
  goPathEscape: (v) =>
    encodeURIComponent(v)
      .replace(/%(24|26|2B|3A|3D|40)/g, (_m, h: string) => String.fromCharCode(Number.parseInt(h, 16)))
      .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`),
  // Go's encoding/json: "<", ">", "&", U+2028 and U+2029 as \u00xx
  jsonGo: (v) =>
    JSON.stringify(v)
      .slice(1, -1)
      .replace(/[<>&\u2028\u2029]/g, (c) => `\\u${hex4(c)}`),
};

/**
 * A string as a JSON writer of its own may spell it: each character, by `choices` (used in turn),
 * as itself where JSON allows, as \uXXXX with lower- or upper-case hex, or as its short escape.
 */
function spelledString(s: string, choices: number[], next: { i: number }): string {
  let out = "";
  for (const c of s) {
    // a surrogate pair is one character: written as itself, or as two \uXXXX escapes
    const u = (upper: boolean) =>
      c
        .split("")
        .map((unit) => `\\u${upper ? hex4(unit).toUpperCase() : hex4(unit)}`)
        .join("");
    const ways = [u(false), u(true)];
    if (c !== '"' && c !== "\\" && c >= " ") ways.push(c);
    const short = SHORT_ESCAPES[c];
    if (short) ways.push(short);
    out += ways[choices[next.i++ % choices.length]! % ways.length];
  }
  return `"${out}"`;
}

const SHORT_ESCAPES: Partial<Record<string, string>> = {
  '"': '\\"',
  "\\": "\\\\",
  "/": "\\/",
  "\b": "\\b",
  "\f": "\\f",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
};

/** A JSON value written with every string (keys too) spelled by spelledString. */
function spelledJson(v: unknown, choices: number[], next = { i: 0 }): string {
  if (typeof v === "string") return spelledString(v, choices, next);
  if (Array.isArray(v)) return `[${v.map((x) => spelledJson(x, choices, next)).join(",")}]`;
  if (typeof v === "object" && v !== null)
    return `{${Object.entries(v)
      .map(([k, x]) => `${spelledString(k, choices, next)}:${spelledJson(x, choices, next)}`)
      .join(",")}}`;
  return JSON.stringify(v);
}

/** Every string of a parsed JSON value, keys included, and those of JSON text inside them. */
function stringsOf(v: unknown, out: string[] = []): string[] {
  if (typeof v === "string") {
    out.push(v);
    try {
      const inner: unknown = JSON.parse(v);
      if (typeof inner === "object" && inner !== null) stringsOf(inner, out);
    } catch {
      /* plain text */
    }
  } else if (Array.isArray(v)) for (const x of v) stringsOf(x, out);
  else if (typeof v === "object" && v !== null)
    for (const [k, x] of Object.entries(v)) {
      out.push(k);
      stringsOf(x, out);
    }
  return out;
}

/** Text with its JSON escapes read (as a reader of a log line might), independently of the module. */
function read(t: string): string {
  return t.replace(/\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))/g, (_m, hex: string | undefined, short: string) =>
    hex !== undefined ? String.fromCharCode(Number.parseInt(hex, 16)) : JSON.parse(`"\\${short}"`),
  );
}

// Lone surrogates cannot be URL-encoded (there is no such form): values are well-formed UTF-16.
const wellFormed = (s: string) => s === Buffer.from(s, "utf8").toString("utf8");

describe("ReleasedValues.scrubText", () => {
  it("no form of the value survives, whatever text surrounds it", () => {
    fc.assert(
      fc.property(
        value(1),
        fc.constantFrom(...Object.keys(ENCODINGS)),
        text,
        text,
        (v, encoding, before, after) => {
          fc.pre(wellFormed(v));
          const embedded = ENCODINGS[encoding]!(v);
          const out = scrubberOf(v).scrubText(`${before}${embedded}${after}`);
          expect(survivors(out, [embedded, ...formsOf(v)])).toEqual([]);
        },
      ),
      { numRuns: 400 },
    );
  });

  it("the value spelled with JSON escapes in any mix, once or twice, is caught in plain text", () => {
    fc.assert(
      fc.property(
        value(1),
        fc.array(fc.nat(3), { minLength: 1, maxLength: 40 }),
        fc.boolean(),
        text,
        text,
        (v, choices, twice, before, after) => {
          fc.pre(wellFormed(v));
          const once = spelledString(v, choices, { i: 0 }).slice(1, -1);
          const embedded = twice ? spelledString(once, choices, { i: 1 }).slice(1, -1) : once;
          const out = scrubberOf(v).scrubText(`${before}${embedded}${after}`);
          for (const part of outside(out)) expect(read(read(part))).not.toContain(v);
        },
      ),
      { numRuns: 400 },
    );
  });

  it("any percent-encoding: each character itself or its UTF-8 bytes as %XX, either case of each digit", () => {
    fc.assert(
      fc.property(
        value(1),
        fc.array(fc.nat(3), { minLength: 1, maxLength: 40 }),
        text,
        text,
        (v, choices, before, after) => {
          fc.pre(wellFormed(v));
          let i = 0;
          const encoded = [...v]
            .map((c) => {
              const pick = choices[i++ % choices.length]!;
              if (pick === 0) return c;
              const hex = [...Buffer.from(c, "utf8")]
                .map((b) => `%${b.toString(16).padStart(2, "0")}`)
                .join("");
              return pick === 1
                ? hex
                : pick === 2
                  ? hex.toUpperCase()
                  : hex.replace(/[a-f]/, (d) => d.toUpperCase());
            })
            .join("");
          const out = scrubberOf(v).scrubText(`${before}${encoded}${after}`);
          for (const part of outside(out)) expect(part).not.toContain(encoded);
        },
      ),
      { numRuns: 400 },
    );
  });

  it("a value inside longer base64 data is caught at each of the three alignments", () => {
    fc.assert(
      fc.property(
        value(8),
        fc.uint8Array({ maxLength: 7 }),
        fc.uint8Array({ maxLength: 7 }),
        fc.boolean(),
        text,
        (v, pre, post, urlSafe, around) => {
          fc.pre(wellFormed(v));
          const { whole, own } = embeddedBase64(Buffer.from(pre), v, Buffer.from(post));
          const shape = (s: string) => (urlSafe ? s.replaceAll("+", "-").replaceAll("/", "_") : s);
          const out = scrubberOf(v).scrubText(`${around}${shape(whole)}${around}`);
          expect(own.length).toBeGreaterThanOrEqual(8);
          for (const part of outside(out)) expect(part).not.toContain(shape(own));
        },
      ),
      { numRuns: 400 },
    );
  });

  it("text that holds no form of the value is unchanged", () => {
    fc.assert(
      fc.property(value(4), text, (v, t) => {
        const spelled = [t, read(t), read(read(t))];
        // (a percent escape can spell any character: text with one is left to the tests above)
        fc.pre(
          wellFormed(v) &&
            !/%[0-9a-fA-F]{2}/.test(t) &&
            !formsOf(v).some((f) => spelled.some((x) => x.includes(f))),
        );
        const r = scrubberOf(v);
        expect(r.scrubText(t)).toBe(t);
        const line = JSON.stringify({ jsonrpc: "2.0", id: 1, result: { text: t } });
        expect(r.scrubLine(line)).toBe(line);
      }),
      { numRuns: 400 },
    );
  });

  it("several values: each is replaced by its own scope's marker", () => {
    const r = new ReleasedValues();
    r.add("one", "first-value-1111");
    r.add("two", "second-value-2222");
    expect(r.size).toBe(2);
    expect(r.scrubText("a first-value-1111 b c2Vjb25kLXZhbHVlLTIyMjI= c")).toBe(
      "a [redacted:one] b [redacted:two] c",
    );
    r.add("one", "first-value-1111");
    expect(r.size).toBe(2);
    // whatever a caller names the scope, the marker stays JSON-safe
    r.add('we"ird\\scope', "third-value-3333");
    expect(r.scrubLine('{"id":1,"t":"third-value-3333"}')).toBe('{"id":1,"t":"[redacted:we_ird_scope]"}');
  });

  it("a value spelled with references or URL escapes is marked with its own scope, one scope or several", () => {
    const refs = (v: string) => [...v].map((c) => `&#${c.codePointAt(0)};`).join("");
    const one = new ReleasedValues();
    one.add("github", "pässwörd-one");
    expect(one.scrubText(`a ${refs("pässwörd-one")} b ${encodeURIComponent("pässwörd-one")} c`)).toBe(
      "a [redacted:github] b [redacted:github] c",
    );
    // with two scopes, which value a spelling writes decides its marker (a match is not given the
    // first or the only scope seen)
    const two = new ReleasedValues();
    two.add("one", "pässwörd-one");
    two.add("two", "sécret-two");
    const text = `a ${refs("sécret-two")} b ${encodeURIComponent("pässwörd-one")} c ${encodeURIComponent("sécret-two")} d ${refs("pässwörd-one")}`;
    expect(two.scrubText(text)).toBe("a [redacted:two] b [redacted:one] c [redacted:two] d [redacted:one]");
  });

  it("nothing released: nothing changes, and no pattern is even built", () => {
    const r = new ReleasedValues();
    expect(r.size).toBe(0);
    expect(r.scrubText("anything")).toBe("anything");
    expect(r.scrubLine('{"id":1}')).toBe('{"id":1}');
  });
});

/**
 * scrubPieces as it was first written, value by value and position by position: what its one pass
 * over the text must give.
 */
function piecesOneByOne(values: [string, string][], text: string): string {
  const found: { start: number; end: number; scope: string }[] = [];
  for (const [value, scope] of values) {
    const pieces = new Set<string>();
    for (let i = 0; i + 8 <= value.length; i++) pieces.add(value.slice(i, i + 8));
    for (let i = 0; i + 8 <= text.length; i++)
      if (pieces.has(text.slice(i, i + 8))) found.push({ start: i, end: i + 8, scope });
  }
  found.sort((a, b) => a.start - b.start);
  let out = "";
  let from = 0;
  let open: { start: number; end: number; scope: string } | null = null;
  for (const f of [...found, null]) {
    if (open && f && f.start < open.end) {
      open.end = Math.max(open.end, f.end);
      continue;
    }
    if (open) {
      out += `${text.slice(from, open.start)}[redacted:${open.scope}]`;
      from = open.end;
    }
    open = f && { ...f };
  }
  return out + text.slice(from);
}

describe("ReleasedValues.scrubPieces", () => {
  it("one pass over the text gives what searching value by value gives", () => {
    const unit = fc.constantFrom(..."abab01-".split(""), "é", "😀");
    // values of few characters share pieces: which value's scope a piece gets is tested too
    const few = fc.constantFrom("a", "b", "a", "b", "😀");
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: few, minLength: 1, maxLength: 20 }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.oneof(fc.string({ unit, maxLength: 20 }), fc.nat()), { maxLength: 10 }),
        (values, parts) => {
          const released = new ReleasedValues();
          const first: [string, string][] = [];
          values.forEach((v, i) => {
            released.add(`s${i}`, v);
            if (!first.some(([w]) => w === v)) first.push([v, `s${i}`]);
          });
          // ordinary text, and pieces of the values cut at various places
          const text = parts
            .map((p) =>
              typeof p === "string" ? p : values[p % values.length]!.slice(p % 5, (p % 5) + 8 + (p % 7)),
            )
            .join("");
          expect(released.scrubPieces(text)).toBe(piecesOneByOne(first, text));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("text the gateway shows anyway (its label) keeps its pieces; every other piece of the value is still taken out", () => {
    const unit = fc.constantFrom(..."inventory-apidemokey0123".split(""));
    fc.assert(
      fc.property(
        fc.string({ unit, minLength: 8, maxLength: 30 }),
        fc.string({ unit, minLength: 8, maxLength: 30 }),
        fc.nat(),
        (value, label, at) => {
          const released = new ReleasedValues();
          released.add(SCOPE, value);
          released.alsoShown(label);
          const line = `portcullis[${label}]: `;
          // the label alone is never cut (unless it holds the whole value, which scrubText takes)
          if (!label.includes(value)) expect(released.scrubPieces(line)).toBe(line);
          // a piece of the value that the label does not hold is still taken out
          const i = at % (value.length - 7);
          const piece = value.slice(i, i + 8);
          if (!label.includes(piece)) {
            expect(released.scrubPieces(`x ${piece} y`)).toContain(MARK);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe("ReleasedValues.scrubLine", () => {
  it("any JSON spelling of the value, in any mix of escapes: no string of the message holds it", () => {
    // the message, with the value in strings and keys at any depth and in JSON text inside a
    // string (whose own strings are spelled too), written with escapes chosen per character
    const doc = (v: string) =>
      fc
        .record({
          before: text,
          after: text,
          filler: fc.jsonValue({ maxDepth: 2 }),
          choices: fc.array(fc.nat(3), { minLength: 1, maxLength: 40 }),
          innerChoices: fc.array(fc.nat(3), { minLength: 1, maxLength: 40 }),
          id: fc.integer({ min: 0, max: 1e6 }),
        })
        .map(({ before, after, filler, choices, innerChoices, id }) => {
          const s = `${before}${v}${after}`;
          const inner = spelledJson({ token: s, [s]: [s] }, innerChoices);
          const message = {
            jsonrpc: "2.0",
            id,
            result: { content: [{ type: "text", text: s }], [s]: filler, deep: [{ k: [s] }], inner },
          };
          return {
            id,
            line: spelledJson(message, choices).replace(JSON.stringify(inner), () =>
              spelledString(inner, choices, { i: 0 }),
            ),
          };
        });
    fc.assert(
      fc.property(
        value(8).chain((v) => doc(v).map((d) => ({ v, ...d }))),
        ({ v, id, line }) => {
          fc.pre(wellFormed(v));
          const out = scrubberOf(v).scrubLine(line);
          const parsed = JSON.parse(out) as { id: unknown };
          expect(parsed.id).toBe(id);
          for (const s of stringsOf(parsed)) for (const part of outside(s)) expect(part).not.toContain(v);
        },
      ),
      { numRuns: 400 },
    );
  });

  it("a value anywhere in a JSON-RPC message: the line stays JSON, its id is kept, no form survives", () => {
    fc.assert(
      // at least 8 characters: a shorter value can be JSON's own syntax (`{`, `":"`), which no
      // JSON line can do without (docs/security.md: short values collide)
      fc.property(value(8), text, text, fc.integer({ min: 0, max: 1e6 }), (v, before, after, id) => {
        fc.pre(wellFormed(v));
        const inner = `${before}${v}${after}`;
        const line = JSON.stringify({
          jsonrpc: "2.0",
          id,
          result: {
            content: [{ type: "text", text: inner }],
            // JSON inside a JSON string: the value escaped twice on the wire
            structured: JSON.stringify({ k: inner, b64: Buffer.from(inner).toString("base64") }),
            [inner]: 1,
          },
        });
        const out = scrubberOf(v).scrubLine(line);
        const parsed = JSON.parse(out) as { id: unknown };
        expect(parsed.id).toBe(id);
        // the id is kept as it was (it routes the message; the client never sees it): not searched
        const rest = out.replace(`"id":${id},`, "");
        expect(rest).not.toBe(out);
        expect(survivors(rest, formsOf(v))).toEqual([]);
        const { id: _id, ...body } = parsed;
        expect(survivors(JSON.stringify(body), [v])).toEqual([]);
      }),
      { numRuns: 400 },
    );
  });

  it("a value echoed as a bare number is rewritten as a marker; the message's id is never touched", () => {
    const r = scrubberOf("123456789");
    const out = r.scrubLine('{"jsonrpc":"2.0","id":123456789,"result":{"pin":123456789,"s":"x123456789"}}');
    expect(JSON.parse(out)).toEqual({
      jsonrpc: "2.0",
      id: 123456789,
      result: { pin: MARK, s: `x${MARK}` },
    });
  });

  it("a value of any length of digits echoed as a bare number: the whole number is a marker, no digit of it left", () => {
    // JSON.parse reads a number of more than 15-17 digits rounded: scrubbing what it read would
    // find nothing, and the value's leading digits would go out as a number
    const digits = fc.stringMatching(/^[1-9][0-9]{7,39}$/);
    const around = fc.constantFrom("", "-", "0.", "1.", "-0.");
    const after = fc.constantFrom("", "0", ".5", "e3", "E-2", "12");
    fc.assert(
      fc.property(digits, around, after, fc.integer({ min: 0, max: 1e6 }), (v, pre, post, id) => {
        const num = `${pre}${v}${post}`;
        fc.pre(!Number.isNaN(Number(num)) && /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(num));
        const line = `{"jsonrpc":"2.0","id":${id},"result":{"n":${num},"list":[${num},1],"s":"v=${v}"}}`;
        const out = scrubberOf(v).scrubLine(line);
        const parsed = JSON.parse(out) as { id: unknown };
        expect(parsed.id).toBe(id);
        expect(parsed).toEqual({ jsonrpc: "2.0", id, result: { n: MARK, list: [MARK, 1], s: `v=${MARK}` } });
      }),
      { numRuns: 300 },
    );
  });

  it("a value of digits that is also the message's id: the id stays as written, every other number holding it is a marker", () => {
    // The message is rewritten (its id holds the value); read back, its numbers of more than
    // 15-17 digits were rounded, and all but the value's last digits went out, in the id and in
    // every other number holding it.
    const digits = fc.stringMatching(/^[1-9][0-9]{7,39}$/);
    const after = fc.constantFrom("", "0", ".5", "e3", "12");
    const shape = fc.constantFrom("result", "request", "batch");
    fc.assert(
      fc.property(digits, after, shape, (v, post, kind) => {
        const num = `${v}${post}`;
        const body =
          kind === "result"
            ? `"result":{"n":${num},"list":[${num},1],"s":"v=${v}"}`
            : `"method":"x","params":{"n":${num},"list":[${num},1],"s":"v=${v}"}`;
        const message = `{"jsonrpc":"2.0","id":${v},${body}}`;
        const out = scrubberOf(v).scrubLine(
          kind === "batch" ? `[${message},{"jsonrpc":"2.0","id":7,"result":{"n":${num}}}]` : message,
        );
        const scrubbed = { n: MARK, list: [MARK, 1], s: `v=${MARK}` };
        if (kind === "batch") {
          // no element's id text at hand: the id is scrubbed like the rest
          expect(out).not.toContain(v.slice(0, 8));
          expect(JSON.parse(out)).toEqual([
            { jsonrpc: "2.0", id: MARK, method: "x", params: scrubbed },
            { jsonrpc: "2.0", id: 7, result: { n: MARK } },
          ]);
          return;
        }
        const head = `{"id":${v},`;
        expect(out.startsWith(head)).toBe(true);
        expect(out.slice(head.length)).not.toContain(v.slice(0, 8));
        const { id: _id, ...rest } = JSON.parse(out) as Record<string, unknown>;
        expect(rest).toEqual(
          kind === "result"
            ? { jsonrpc: "2.0", result: scrubbed }
            : { jsonrpc: "2.0", method: "x", params: scrubbed },
        );
      }),
      { numRuns: 300 },
    );
  });

  it("a message rewritten from its parsed form keeps every key, __proto__ and constructor included", () => {
    // the value as the id and elsewhere as a bare number: the message is rewritten from its
    // parsed form (its id kept as written)
    const key = fc.constantFrom("__proto__", "constructor", "toString", "hasOwnProperty", "plain");
    const leaf = fc.oneof(
      fc.string({ maxLength: 5 }),
      fc.integer({ min: -1000, max: 1000 }),
      fc.constant(null),
    );
    const tree = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: "small" },
        leaf,
        fc.array(tie("node"), { maxLength: 3 }),
        fc.uniqueArray(fc.tuple(key, tie("node")), { maxLength: 4, selector: ([k]) => k }),
      ),
    })).node;
    /** JSON text of a tree, pairs written as object members (so "__proto__" is a key as written) */
    const jsonOf = (t: unknown): string => {
      if (Array.isArray(t) && t.every((x) => Array.isArray(x) && x.length === 2 && typeof x[0] === "string"))
        return `{${t.map(([k, x]) => `${JSON.stringify(k)}:${jsonOf(x)}`).join(",")}}`;
      if (Array.isArray(t)) return `[${t.map(jsonOf).join(",")}]`;
      return JSON.stringify(t);
    };
    fc.assert(
      fc.property(tree, (t) => {
        const data = jsonOf(t);
        const line = `{"jsonrpc":"2.0","id":123456789,"result":{"pin":123456789,"data":${data}}}`;
        const out = JSON.parse(scrubberOf("123456789").scrubLine(line)) as { result: { data: unknown } };
        expect(JSON.stringify(out.result.data)).toBe(JSON.stringify(JSON.parse(data)));
      }),
      { numRuns: 300 },
    );
  });

  it("a line that is not JSON is still scrubbed (the gateway drops and logs it)", () => {
    const r = scrubberOf("secret-value-xyz");
    expect(r.scrubLine("Restarting secret-value-xyz {")).toBe(`Restarting ${MARK} {`);
  });
});
