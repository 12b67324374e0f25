// A real gateway in front of a server given a vault value in its environment that echoes it with
// escapes read more than once and references as HTML's parser reads them without `;`
// (test/fixtures/servers/vaulted.mjs, the "reveal" forms html-escaped (`&amp;#43;`: Go's
// html/template output escaped again), html-escaped-thrice (`&amp;amp;amp;#x002b;`), html-bare
// (`&#43`, `&quot`), html-zeros (16-digit hex references), url-thrice, url-five, url-ref
// (`&#37;252B`), base64-html-escaped, base64-url-thrice and json-six (six levels of JSON text, each
// in a string of the next), and "whisper" with those forms on stderr): the client's results, the
// gateway's stderr and the state directory hold none of them, read back as deep as they are
// written. Before, each reached the client: references and `%25` were read once, without `;` not
// at all, of up to 10 digits, and JSON text three levels deep at most.
import { describe, it } from "vitest";
import { readDeep } from "./deepSpelling.js";
import { expectNoFormReachesAnyone } from "./echoLeakKit.js";

// Quotes, a backslash, `/`, `+`, `=`, `?`, `>`, a space and non-ASCII; its base64 inside
// "ab:…:end" holds `+`, `/` and `=`
const SECRET = 'Zq7"w/+ é\\tok?9Xü=v41>>';
const FORMS = [
  "html-escaped",
  "html-escaped-thrice",
  "html-bare",
  "html-zeros",
  "url-thrice",
  "url-five",
  "url-ref",
  "base64-html-escaped",
  "base64-url-thrice",
  "json-six",
];

/**
 * Whether `text`, read back (the test's own reading: every escape the fixture writes, as deep as
 * it writes them, and JSON's `\"`, `\\`, `\/` read up to six times over), holds the value, or its
 * base64 as the fixture writes it (after "ab:").
 */
function holdsValue(text: string): boolean {
  const value = Buffer.from(SECRET, "utf8").toString("latin1");
  let t = text;
  for (let level = 0; level <= 6; level++) {
    const shown = readDeep(t);
    if (shown.includes(value)) return true;
    for (const run of shown.match(/[A-Za-z0-9+/=]{12,}/g) ?? [])
      for (let skip = 0; skip < 4; skip++)
        if (Buffer.from(run.slice(skip), "base64").toString("latin1").includes(value.slice(1, -1)))
          return true;
    t = t.replace(/\\(["\\/])/g, "$1");
  }
  return false;
}

describe("a released value echoed with escapes read more than once, references without `;`, six levels of JSON", () => {
  it("reaches neither the client, the gateway's stderr nor the state directory", async () => {
    await expectNoFormReachesAnyone(SECRET, FORMS, holdsValue);
  });
});
