// A real gateway in front of a server given a vault value holding `"` and `\` twice each, which
// it returns URL-encoded with the last `"` and the last `\` kept as themselves (`…%22…"…`: one of
// each escaped, one bare), in a tool result's text (where JSON writes them `\"` and `\\`) and inside
// JSON text there (`\\\"`, `\\\\`), and prints both to stderr (test/fixtures/servers/vaulted.mjs,
// url-kept-quotes and url-kept-quotes-json): the client's results, the gateway's stderr and the
// state directory hold none of them, read back. Before, the tool results reached the client:
// the percent spelling looked for a kept `"` only as itself, and a message with no `\u` in it is
// not read for its escapes (src/vault/percentSpelling.ts, jsonLevels).
import { describe, it } from "vitest";
import { expectNoFormReachesAnyone } from "./echoLeakKit.js";

const SECRET = 'Zq7"w\\ab"cd\\Xü-secret';
const FORMS = ["url-kept-quotes", "url-kept-quotes-json"];

/** Whether `text`, its JSON escapes of `"` and `\` read up to three times and then URL-decoded, holds the value. */
function holdsValue(text: string): boolean {
  const value = Buffer.from(SECRET, "utf8").toString("latin1");
  let t = text;
  for (let level = 0; level <= 3; level++) {
    const shown = Buffer.from(t, "utf8")
      .toString("latin1")
      .replace(/%([0-9a-fA-F]{2})/g, (_m, h) => String.fromCharCode(Number.parseInt(h, 16)));
    if (shown.includes(value)) return true;
    t = t.replace(/\\(["\\])/g, "$1");
  }
  return false;
}

describe('a released value URL-encoded with a `"` and a `\\` kept as themselves', () => {
  it("reaches neither the client, the gateway's stderr nor the state directory", async () => {
    await expectNoFormReachesAnyone(SECRET, FORMS, holdsValue);
  });
});
