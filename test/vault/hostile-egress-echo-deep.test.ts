// A declared host that echoes the released value with escapes read more than once and references
// as HTML's parser reads them without `;`: an HTML error page with the token as Go's
// html/template writes it escaped again (`&amp;#43;`), with every other character as a hex
// reference escaped three times more (`&amp;amp;amp;#x002b;`), as references without `;` and
// legacy names (`&#43`, `&gt`), as hex references of 16 digits, URL-encoded three and five times,
// and as a JSON string inside a JSON string (`\\u002b`, `\\\"`); its base64, whole and as a Basic
// auth `user:value`, with `+`, `/`, `=` as `&amp;#43;`, `\\u002b` and URL-encoded three times. The
// body comes in two pieces, cut inside the forms; a `Location` carries the token URL-encoded three
// times, and gets the placeholder URL-encoded three times, so that it reads back as the token
// would. In-process proxy and vault holder, a real HTTP upstream; this process is the server,
// reading every byte the proxy gives it. Before, every one of these reached the server.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readDeep } from "./deepSpelling.js";
import { askThrough, bodyOf, type EchoSetup, echoUpstream, PLACEHOLDER } from "./echoUpstreamKit.js";

/** a value with characters every escaper writes otherwise, whose base64 holds `+`, `/` and `=` */
const SECRET = "sk-live?>>~~~???-9f3c>>+/=&'x\"\\q";

/** Go's html/template, in text */
const GO: Record<string, string> = {
  "+": "&#43;",
  "'": "&#39;",
  '"': "&#34;",
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
};
const hexRef = (digits: number) => (c: string) => `&#x${c.charCodeAt(0).toString(16).padStart(digits, "0")};`;
const url = (times: number) => (t: string) => {
  let out = t;
  for (let k = 0; k < times; k++) out = encodeURIComponent(out);
  return out;
};
/** `;` left out where what follows cannot be read as more of the reference */
const bare = (t: string) =>
  [...t]
    .map((c, i, all) => {
      const end = /^[0-9A-Za-z;]/.test(all[i + 1] ?? "0") ? ";" : "";
      if (c === ">") return `&gt${end}`;
      return /[A-Za-z0-9]/.test(c) ? c : `&#${c.charCodeAt(0)}${end}`;
    })
    .join("");
/** as a JSON string inside a JSON string, `+` written `\u002b` by the inner encoder (.NET's) */
const jsonTwice = (t: string) => JSON.stringify(JSON.stringify(t).replaceAll("+", "\\u002b")).slice(1, -1);

/** How the upstream writes the token itself. */
const VALUE_FORMS: Record<string, (t: string) => string> = {
  goEscaped: (t) => t.replace(/[+'"&<>]/g, (c) => GO[c]!).replaceAll("&", "&amp;"),
  hexEscapedThrice: (t) => t.replace(/[^A-Za-z0-9]/g, hexRef(4)).replaceAll("&", "&amp;amp;amp;"),
  bare,
  hexZeros: (t) => t.replace(/[^A-Za-z0-9]/g, hexRef(16)),
  urlThrice: url(3),
  urlFive: url(5),
  jsonTwice,
};
/** How it writes the token's base64: its `+`, `/` and `=` escaped. */
const BASE64_FORMS: Record<string, (b64: string) => string> = {
  refsEscaped: (b) => b.replace(/[+/=]/g, (c) => `&amp;#${c.charCodeAt(0)};`),
  jsonTwice: (b) => jsonTwice(b).replaceAll("/", "\\\\/"),
  urlThrice: url(3),
};
const PREFIXES = ["", "u:", "us:", "user:"];

/** The test's own reading: every escape above, as deep as it is written, and JSON's `\\"`, `\\\\`, `\\/`. */
function read(text: string): string {
  let t = text;
  for (let k = 0; k < 2; k++) t = t.replace(/\\(["\\/])/g, "$1");
  return Buffer.from(readDeep(t), "latin1").toString("utf8");
}

let s: EchoSetup;

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
    // a redirect to a login page whose `next` carries a URL that carries the token (three times)
    const next = url(2)(`/cb?token=${encodeURIComponent(token)}`);
    res.writeHead(200, { "content-type": "text/html", location: `/login?next=${next}` });
    // two pieces, the cut inside the forms
    res.write(body.slice(0, 401));
    setTimeout(() => res.end(body.slice(401)), 5);
  });
});

afterAll(async () => {
  await s?.close();
});

describe("an upstream that echoes the value with escapes read more than once and references without `;`", () => {
  for (const how of ["tunnel", "absolute"] as const)
    it(`${how}: no line of the page, read back, holds the value or its base64; each holds the placeholder`, async () => {
      const answer = await askThrough(how, s);
      expect(s.got.at(-1)).toBe(SECRET);
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      // the placeholder escaped as often as the token was: decoded as a browser and the two
      // pages after it do, it reads as the placeholder
      const location = /\r\nlocation: ([^\r]*)/i.exec(answer)?.[1] ?? "";
      expect(location).toContain("portcullis-placeholder%25253Aapi");
      const inner = new URLSearchParams(
        decodeURIComponent(new URL(location, "http://h").searchParams.get("next")!).split("?")[1],
      );
      expect(inner.get("token")).toBe(PLACEHOLDER);
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
