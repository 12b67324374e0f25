// A real gateway in front of a server given a vault value in its environment that echoes it as
// HTML templates, encoders that escape every character, and redirects write it
// (test/fixtures/servers/vaulted.mjs, the "reveal" forms html-go, html-hex, html-named,
// json-lower, url-twice and base64-html, base64-named, base64-json-lower, base64-url-twice, and
// "whisper" with those forms on stderr): the client's results, the gateway's stderr and the
// state directory hold none of them, read back.
import { describe, it } from "vitest";
import { expectNoFormReachesAnyone } from "./echoLeakKit.js";

// Quotes, a backslash, `/`, `+`, `=`, `?`, a space and non-ASCII; its base64 inside "ab:…:end"
// holds `+`, `/` and `=`
const SECRET = 'Zq7"w/+ é\\tok?9Xü=v41>>';
const FORMS = [
  "html-go",
  "html-hex",
  "html-named",
  "json-lower",
  "url-twice",
  "base64-html",
  "base64-named",
  "base64-json-lower",
  "base64-url-twice",
];

/**
 * `text` with every escape the fixture writes read (the test's own reading, as UTF-8 bytes in
 * latin1): HTML references, `\u` escapes, URL escapes, twice over (`%252B`, and a reference in
 * JSON text inside a string).
 */
function read(text: string): string {
  const named: Record<string, string> = {
    plus: "+",
    sol: "/",
    equals: "=",
    quest: "?",
    bsol: "\\",
    quot: '"',
    amp: "&",
    lt: "<",
    gt: ">",
  };
  let t = text;
  for (let round = 0; round < 2; round++)
    t = t
      .replace(/\\u([0-9a-fA-F]{4})/g, (_m, u) => String.fromCharCode(Number.parseInt(u, 16)))
      .replace(/&#[xX]([0-9a-fA-F]+);|&#([0-9]+);|&([A-Za-z]+);/g, (m, h, d, n) =>
        h
          ? String.fromCodePoint(Number.parseInt(h, 16))
          : d
            ? String.fromCodePoint(Number(d))
            : (named[n] ?? m),
      )
      .replace(/%25([0-9a-fA-F]{2})/g, "%$1");
  return Buffer.from(t, "utf8")
    .toString("latin1")
    .replace(/%([0-9a-fA-F]{2})/g, (_m, h) => String.fromCharCode(Number.parseInt(h, 16)));
}

/** Whether `text`, read back, holds the value, or its base64 as the fixture writes it (after "ab:" or "b64:"). */
function holdsValue(text: string): boolean {
  const value = Buffer.from(SECRET, "utf8").toString("latin1");
  const shown = read(text);
  if (shown.includes(value)) return true;
  // every run of base64 characters, decoded
  for (const run of shown.match(/[A-Za-z0-9+/=]{12,}/g) ?? [])
    for (let skip = 0; skip < 4; skip++)
      if (Buffer.from(run.slice(skip), "base64").toString("latin1").includes(value.slice(1, -1))) return true;
  return false;
}

describe("a released value echoed as HTML references, lower-case `\\u` escapes and URL escapes escaped again", () => {
  it("reaches neither the client, the gateway's stderr nor the state directory", async () => {
    await expectNoFormReachesAnyone(SECRET, FORMS, holdsValue);
  });
});
