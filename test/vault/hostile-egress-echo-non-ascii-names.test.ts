// A declared host that echoes the released value with its characters outside ASCII written as
// HTML named references (`&eacute;` for `é`, as PHP's htmlentities and any template that escapes
// every character it has a name for write it): every name, the first and the others HTML defines
// for the same character (`&frac12;`, `&half;`), the longest of all
// (`&CounterClockwiseContourIntegral;`), legacy names without their `;` (`&eacute-`), a page
// escaped again (`&amp;eacute;`, `&amp;amp;frac12;`), and a URL built from such text
// (`%26eacute%3B`, escaped again `%2526eacute%253B`). The body comes in pieces cut inside the
// references. The value goes out in the request's query (a header cannot carry a character
// outside one byte). In-process proxy and vault holder, a real HTTP upstream; this process is the
// server, reading every byte the proxy gives it. Before, the echo check read only the names of
// ASCII characters, and the value reached the server in these lines.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bodyOf, type EchoSetup, echoUpstream, PLACEHOLDER } from "./echoUpstreamKit.js";
import { exchange } from "./egress-kit.js";

/** a value with characters outside ASCII, one of them in the astral plane's neighbour (`∳`, U+2233) */
const SECRET = "sk-café-crème-ñü½∳-9f3c";

/** The test's own table: the names HTML defines for the value's characters outside ASCII, first the one encoders write. */
const NAMES: Record<string, string[]> = {
  é: ["eacute"],
  è: ["egrave"],
  ñ: ["ntilde"],
  ü: ["uuml"],
  "½": ["frac12", "half"],
  "∳": ["awconint", "CounterClockwiseContourIntegral"],
};
/** those HTML's parser also reads without `;` (its legacy names) */
const LEGACY = new Set(["eacute", "egrave", "ntilde", "uuml", "frac12"]);

const spelled = (t: string, write: (name: string, others: string[]) => string) =>
  [...t].map((c) => (NAMES[c] ? write(NAMES[c][0]!, NAMES[c]) : c)).join("");

/** How the upstream writes the token. */
const FORMS: Record<string, (t: string) => string> = {
  named: (t) => spelled(t, (n) => `&${n};`),
  otherNames: (t) => spelled(t, (_first, all) => `&${all.at(-1)};`),
  legacyBare: (t) => spelled(t, (n) => (LEGACY.has(n) ? `&${n}` : `&${n};`)),
  escapedAgain: (t) => spelled(t, (n) => `&amp;${n};`),
  escapedThrice: (t) => spelled(t, (n) => `&amp;amp;amp;${n};`),
  urlEscaped: (t) => spelled(t, (n) => `%26${n}%3B`),
  urlEscapedTwice: (t) => spelled(t, (n) => `%2526${n}%253B`),
  // the ASCII ones as numeric references too, as a template that escapes everything writes them
  mixed: (t) => spelled(t.replace(/-/g, "&#45;"), (n) => `&${n};`),
};

/** The test's own reading of every escape above, as often as it takes: what the bytes spell. */
function read(text: string): string {
  const byName = new Map(Object.entries(NAMES).flatMap(([c, ns]) => ns.map((n) => [n, c] as const)));
  let out = text;
  for (let i = 0; i < 4; i++)
    out = out
      .replace(/%25/g, "%")
      .replace(/%26/g, "&")
      .replace(/%3B/g, ";")
      .replace(/&amp;/g, "&")
      .replace(/&#([0-9]+);/g, (_m, d) => String.fromCodePoint(Number(d)))
      .replace(/&([A-Za-z0-9]+);?/g, (m, n) => byName.get(n) ?? m);
  return out;
}

let s: EchoSetup;
/** the token each request's query carried to the upstream (a header cannot carry a value outside ASCII) */
const got: string[] = [];

/** `GET /echo?token=` and the placeholder, through a tunnel or in absolute form: the answer as the proxy gave it, read as UTF-8. */
async function askThrough(how: "tunnel" | "absolute"): Promise<string> {
  const { host } = s;
  const request = `GET ${how === "absolute" ? `http://${host}` : ""}/echo?token=${PLACEHOLDER} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;
  let answer = "";
  if (how === "absolute") answer = await exchange(s.proxy.port, request);
  else {
    answer = await exchange(s.proxy.port, `CONNECT ${host} HTTP/1.1\r\nHost: ${host}\r\n\r\n`, request);
    answer = answer.slice(answer.indexOf("\r\n\r\n") + 4);
  }
  return Buffer.from(answer, "latin1").toString("utf8");
}

beforeAll(async () => {
  s = await echoUpstream(SECRET, (_header, res) => {
    const token = new URL(res.req.url ?? "", "http://x").searchParams.get("token") ?? "";
    got.push(token);
    const lines = Object.entries(FORMS).map(([name, write]) => `value ${name} ${write(token)}`);
    const body = Buffer.from(`<html><body><pre>\n${lines.join("\n")}\n</pre></body></html>\n`, "utf8");
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    // pieces cut inside the references (every 37 bytes)
    let at = 0;
    const next = () => {
      if (at >= body.length) return void res.end();
      res.write(body.subarray(at, at + 37));
      at += 37;
      setTimeout(next, 1);
    };
    next();
  });
});

afterAll(async () => {
  await s?.close();
});

describe("an upstream that echoes the value's characters outside ASCII as HTML named references", () => {
  for (const how of ["tunnel", "absolute"] as const)
    it(`${how}: no line of the page, read back, holds the value; each holds the placeholder`, async () => {
      const answer = await askThrough(how);
      expect(got.at(-1)).toBe(SECRET);
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      const lines = bodyOf(answer)
        .split("\n")
        .filter((l) => l.startsWith("value "));
      expect(lines).toHaveLength(Object.keys(FORMS).length);
      for (const line of lines) {
        const shown = read(line);
        expect(shown, line).not.toContain("café-crème");
        expect(shown, line).not.toContain("ñü½∳");
        expect(shown, line).toContain("portcullis-placeholder");
      }
      // nothing the proxy gave this process holds the value in any of the upstream's writings
      for (const write of Object.values(FORMS)) expect(answer).not.toContain(write(SECRET));
    });
});
