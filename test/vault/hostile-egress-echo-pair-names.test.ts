// A declared host that echoes the released value with two of its characters written as the one
// HTML name that stands for both (`&fjlig;` for `fj`, `&nvlt;` for `<` and U+20D2, `&bne;` for `=`
// and U+20E5, `&ThickSpace;` for U+205F and U+200A, `&nesim;` and `&NotEqualTilde;` for `≂` and
// U+0338), which an HTML reader decodes to both: the names, the names escaped again
// (`&amp;fjlig;`, `&amp;amp;amp;nvlt;`), a URL built from such text (`%26fjlig%3B`, escaped again
// `%2526fjlig%253B`), the names among decimal references, and all after the page's own `&amp;`
// (the value starts with `fj`: its `&fjlig;` starts with no name of `f` alone). The body comes
// in pieces cut inside the references. The value goes out in the request's query. In-process
// proxy and vault holder, a real HTTP upstream; this process is the server, reading every byte
// the proxy gives it. Before, the echo check read one character per reference, and the value
// reached the server in every line.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bodyOf, type EchoSetup, echoUpstream, PLACEHOLDER } from "./echoUpstreamKit.js";
import { exchange } from "./egress-kit.js";

const SECRET = "fjq7-<\u20d2=\u20e5x\u205f\u200aY\u2242\u0338tok9fjX";

/** The test's own table: names of two characters, by the two (the first is the one written unless a form says otherwise). */
const PAIRS: Record<string, string[]> = {
  fj: ["fjlig"],
  "<\u20d2": ["nvlt"],
  "=\u20e5": ["bne"],
  "\u205f\u200a": ["ThickSpace"],
  "\u2242\u0338": ["nesim", "NotEqualTilde"],
};

/** `t` with each pair of PAIRS written as `write` writes its names, every other character as `other` writes it. */
function spelled(
  t: string,
  write: (names: string[]) => string,
  other: (c: string) => string = (c) => c,
): string {
  const chars = [...t];
  let out = "";
  for (let i = 0; i < chars.length; i++) {
    const names = PAIRS[chars[i]! + (chars[i + 1] ?? "")];
    if (names !== undefined) {
      out += write(names);
      i++;
    } else out += other(chars[i]!);
  }
  return out;
}

/** How the upstream writes the token. */
const FORMS: Record<string, (t: string) => string> = {
  named: (t) => spelled(t, (n) => `&${n[0]};`),
  otherNames: (t) => spelled(t, (n) => `&${n.at(-1)};`),
  escapedAgain: (t) => spelled(t, (n) => `&amp;${n[0]};`),
  escapedThrice: (t) => spelled(t, (n) => `&amp;amp;amp;${n[0]};`),
  urlEscaped: (t) => spelled(t, (n) => `%26${n[0]}%3B`),
  urlEscapedTwice: (t) => spelled(t, (n) => `%2526${n[0]}%253B`),
  numeric: (t) =>
    spelled(
      t,
      (n) => `&${n[0]};`,
      (c) => `&#${c.codePointAt(0)};`,
    ),
  // right after the page's own `&amp;` (the value starts with a pair: its `&fjlig;` is no name of `f`)
  afterAmp: (t) => `&amp;${spelled(t, (n) => `&${n[0]};`)}`,
};

/** The test's own reading of every escape above, as often as it takes: what the bytes spell. */
function read(text: string): string {
  const byName = new Map(Object.entries(PAIRS).flatMap(([two, ns]) => ns.map((n) => [n, two] as const)));
  let out = text;
  for (let i = 0; i < 4; i++)
    out = out
      .replace(/%25/g, "%")
      .replace(/%26/g, "&")
      .replace(/%3B/g, ";")
      .replace(/&amp;/g, "&")
      .replace(/&#([0-9]+);/g, (_m, d) => String.fromCodePoint(Number(d)))
      .replace(/&([A-Za-z0-9]+);/g, (m, n) => byName.get(n) ?? m);
  return out;
}

let s: EchoSetup;
/** the token each request's query carried to the upstream */
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
    // pieces cut inside the references (every 23 bytes)
    let at = 0;
    const next = () => {
      if (at >= body.length) return void res.end();
      res.write(body.subarray(at, at + 23));
      at += 23;
      setTimeout(next, 1);
    };
    next();
  });
});

afterAll(async () => {
  await s?.close();
});

describe("an upstream that echoes two characters of the value as the one HTML name of both", () => {
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
        expect(shown, line).not.toContain("q7-<\u20d2=\u20e5x");
        expect(shown, line).not.toContain("\u2242\u0338tok9fjX");
        expect(shown, line).toContain("portcullis-placeholder");
      }
      // nothing the proxy gave this process holds the value in any of the upstream's writings
      for (const write of Object.values(FORMS)) expect(answer).not.toContain(write(SECRET));
    });
});
