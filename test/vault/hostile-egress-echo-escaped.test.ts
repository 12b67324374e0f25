// A declared host that echoes the released value's base64 as encoders that escape base64's `+`,
// `/` and `=` write it: in JSON with `/` escaped (PHP's json_encode), that JSON inside another
// JSON string, in JSON with `+` as `\u002B` (.NET's System.Text.Json), and URL-escaped in a query
// (a redirect, a `Link`), upper and lower case; whole and as a Basic auth `user:value` at each
// alignment. The body comes in two pieces, cut inside the forms. In-process proxy and vault
// holder, a real HTTP upstream; this process is the server, reading every byte the proxy gives it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { askThrough, bodyOf, type EchoSetup, echoUpstream, PLACEHOLDER } from "./echoUpstreamKit.js";

/** a value whose base64 holds `+`, `/` and `=`, whole and inside longer base64 at each alignment */
const SECRET = "sk-live?>>~~~???-9f3c>>";
const PREFIXES = ["", "u:", "us:", "user:"];

/** The escapes, each with how this test reads it back. */
const ESCAPES: Record<string, [(t: string) => string, (t: string) => string]> = {
  php: [(t) => t.replaceAll("/", "\\/"), (t) => t.replaceAll("\\/", "/")],
  jsonInJson: [(t) => t.replaceAll("/", "\\\\/"), (t) => t.replaceAll("\\\\/", "/")],
  jsonInJsonSlash: [(t) => t.replaceAll("/", "\\\\\\/"), (t) => t.replaceAll("\\\\\\/", "/")],
  dotnet: [(t) => t.replaceAll("+", "\\u002B"), (t) => t.replaceAll("\\u002B", "+")],
  query: [encodeURIComponent, decodeURIComponent],
  queryLower: [
    (t) => encodeURIComponent(t).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()),
    decodeURIComponent,
  ],
};

let s: EchoSetup;
/** the Authorization the upstream got */
const got = () => s.got;

beforeAll(async () => {
  s = await echoUpstream(SECRET, (token, res) => {
    const lines: string[] = [];
    for (const p of PREFIXES)
      for (const [name, [write]] of Object.entries(ESCAPES))
        lines.push(`${name} ${JSON.stringify(p)} ${write(Buffer.from(`${p}${token}`).toString("base64"))}`);
    const body = `${lines.join("\n")}\n`;
    const link = encodeURIComponent(Buffer.from(token).toString("base64"));
    res.writeHead(200, { "content-type": "text/plain", link: `</next?auth=${link}>; rel="next"` });
    // two pieces, the cut inside the forms
    res.write(body.slice(0, 333));
    setTimeout(() => res.end(body.slice(333)), 5);
  });
});

afterAll(async () => {
  await s?.close();
});

describe("an upstream that echoes the value's base64 escaped", () => {
  for (const how of ["tunnel", "absolute"] as const)
    it(`${how}: JSON with \`\\/\` once or twice, \`\\u002B\`, URL escapes in either case: none decodes to the value`, async () => {
      const answer = await askThrough(how, s);
      expect(got().at(-1)).toBe(SECRET);
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      const link = /\r\nlink: <\/next\?auth=([^>]*)>/i.exec(answer)?.[1] ?? "";
      expect(Buffer.from(decodeURIComponent(link), "base64").toString("latin1")).toBe(PLACEHOLDER);
      const lines = bodyOf(answer).trim().split("\n");
      expect(lines).toHaveLength(PREFIXES.length * Object.keys(ESCAPES).length);
      for (const line of lines) {
        const [name, prefix, written] = line.split(" ") as [string, string, string];
        const decoded = Buffer.from(ESCAPES[name]![1](written), "base64").toString("latin1");
        expect(decoded, line).not.toContain(SECRET.slice(1, -1));
        // the placeholder where the value was (inside longer base64 its edges' bits stay as they were)
        expect(decoded, line).toContain(JSON.parse(prefix) === "" ? PLACEHOLDER : PLACEHOLDER.slice(1, -1));
      }
      // and nothing the proxy gave this process holds any of the value's forms as the upstream wrote them
      for (const p of PREFIXES)
        for (const [write] of Object.values(ESCAPES))
          expect(answer).not.toContain(write(Buffer.from(`${p}${SECRET}`).toString("base64")));
    });
});
