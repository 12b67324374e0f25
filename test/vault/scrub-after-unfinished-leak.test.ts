// A real gateway in front of a server given a vault value starting with `;` that returns it after
// `&amp`, its other characters as decimal references (test/fixtures/servers/vaulted.mjs,
// after-amp: `&amp;&#90;&#113;…`), and prints it to stderr: HTML's parser takes the value's `;`
// into `&amp;`, so no reading of the text as a whole holds the value, but a reader of numeric
// references alone shows it whole. The client's results, the gateway's stderr and the state
// directory hold none of it; before, it reached the client (src/vault/referencePattern.ts).
import { describe, it } from "vitest";
import { expectNoFormReachesAnyone } from "./echoLeakKit.js";

const SECRET = ';Zq7"w/+é-token9X';

/** Whether `text`, its numeric references read (and JSON's `\"`), holds the value. */
function holdsValue(text: string): boolean {
  for (const t of [text, text.replace(/\\(["\\/])/g, "$1")]) {
    const shown = t.replace(/&#([0-9]+);/g, (_m, d) => String.fromCodePoint(Number.parseInt(d, 10)));
    if (shown.includes(SECRET)) return true;
  }
  return false;
}

describe("a released value after text ending in an unfinished reference that takes its first character", () => {
  it("reaches neither the client, the gateway's stderr nor the state directory", async () => {
    await expectNoFormReachesAnyone(SECRET, ["after-amp"], holdsValue);
  });
});
