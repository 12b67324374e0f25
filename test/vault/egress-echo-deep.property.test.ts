// The egress proxy's echo check (src/vault/egress/echo.ts) against escapes read more than once,
// and references as HTML's parser reads them without their `;`: each character of a released
// value, and each `+`, `/`, `=` (`-`, `_`) of its base64 (whole, or inside longer base64 at any
// alignment, as a Basic auth echo), written as itself, a reference with up to 16 digits or
// without its `;` (`&#43`, `&quot`), a reference written with references (`&amp;#43;`,
// `&AMP;amp;#x2b;`: an HTML page escaped again), a URL escape escaped up to five times
// (`%252525252B`), a `\u` escape, or one escaped again as JSON text inside a JSON string writes it
// (`\\u002b`), in any mix (deepSpelling.ts; a URL escape whose `%` is a reference, `&#37;2B`, is
// not read by the proxy and not written here). The body cut anywhere. Before, `&amp;#43;`,
// `%25252B`, `&#43`, `&#00000000043;` and `\\u002b` reached the server. And the placeholder of an
// occurrence found URL-escaped d times is URL-escaped d times too, so that it reads back as the
// value would: before, once, whatever d.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EchoScrubber, type Spelling, spellingsOf, withoutValues } from "../../src/vault/egress/echo.js";
import { KINDS, readDeep, spellDeepAll } from "./deepSpelling.js";

/** `body` through one scrubber, cut at `cuts`. */
function streamed(body: Buffer, cuts: number[], s: readonly Spelling[]): Buffer {
  const scrubber = new EchoScrubber(s);
  const out: Buffer[] = [];
  let at = 0;
  for (const c of [...new Set(cuts.map((c) => c % (body.length + 1)))].sort((a, b) => a - b)) {
    out.push(scrubber.push(body.subarray(at, c)));
    at = c;
  }
  out.push(scrubber.push(body.subarray(at)), scrubber.end());
  return Buffer.concat(out);
}

/** The base64 characters that `bytes` alone determine at byte offset `offset` of longer data. */
function determined(bytes: Buffer, offset: number): string {
  const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString("base64");
  return encoded.slice(Math.ceil((8 * offset) / 6), Math.floor((8 * (offset + bytes.length)) / 6));
}

/** picks without kind 7 (`&#37;2B`: a URL escape whose `%` is a reference, not read by the proxy) */
const picks = fc.array(
  fc.nat().map((n) => (n % KINDS === 7 ? n + 1 : n)),
  { minLength: 1, maxLength: 12 },
);
const around = fc
  .array(fc.constantFrom(" ", "\n", "<p>", "&", "&amp;", "&amp", "#", ";", "%", "%25", "\\", "\\u00", "x"), {
    maxLength: 6,
  })
  .map((a) => a.join(""));
const cuts = fc.array(fc.nat(), { maxLength: 6 });
const PLACEHOLDER = /portcullis-placeholder(?::|%(?:25)*3A)api/;

describe("a released value echoed with escapes read more than once and references without `;`, any mix", () => {
  it("property: the value itself, any of its characters so written: none reaches the server", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", minLength: 4, maxLength: 20 }),
        picks,
        around,
        around,
        cuts,
        (value, p, before, after, at) => {
          const s = spellingsOf([["api", value]]);
          const written = spellDeepAll(value, p, true);
          const body = Buffer.from(`${before}${written}${after}`, "utf8");
          const out = streamed(body, at, s);
          expect(out.equals(withoutValues(body, s))).toBe(true);
          // alone, the whole of it is the value
          const alone = withoutValues(Buffer.from(written, "utf8"), s).toString("latin1");
          expect(alone).toMatch(new RegExp(`^${PLACEHOLDER.source}$`));
          const value8 = Buffer.from(value, "utf8").toString("latin1");
          for (const piece of out.toString("latin1").split(PLACEHOLDER))
            expect(readDeep(piece)).not.toContain(value8);
        },
      ),
      { numRuns: 600 },
    );
  });

  it("property: its base64, whole or inside longer base64 at any alignment, its `+`, `/`, `=` so written", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", minLength: 7, maxLength: 30 }),
        fc.string({ maxLength: 5 }),
        fc.boolean(),
        picks,
        around,
        cuts,
        (value, prefix, urlSafe, p, before, at) => {
          const s = spellingsOf([["api", value]]);
          const bytes = Buffer.from(value, "utf8");
          const data = Buffer.concat([Buffer.from(prefix, "utf8"), bytes]);
          let b64 = data.toString("base64");
          if (urlSafe) b64 = b64.replaceAll("+", "-").replaceAll("/", "_");
          // (its letters and digits as themselves: no encoder escapes those)
          const written = [...b64]
            .map((c, i) => (/[A-Za-z0-9]/.test(c) ? c : spellDeepAll(c, [p[i % p.length]!], true)))
            .join("");
          const body = Buffer.from(`${before}${written}${before}`, "latin1");
          const out = streamed(body, at, s);
          expect(out.equals(withoutValues(body, s))).toBe(true);
          let fragment = determined(bytes, Buffer.byteLength(prefix) % 3);
          if (urlSafe) fragment = fragment.replaceAll("+", "-").replaceAll("/", "_");
          // (fragments under 8 characters are not looked for: they would match ordinary text)
          if (fragment.length >= 8) expect(readDeep(out.toString("latin1"))).not.toContain(fragment);
        },
      ),
      { numRuns: 600 },
    );
  });
});

describe("the placeholder of a value found URL-escaped more than once", () => {
  it("property: is URL-escaped as many times, so that reading the answer as often gives it back", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 4, maxLength: 20 }),
        fc.integer({ min: 1, max: 5 }),
        (value, times) => {
          const s = spellingsOf([["api", value]]);
          let written = value;
          for (let k = 0; k < times; k++) written = encodeURIComponent(written);
          let out = withoutValues(Buffer.from(`?next=${written}&x=1`, "latin1"), s).toString("latin1");
          for (let k = 0; k < times; k++) out = decodeURIComponent(out);
          expect(out).toBe("?next=portcullis-placeholder:api&x=1");
        },
      ),
      { numRuns: 300 },
    );
  });
});
