// Property test that the server-output scrubber (src/vault/scrub.ts, listedForms) catches a
// released value's base64 written URL-escaped: `+`, `/` and `=` as `%2B`, `%2F`, `%3D` (either hex
// case), as encodeURIComponent, URLSearchParams or Go's QueryEscape write base64 that travels in a
// query string (a Basic credential, `base64("user:" + value)`, passed as `?auth=`), and as
// Python's quote() (which keeps `/`) and Go's PathEscape (which escapes `/` alone) write it. The
// egress proxy's answer scrubber caught the first (src/vault/egress/echo.ts, escapedForms); the
// server-output scrubber caught none, so a server that echoed such a query string showed the
// client the value's base64 with only its escapes changed. fast-check looks for a value, and a prefix of any length
// before it inside the base64 (each of the three byte alignments), where the URL-escaped base64,
// alone, inside a JSON string of a tool result, or inside a URL's query, survives scrubbing.
// The oracle is worked out here, not from the scrubber's own list of forms: the base64 characters
// the value alone determines at its alignment (8 or more), escaped as the encoder writes them.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ReleasedValues } from "../../src/vault/scrub.js";

// characters whose UTF-8 bytes make base64's `+` and `/` often (`>`, `?`, `~`, 0xBF-0xFF bytes),
// among ordinary ones
const unit = fc.constantFrom(..."?>~-_.:aZ09 é\u00ff\u07ff\uffef".split(""), "😀");
const value = fc.string({ unit, minLength: 7, maxLength: 24 });
const prefix = fc.string({ unit: fc.constantFrom(..."user:Bearx-ÿ?".split("")), maxLength: 8 });
const upper = fc.boolean();
/** which base64 of the whole: standard padded, standard unpadded, URL-safe padded (only `=` escaped) */
const alphabet = fc.constantFrom("padded", "unpadded", "url-safe") as fc.Arbitrary<
  "padded" | "unpadded" | "url-safe"
>;

/** The URL encoder: which of base64's `+`, `/`, `=` it escapes. */
type Encoder = "encodeURIComponent" | "quote" | "PathEscape";
const encoder = fc.constantFrom("encodeURIComponent", "quote", "PathEscape") as fc.Arbitrary<Encoder>;
const ESCAPES: Record<Encoder, RegExp> = {
  encodeURIComponent: /[+/=]/g, // URLSearchParams, Go's QueryEscape, Python's quote_plus too
  quote: /[+=]/g, // Python's urllib.parse.quote, whose default keeps "/"
  PathEscape: /\//g, // Go's url.PathEscape, which keeps "+" and "="
};

/** `b64` as `enc` writes it, the escapes' hex in upper or lower case. */
function escaped(b64: string, enc: Encoder, upper: boolean): string {
  return b64.replace(ESCAPES[enc], (c) => {
    const hex = c.charCodeAt(0).toString(16);
    return `%${upper ? hex.toUpperCase() : hex}`;
  });
}

function base64(bytes: Buffer, kind: "padded" | "unpadded" | "url-safe"): string {
  const std = bytes.toString("base64");
  if (kind === "padded") return std;
  if (kind === "unpadded") return std.replace(/=+$/, "");
  return std.replaceAll("+", "-").replaceAll("/", "_");
}

/**
 * The base64 characters of `whole` (the base64 of `before` + the value, `n` bytes of it) that the
 * value alone determines: those whose six bits all fall inside its bytes.
 */
function valueOnly(whole: string, before: number, n: number): string {
  return whole.slice(Math.ceil((8 * before) / 6), Math.floor((8 * (before + n)) / 6));
}

/** The places where the value's URL-escaped base64 was put, as text a server writes. */
function contexts(esc: string): { name: string; scrub: (r: ReleasedValues) => string }[] {
  const url = `https://api.example.test/v1/echo?auth=${esc}&page=2`;
  const result = (text: string) =>
    JSON.stringify({ jsonrpc: "2.0", id: 3, result: { content: [{ type: "text", text }] } });
  return [
    { name: "alone", scrub: (r) => r.scrubText(esc) },
    { name: "in a JSON string", scrub: (r) => r.scrubLine(result(`echoed: ${esc}.`)) },
    { name: "in a URL's query", scrub: (r) => r.scrubText(`GET ${url} -> 401`) },
    { name: "in a URL's query in a JSON string", scrub: (r) => r.scrubLine(result(`redirect to ${url}`)) },
  ];
}

/** What of the value's URL-escaped base64 is left in the scrubbed text of each context. */
function survivors(
  released: ReleasedValues,
  v: string,
  before: string,
  kind: "padded" | "unpadded" | "url-safe",
  enc: Encoder,
  up: boolean,
) {
  const bytes = Buffer.from(v, "utf8");
  const head = Buffer.from(before, "utf8");
  const whole = base64(Buffer.concat([head, bytes]), kind);
  const fragment = escaped(valueOnly(whole, head.length, bytes.length), enc, up);
  const left: string[] = [];
  for (const c of contexts(escaped(whole, enc, up))) {
    const out = c.scrub(released);
    // (with nothing before it, the whole of it, its escaped padding too, is the value's)
    if (before === "" && out.includes(escaped(whole, enc, up))) left.push(`${c.name}: the whole form left`);
    const at = out.indexOf(fragment);
    if (at !== -1)
      left.push(
        `${c.name}: ${JSON.stringify(fragment.slice(0, 60))}… (${fragment.length} characters) left at ${at}`,
      );
  }
  return left;
}

describe("a released value's base64, URL-escaped", () => {
  it("is caught alone and inside longer base64 at every alignment, in either hex case", () => {
    fc.assert(
      fc.property(value, prefix, alphabet, encoder, upper, (v, before, kind, enc, up) => {
        const released = new ReleasedValues();
        released.add("api", v);
        expect(survivors(released, v, before, kind, enc, up)).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it("is caught for a value too long for the regexes (over 256 characters)", () => {
    fc.assert(
      fc.property(value, prefix, alphabet, encoder, upper, (v, before, kind, enc, up) => {
        let long = v;
        while (long.length <= 256) long += v;
        const released = new ReleasedValues();
        released.add("api", long);
        expect(survivors(released, long, before, kind, enc, up)).toEqual([]);
      }),
      { numRuns: 30 },
    );
  });

  it('the case reported: encodeURIComponent(base64("user:" + value)) is replaced', () => {
    const v = "sk-live?>>~~~???-9f3c>>";
    const released = new ReleasedValues();
    released.add("api", v);
    const text = encodeURIComponent(Buffer.from(`user:${v}`).toString("base64"));
    const out = released.scrubText(text);
    expect(out).toContain("[redacted:api]");
    expect(out).not.toContain("%2BPz8%2FLTlmM2M");
  });
});
