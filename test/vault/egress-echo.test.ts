// What the proxy takes out of an answer to a request that carried a released value (echo.ts):
// the value as written and URL-encoded (escapes in either case), from every header line and from
// the body, whatever pieces the body arrives in.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EchoScrubber, headWithoutEchoes, spellingsOf, withoutValues } from "../../src/vault/egress/echo.js";
import { BodyMeter } from "../../src/vault/egress/http1.js";
import { planRewrite, RewrittenBody } from "../../src/vault/egress/rewrite.js";

const released = new Map([
  ["api", "tok/en+1 é"],
  ["plain", "abcdef123456"],
]);
const spellings = spellingsOf(released);
const latin1 = (text: string) => Buffer.from(text, "latin1");
const shown = (text: string) => withoutValues(latin1(text), spellings).toString("latin1");

describe("a released value taken out of an answer's text", () => {
  it("the URL-encoded value becomes the URL-encoded placeholder, the value as written the placeholder", () => {
    expect(shown(`https://www.example/x?key=${encodeURIComponent("tok/en+1 é")}&b=abcdef123456`)).toBe(
      "https://www.example/x?key=portcullis-placeholder%3Aapi&b=portcullis-placeholder:plain",
    );
    expect(shown(Buffer.from("/p/tok/en+1 é", "utf8").toString("latin1"))).toBe(
      "/p/portcullis-placeholder:api",
    );
    // the upstream's own escapes, in lower case
    expect(shown("/x?key=tok%2fen%2b1%20%c3%a9")).toBe("/x?key=portcullis-placeholder%3Aapi");
    expect(shown("/nothing/here")).toBe("/nothing/here");
  });

  it("a value as long as the vault takes (64 KiB) is taken out, not given to a regular expression V8 refuses", () => {
    const value = "é/".repeat(21_000);
    const long = spellingsOf(new Map([["big", value]]));
    const location = `https://www.example/x?key=${encodeURIComponent(value).toLowerCase()}&n=1`;
    expect(withoutValues(latin1(location), long).toString("latin1")).toBe(
      "https://www.example/x?key=portcullis-placeholder%3Abig&n=1",
    );
    const s = new EchoScrubber(long);
    const body = Buffer.from(`a${value}b`, "utf8");
    const out = Buffer.concat([s.push(body.subarray(0, 1000)), s.push(body.subarray(1000)), s.end()]);
    expect(out.toString("latin1")).toBe("aportcullis-placeholder:bigb");
  });

  it("every header line of a head, in any letter case, and the status line; an unchanged head is the same buffer", () => {
    const h = latin1(
      "HTTP/1.1 401 bad abcdef123456\r\nX-Echo: Bearer abcdef123456\r\nSet-Cookie: t=abcdef123456; Path=/\r\n" +
        "LOCATION: /to?k=abcdef123456\r\nLink: </x?k=tok%2Fen%2b1%20%C3%a9>\r\nContent-Length: 0\r\n\r\n",
    );
    expect(headWithoutEchoes(h, spellings).toString("latin1")).toBe(
      "HTTP/1.1 401 bad portcullis-placeholder:plain\r\nX-Echo: Bearer portcullis-placeholder:plain\r\n" +
        "Set-Cookie: t=portcullis-placeholder:plain; Path=/\r\nLOCATION: /to?k=portcullis-placeholder:plain\r\n" +
        "Link: </x?k=portcullis-placeholder%3Aapi>\r\nContent-Length: 0\r\n\r\n",
    );
    const none = latin1("HTTP/1.1 200 OK\r\nLocation: /elsewhere%2f\r\n\r\n");
    expect(headWithoutEchoes(none, spellings)).toBe(none);
    expect(headWithoutEchoes(h, [])).toBe(h);
  });
});

/** A body as pieces cut at `cuts` (sorted offsets), through one scrubber. */
function scrubbed(
  body: Buffer,
  cuts: number[],
  s: readonly ReturnType<typeof spellingsOf>[number][],
): Buffer {
  const scrubber = new EchoScrubber(s);
  const out: Buffer[] = [];
  let at = 0;
  for (const c of [...cuts, body.length]) {
    out.push(scrubber.push(body.subarray(at, c)));
    at = c;
  }
  out.push(scrubber.end());
  return Buffer.concat(out);
}

describe("a body in pieces", () => {
  it("a value split at every offset, alone and between others, is taken out as in the whole body", () => {
    const value = "egress-test-value-4d2b9e71";
    const s = spellingsOf(new Map([["inventory-api", value]]));
    const body = Buffer.from(`{"error":"invalid token ${value}","again":"${value}${value}"}`, "latin1");
    const whole = withoutValues(body, s);
    expect(whole.toString("latin1")).toBe(
      '{"error":"invalid token portcullis-placeholder:inventory-api","again":"portcullis-placeholder:inventory-apiportcullis-placeholder:inventory-api"}',
    );
    for (let i = 0; i <= body.length; i++) {
      expect(scrubbed(body, [i], s).equals(whole), `cut at ${i}`).toBe(true);
      for (let j = i; j <= Math.min(body.length, i + value.length); j++)
        expect(scrubbed(body, [i, j], s).equals(whole), `cuts at ${i}, ${j}`).toBe(true);
    }
    // one byte at a time
    const bytes = Array.from({ length: body.length }, (_, i) => i);
    expect(scrubbed(body, bytes, s).equals(whole)).toBe(true);
  });

  it("property: whatever the values, the body and its pieces, no spelling of a value is given on, and the rest is as it came", () => {
    const valueArb = fc.oneof(
      fc.string({ minLength: 4, maxLength: 40 }).filter((v) => v.trim() === v && v.length >= 4),
      fc.stringMatching(/^[A-Za-z0-9_-]{8,40}$/),
    );
    const filler = fc.uint8Array({ maxLength: 60 }).map((a) => Buffer.from(a));
    fc.assert(
      fc.property(
        valueArb,
        fc.array(fc.tuple(filler, fc.constantFrom("raw", "encoded", "lower", "none")), { maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (value, parts, rawCuts) => {
          const s = spellingsOf(new Map([["scope-x", value]]));
          const forms = {
            raw: Buffer.from(value, "utf8"),
            encoded: latin1(encodeURIComponent(value)),
            lower: latin1(encodeURIComponent(value).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase())),
            none: Buffer.alloc(0),
          };
          const body = Buffer.concat(parts.flatMap(([f, form]) => [f, forms[form]]));
          const cuts = [...new Set(rawCuts.map((c) => c % (body.length + 1)))].sort((a, b) => a - b);
          const out = scrubbed(body, cuts, s);
          // the same as the whole body at once: no piece boundary lets a value through
          expect(out.equals(withoutValues(body, s))).toBe(true);
          // between the placeholders put in, no spelling of the value (the text of a placeholder
          // and the bytes after it may spell it by chance: `-xab` after `…scope-x`, then `ab`)
          const between = out
            .toString("latin1")
            .split("portcullis-placeholder:scope-x")
            .flatMap((p) => p.split("portcullis-placeholder%3Ascope-x"));
          for (const form of [forms.raw, forms.encoded, forms.lower])
            for (const piece of between) expect(piece.includes(form.toString("latin1"))).toBe(false);
        },
      ),
      { numRuns: 400 },
    );
  });
});

/** A chunked body as a client reads it: the data of its chunks, or null when the framing is not whole. */
function dechunk(framed: Buffer): Buffer | null {
  const out: Buffer[] = [];
  let at = 0;
  for (;;) {
    const nl = framed.indexOf("\r\n", at);
    if (nl < 0) return null;
    const size = Number.parseInt(framed.toString("latin1", at, nl), 16);
    if (!Number.isInteger(size) || framed.toString("latin1", nl + size + 2, nl + size + 4) !== "\r\n")
      return null;
    if (size === 0) return nl + 4 === framed.length ? Buffer.concat(out) : null;
    out.push(framed.subarray(nl + 2, nl + 2 + size));
    at = nl + size + 4;
  }
}

describe("an upstream's chunked body, read in any pieces, given on in chunks of the proxy's own", () => {
  it("property: whatever the upstream's chunk sizes and the reads that bring them, the client reads the body without the value", () => {
    const value = "egress-test-value-4d2b9e71";
    const s = spellingsOf(new Map([["inventory-api", value]]));
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom("some text ", value, "x", '{"token":"', '"}', "\n"), {
          minLength: 1,
          maxLength: 12,
        }),
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 10 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        (words, chunkSizes, rawCuts) => {
          const body = Buffer.from(words.join(""), "latin1");
          // the upstream's framing: chunks of the sizes drawn, in turn
          const framed: Buffer[] = [];
          for (let at = 0, i = 0; at < body.length; i++) {
            const n = Math.min(chunkSizes[i % chunkSizes.length]!, body.length - at);
            framed.push(Buffer.from(`${n.toString(16)}\r\n`), body.subarray(at, at + n), Buffer.from("\r\n"));
            at += n;
          }
          framed.push(Buffer.from("0\r\n\r\n"));
          const wire = Buffer.concat(framed);
          const cuts = [...new Set(rawCuts.map((c) => c % (wire.length + 1)))].sort((a, b) => a - b);
          const given: Buffer[] = [];
          const plan = planRewrite(Buffer.from("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), 1);
          if ("refused" in plan) throw new Error(plan.refused);
          const rewritten = new RewrittenBody(
            s,
            plan,
            (b) => given.push(b),
            (e) => {
              throw e;
            },
          );
          const meter = new BodyMeter({ kind: "chunked" });
          meter.onData = (d) => rewritten.write(d);
          let ended = false;
          let at = 0;
          for (const c of [...cuts, wire.length]) {
            meter.take(wire.subarray(at, c), 0);
            at = c;
            if (!meter.done) rewritten.flush();
            else if (!ended) rewritten.end(() => (ended = true));
          }
          expect(ended).toBe(true);
          const all = Buffer.concat(given);
          const headEnd = all.indexOf("\r\n\r\n") + 4;
          expect(all.toString("latin1", 0, headEnd)).toBe(
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
          );
          const read = dechunk(all.subarray(headEnd));
          expect(read?.equals(withoutValues(body, s))).toBe(true);
          expect(read?.includes(value)).toBe(false);
        },
      ),
      { numRuns: 300 },
    );
  });
});

/** The spellings of `value` an answer may give it in, as the common encoders write them. */
function spelledForms(value: string): Record<string, string> {
  const utf8 = Buffer.from(value, "utf8");
  const hex = (n: number) => n.toString(16).padStart(4, "0");
  const chars = [...value];
  return {
    json: JSON.stringify(value).slice(1, -1),
    jsonAllEscaped: [...value]
      .map((_, i) => `\\u${hex(value.charCodeAt(i))}`)
      .join("")
      .slice(0, 6 * value.length),
    jsonUpper: value.replace(/[^A-Za-z0-9]/g, (c) => `\\u${hex(c.charCodeAt(0)).toUpperCase()}`),
    jsonSlash: JSON.stringify(value).slice(1, -1).replaceAll("/", "\\/"),
    htmlNamed: value
      .replaceAll("&", "&amp;")
      .replaceAll("<", "&lt;")
      .replaceAll(">", "&gt;")
      .replaceAll('"', "&quot;")
      .replaceAll("'", "&#039;"),
    htmlDecimal: chars.map((c) => `&#${c.codePointAt(0)};`).join(""),
    htmlHex: chars.map((c) => `&#X${c.codePointAt(0)!.toString(16)};`).join(""),
    urlMixed: encodeURIComponent(value).replace(
      /%([0-9A-F])([0-9A-F])/g,
      (_, a, b) => `%${a}${b.toLowerCase()}`,
    ),
    urlAll: [...utf8].map((b) => `%${b.toString(16).padStart(2, "0")}`).join(""),
    form: new URLSearchParams({ v: value }).toString().slice(2),
    encodeURI: encodeURI(value),
  };
}

describe("other spellings of a released value in an answer", () => {
  const value = `sk/Live+tok&<x>"é 'q%20`;
  const s = spellingsOf(new Map([["api", value]]));
  const out = (text: string) => withoutValues(Buffer.from(text, "utf8"), s).toString("utf8");

  it("JSON escapes, HTML references, URL escapes in any case and form encoding: each becomes the placeholder", () => {
    for (const [name, form] of Object.entries(spelledForms(value))) {
      const got = out(`[${form}]`);
      expect(got, name).toMatch(/^\[portcullis-placeholder(:|%3A)api\]$/);
    }
    // a URL escape read means the URL-encoded placeholder; otherwise the placeholder as written
    expect(out(`[${spelledForms(value).urlMixed}]`)).toBe("[portcullis-placeholder%3Aapi]");
    expect(out(`[${spelledForms(value).htmlNamed}]`)).toBe("[portcullis-placeholder:api]");
  });

  it("base64 (standard, URL-safe, padded or not, a Basic auth `user:value`) and hex become the same form of the placeholder", () => {
    const b64 = Buffer.from(value, "utf8").toString("base64");
    const placeholder64 = Buffer.from("portcullis-placeholder:api").toString("base64");
    expect(out(`x ${b64} y`)).toBe(`x ${placeholder64} y`);
    expect(out(`x ${Buffer.from(value).toString("base64url")} y`)).toBe(
      `x ${Buffer.from("portcullis-placeholder:api").toString("base64url")} y`,
    );
    expect(out(Buffer.from(value).toString("hex"))).toBe(
      Buffer.from("portcullis-placeholder:api").toString("hex"),
    );
    expect(out(Buffer.from(value).toString("hex").toUpperCase())).toBe(
      Buffer.from("portcullis-placeholder:api").toString("hex").toUpperCase(),
    );
    // at each of the three alignments inside longer base64: no base64 character the value alone
    // determines is left, and what is decoded holds the placeholder where the value was
    for (const user of ["u", "us", "use", "user"]) {
      const basic = Buffer.from(`${user}:${value}:end`).toString("base64");
      const got = out(`Authorization: Basic ${basic}`);
      expect(got).not.toBe(`Authorization: Basic ${basic}`);
      const decoded = Buffer.from(got.slice("Authorization: Basic ".length), "base64").toString("latin1");
      expect(decoded).not.toContain(value.slice(1, -1));
      expect(decoded).toContain("ortcullis-placeholder:ap");
    }
  });

  it("base64 as encoders that escape `+`, `/` and `=` write it: `\\/` in JSON once or twice, `\\u002B`, URL escapes in either case, all three or as quote() and PathEscape do", () => {
    // a value whose base64 forms hold all three, whole and at each alignment inside longer base64
    const v = "sk-live?>>~~~???-9f3c>>";
    const sv = spellingsOf(new Map([["api", v]]));
    const escapes: Record<string, [(t: string) => string, (t: string) => string]> = {
      json: [(t) => t.replaceAll("/", "\\/"), (t) => t.replaceAll("\\/", "/")],
      jsonInJson: [(t) => t.replaceAll("/", "\\\\/"), (t) => t.replaceAll("\\\\/", "/")],
      jsonInJsonSlash: [(t) => t.replaceAll("/", "\\\\\\/"), (t) => t.replaceAll("\\\\\\/", "/")],
      dotnet: [(t) => t.replaceAll("+", "\\u002B"), (t) => t.replaceAll("\\u002B", "+")],
      urlUpper: [(t) => encodeURIComponent(t), decodeURIComponent],
      urlLower: [
        (t) => encodeURIComponent(t).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()),
        decodeURIComponent,
      ],
      // Python's quote(): `/` kept; Go's PathEscape: `/` alone escaped
      pythonQuote: [(t) => t.replaceAll("+", "%2B").replaceAll("=", "%3D"), decodeURIComponent],
      pythonQuoteLower: [(t) => t.replaceAll("+", "%2b").replaceAll("=", "%3d"), decodeURIComponent],
      goPathEscape: [(t) => t.replaceAll("/", "%2F"), decodeURIComponent],
      goPathEscapeLower: [(t) => t.replaceAll("/", "%2f"), decodeURIComponent],
    };
    for (const user of ["", "u:", "us:", "user:"]) {
      const b64 = Buffer.from(`${user}${v}`).toString("base64");
      expect(b64).toMatch(/\+/);
      expect(b64).toMatch(/\//);
      for (const [name, [write, readBack]] of Object.entries(escapes)) {
        const written = write(b64);
        expect(written, name).not.toBe(b64);
        const got = withoutValues(Buffer.from(`"a":"${written}",`, "latin1"), sv).toString("latin1");
        expect(got, `${name} ${user}`).not.toBe(`"a":"${written}",`);
        const decoded = Buffer.from(readBack(got.slice(5, -2)), "base64").toString("latin1");
        // what is decoded holds the placeholder where the value was (its edges' bits kept when inside)
        expect(decoded, `${name} ${user}`).not.toContain(v.slice(1, -1));
        expect(decoded, `${name} ${user}`).toContain(
          user === "" ? "portcullis-placeholder:api" : "ortcullis-placeholder:ap",
        );
      }
    }
    // in a stream, cut anywhere: as the whole body
    const body = Buffer.from(
      Object.values(escapes)
        .map(([e]) => e(Buffer.from(`user:${v}`).toString("base64")))
        .join(" "),
      "latin1",
    );
    const whole = withoutValues(body, sv);
    for (let at = 0; at <= body.length; at++)
      expect(scrubbed(body, [at], sv).equals(whole), `cut at ${at}`).toBe(true);
  });

  it("property: any mix of spellings, any cuts: the stream gives what the whole body gives, and no whole spelling is left", () => {
    // an alphabet of the characters escapes are made of, so spellings overlap and are ambiguous
    const alphabet = fc.constantFrom(
      "a",
      "2",
      "5",
      "%",
      "\\",
      "&",
      "#",
      ";",
      "+",
      " ",
      "u",
      "0",
      "/",
      "é",
      "x",
    );
    fc.assert(
      fc.property(
        fc.array(alphabet, { minLength: 3, maxLength: 10 }).map((a) => a.join("")),
        fc.array(fc.tuple(fc.array(alphabet, { maxLength: 8 }), fc.nat()), { maxLength: 5 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (v, parts, rawCuts) => {
          const sp = spellingsOf(new Map([["k", v]]));
          const forms = Object.values(spelledForms(v));
          const body = Buffer.from(
            parts.map(([f, i]) => f.join("") + forms[i % forms.length]).join(""),
            "utf8",
          );
          const cuts = [...new Set(rawCuts.map((c) => c % (body.length + 1)))].sort((a, b) => a - b);
          const whole = withoutValues(body, sp);
          expect(scrubbed(body, cuts, sp).equals(whole)).toBe(true);
          // each spelling put in the body is gone, replaced (the placeholders' own letters apart)
          const rest = whole.toString("utf8").replaceAll(/portcullis-placeholder(:|%3A)k/g, "\u0000");
          expect(rest.includes(v)).toBe(false);
        },
      ),
      { numRuns: 600 },
    );
  });

  it("a stream keeps back only what may start a value: text before it goes on at once", () => {
    const sc = new EchoScrubber(s);
    const given = sc.push(Buffer.from(`${"x".repeat(100)} invalid token ${value.slice(0, 10)}`, "utf8"));
    expect(given.toString("utf8")).toBe(`${"x".repeat(100)} invalid token `);
    expect(
      Buffer.concat([given, sc.push(Buffer.from(value.slice(10), "utf8")), sc.end()]).toString("utf8"),
    ).toBe(`${"x".repeat(100)} invalid token portcullis-placeholder:api`);
  });
});
