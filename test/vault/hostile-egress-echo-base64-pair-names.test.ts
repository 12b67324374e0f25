// A declared host that echoes the released value's base64 with its two letters `fj` written as the
// one HTML name of both, `&fjlig;` (the only name of two characters that are both base64's), as an
// HTML reader decodes it: whole, and as a Basic auth `user:value` at each alignment; the name
// escaped again (`&amp;fjlig;`, `&amp;amp;amp;fjlig;`), in a URL built from such text
// (`%26fjlig%3B`, `%2526fjlig%253B`), beside the base64's `+` as `&#43;` and its other letters as
// decimal references, and URL-safe. The body comes in pieces cut inside the references. In-process
// proxy and vault holder, a real HTTP upstream; this process is the server, reading every byte
// the proxy gives it. Before, the echo check's reading of escaped base64 read one character per
// escape, a name of two was not read there, and every line reached the server with the base64
// characters the value alone determines.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  askThrough,
  type EchoSetup,
  echoPage,
  PLACEHOLDER,
  pageLines,
  readEscapes,
} from "./echoUpstreamKit.js";

/** a value whose base64 holds `fj` at each of the three alignments (`~` then a digit, at each offset mod 3) */
const SECRET = "s~0~5~7-live-tok9Qz";
const PREFIXES = ["", "u:", "us:", "user:"];

/** The base64 characters that `bytes` alone determine at byte offset `offset` of longer data. */
function determined(bytes: Buffer, offset: number): string {
  const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString("base64");
  return encoded.slice(Math.ceil((8 * offset) / 6), Math.floor((8 * (offset + bytes.length)) / 6));
}

/** How the upstream writes base64 with its `fj` as a name (each line's base64 holds at least one). */
const FORMS: Record<string, (b64: string) => string> = {
  named: (b) => b.replaceAll("fj", "&fjlig;"),
  escapedAgain: (b) => b.replaceAll("fj", "&amp;fjlig;"),
  escapedThrice: (b) => b.replaceAll("fj", "&amp;amp;amp;fjlig;"),
  urlEscaped: (b) => b.replaceAll("fj", "%26fjlig%3B"),
  urlEscapedTwice: (b) => b.replaceAll("fj", "%2526fjlig%253B"),
  // an HTML template's `&#43;` for `+`, and every third other letter a decimal reference
  withReferences: (b) =>
    b
      .split("fj")
      .map((part) =>
        [...part].map((c, i) => (c === "+" ? "&#43;" : i % 3 === 1 ? `&#${c.charCodeAt(0)};` : c)).join(""),
      )
      .join("&fjlig;"),
  urlSafe: (b) => b.replaceAll("+", "-").replaceAll("/", "_").replaceAll("fj", "&fjlig;"),
};

/** The test's own reading of every escape above, as often as it takes: the base64 the bytes spell. */
const read = (text: string) =>
  readEscapes(text, new Map([["fjlig", "fj"]]))
    .replaceAll("-", "+")
    .replaceAll("_", "/");

let s: EchoSetup;

beforeAll(async () => {
  // pieces cut inside the references (every 29 bytes)
  s = await echoPage(
    SECRET,
    (token) =>
      PREFIXES.flatMap((p) =>
        Object.entries(FORMS).map(
          ([name, write]) => `${name} ${p.length} ${write(Buffer.from(`${p}${token}`).toString("base64"))}`,
        ),
      ),
    29,
  );
});

afterAll(async () => {
  await s?.close();
});

describe("an upstream that echoes the value's base64 with its `fj` as `&fjlig;`", () => {
  it("the value's base64 holds `fj` at every alignment, in what the value alone determines", () => {
    for (const p of PREFIXES) expect(determined(Buffer.from(SECRET), p.length % 3)).toContain("fj");
  });

  for (const how of ["tunnel", "absolute"] as const)
    it(`${how}: no line of the page, read back, holds the value's base64; each holds the placeholder's`, async () => {
      const answer = await askThrough(how, s);
      expect(s.got.at(-1)).toBe(SECRET);
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      const lines = pageLines(answer);
      expect(lines).toHaveLength(PREFIXES.length * Object.keys(FORMS).length);
      for (const line of lines) {
        const [, prefixLength, written] = line.split(" ") as [string, string, string];
        const offset = Number(prefixLength) % 3;
        const shown = read(written);
        expect(shown, line).not.toContain(determined(Buffer.from(SECRET), offset));
        expect(shown, line).toContain(determined(Buffer.from(PLACEHOLDER), offset));
      }
    });
});
