// A declared host that echoes the released value as HTML templates, JSON encoders that escape
// every character, and redirects write it: an HTML error page with the token written by Go's
// html/template (`&#43;` for `+`, `&#39;`, `&amp;`…), with every other character as a hex
// reference with leading zeros in either case, as named references (`&plus;`, `&sol;`,
// `&equals;`, `&quest;`), every character as a lower-case `\u00xx`, and URL-encoded twice (a
// redirect's `next=` carrying a URL with the token in its query, `%252B`); its base64, whole and
// as a Basic auth `user:value`, with `+`, `/`, `=` as decimal references, named references,
// lower-case `\u002b` escapes, and URL-encoded twice. The body comes in two pieces, cut inside
// the forms; a `Location` carries the token URL-encoded twice. In-process proxy and vault holder,
// a real HTTP upstream; this process is the server, reading every byte the proxy gives it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { askThrough, bodyOf, type EchoSetup, echoUpstream, PLACEHOLDER } from "./echoUpstreamKit.js";

/** a value with characters every escaper writes otherwise, whose base64 holds `+`, `/` and `=` */
const SECRET = "sk-live?>>~~~???-9f3c>>+/=&'x";

const NAMES: Record<string, string> = {
  "+": "plus",
  "/": "sol",
  "=": "equals",
  "?": "quest",
  ">": "gt",
  "&": "amp",
  "'": "apos",
  "-": "#x2D",
};
/** Go's html/template, in text: these five, and NUL */
const GO: Record<string, string> = {
  "+": "&#43;",
  "'": "&#39;",
  '"': "&#34;",
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
};
const hexRef = (upper: boolean) => (c: string) => {
  const h = c.charCodeAt(0).toString(16).padStart(4, "0");
  return upper ? `&#X${h.toUpperCase()};` : `&#x${h};`;
};
const jsonLower = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
const twiceURL = (t: string) => encodeURIComponent(encodeURIComponent(t));

/** How the upstream writes the token itself. */
const VALUE_FORMS: Record<string, (t: string) => string> = {
  goTemplate: (t) => t.replace(/[+'"&<>]/g, (c) => GO[c]!),
  hexRefs: (t) => t.replace(/[^A-Za-z0-9]/g, hexRef(false)),
  hexRefsUpper: (t) => t.replace(/[^A-Za-z0-9]/g, hexRef(true)),
  named: (t) => t.replace(/[+/=?>&'-]/g, (c) => `&${NAMES[c]};`),
  jsonLower: (t) => t.replace(/./g, jsonLower),
  urlTwice: twiceURL,
};
/** How it writes the token's base64: its `+`, `/` and `=` escaped. */
const BASE64_FORMS: Record<string, (b64: string) => string> = {
  decimalRefs: (b) => b.replace(/[+/=]/g, (c) => `&#${c.charCodeAt(0)};`),
  namedRefs: (b) => b.replace(/[+/=]/g, (c) => `&${NAMES[c]};`),
  jsonLower: (b) => b.replace(/[+/=]/g, jsonLower),
  urlTwice: twiceURL,
};
const PREFIXES = ["", "u:", "us:", "user:"];

/** The test's own reading of every escape above, once: what the bytes spell. */
function read(text: string): string {
  const named = Object.fromEntries(Object.entries(NAMES).map(([c, n]) => [n, c]));
  return text
    .replace(/&#[xX]([0-9a-fA-F]+);|&#([0-9]+);|&([A-Za-z]+);|\\u([0-9a-fA-F]{4})/g, (m, h, d, n, u) =>
      h
        ? String.fromCharCode(Number.parseInt(h, 16))
        : d
          ? String.fromCharCode(Number(d))
          : n
            ? (named[n] ?? m)
            : String.fromCharCode(Number.parseInt(u, 16)),
    )
    .replace(/%25([0-9a-fA-F]{2})/g, "%$1")
    .replace(/%([0-9a-fA-F]{2})/g, (_m, h) => String.fromCharCode(Number.parseInt(h, 16)));
}

let s: EchoSetup;
/** the Authorization the upstream got */
const got = () => s.got;

beforeAll(async () => {
  s = await echoUpstream(SECRET, (token, res) => {
    const lines: string[] = [];
    for (const [name, write] of Object.entries(VALUE_FORMS)) lines.push(`value ${name} ${write(token)}`);
    for (const p of PREFIXES)
      for (const [name, write] of Object.entries(BASE64_FORMS))
        lines.push(
          `base64 ${name} ${JSON.stringify(p)} ${write(Buffer.from(`${p}${token}`).toString("base64"))}`,
        );
    const body = `<html><body><pre>\n${lines.join("\n")}\n</pre></body></html>\n`;
    // a redirect to a login page whose `next` is a URL with the token in its query
    const next = encodeURIComponent(`/cb?token=${encodeURIComponent(token)}`);
    res.writeHead(200, { "content-type": "text/html", location: `/login?next=${next}` });
    // two pieces, the cut inside the forms
    res.write(body.slice(0, 333));
    setTimeout(() => res.end(body.slice(333)), 5);
  });
});

afterAll(async () => {
  await s?.close();
});

describe("an upstream that echoes the value as HTML references, lower-case `\\u` escapes and URL escapes escaped again", () => {
  for (const how of ["tunnel", "absolute"] as const)
    it(`${how}: no line of the page, read back, holds the value or its base64; each holds the placeholder`, async () => {
      const answer = await askThrough(how, s);
      expect(got().at(-1)).toBe(SECRET);
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      const location = /\r\nlocation: ([^\r]*)/i.exec(answer)?.[1] ?? "";
      expect(read(read(location))).toBe(`/login?next=/cb?token=${PLACEHOLDER}`);
      const lines = bodyOf(answer)
        .split("\n")
        .filter((l) => /^(value|base64) /.test(l));
      expect(lines).toHaveLength(
        Object.keys(VALUE_FORMS).length + PREFIXES.length * Object.keys(BASE64_FORMS).length,
      );
      for (const line of lines) {
        const [kind, , ...rest] = line.split(" ");
        if (kind === "value") {
          const shown = read(rest.join(" "));
          expect(shown, line).not.toContain(SECRET.slice(1, -1));
          expect(shown, line).toContain("portcullis-placeholder");
          continue;
        }
        const [prefix, written] = rest as [string, string];
        const decoded = Buffer.from(read(written), "base64").toString("latin1");
        expect(decoded, line).not.toContain(SECRET.slice(1, -1));
        expect(decoded, line).toContain(JSON.parse(prefix) === "" ? PLACEHOLDER : PLACEHOLDER.slice(1, -1));
      }
      // nothing the proxy gave this process holds the value in any of the upstream's writings
      for (const write of Object.values(VALUE_FORMS)) expect(answer).not.toContain(write(SECRET));
      for (const p of PREFIXES)
        for (const write of Object.values(BASE64_FORMS))
          expect(answer).not.toContain(write(Buffer.from(`${p}${SECRET}`).toString("base64")));
    });
});
