// A real gateway in front of a server given a vault value with two characters that one HTML name
// stands for (`fj`: `&fjlig;`; `<` and U+20D2: `&nvlt;`; `=` and U+20E5: `&bne;`; U+205F and
// U+200A: `&ThickSpace;`; `≂` and U+0338: `&nesim;`) that returns it with those names, as a
// template that escapes every character it has a name for may write it: the names, the names
// escaped again (`&amp;fjlig;`), and the names among decimal references for every other
// character (test/fixtures/servers/vaulted.mjs, PAIR_FORMS); and prints each to stderr. The
// client's results, the gateway's stderr and the state directory hold none of them, read back as
// an HTML reader reads them (`&fjlig;` as "fj"). Before, a name of two characters was not read
// (a reference was read as one character), and the value reached the client in all three.
import { describe, it } from "vitest";
import { expectNoFormReachesAnyone } from "./echoLeakKit.js";

const SECRET = "Zq7fj-<\u20d2=\u20e5x\u205f\u200aY\u2242\u0338tok9fjX";
const FORMS = ["html-pairs", "html-pairs-escaped", "html-pairs-numeric"];
/** The names the fixture writes (the test's own list, not the scrubber's table). */
const NAMES: Record<string, string> = {
  fjlig: "fj",
  nvlt: "<\u20d2",
  bne: "=\u20e5",
  ThickSpace: "\u205f\u200a",
  nesim: "\u2242\u0338",
};

/** Whether `text`, its references read (`&amp;` first, as often as written) and JSON's `\"`, `\\` and `\u` read, holds the value. */
function holdsValue(text: string): boolean {
  let t = text;
  for (let level = 0; level <= 2; level++) {
    let shown = t.replace(/\\u([0-9a-fA-F]{4})/g, (_m, u) => String.fromCharCode(Number.parseInt(u, 16)));
    for (let k = 0; k < 3; k++)
      shown = shown
        .replace(/&#([0-9]+);/g, (_m, d) => String.fromCodePoint(Number.parseInt(d, 10)))
        .replace(/&([A-Za-z]+);/g, (m, name) => (name === "amp" ? "&" : (NAMES[name] ?? m)));
    if (shown.includes(SECRET)) return true;
    t = t.replace(/\\(["\\/])/g, "$1");
  }
  return false;
}

describe("a released value echoed with the HTML names of two characters (`&fjlig;` for `fj`)", () => {
  it("reaches neither the client, the gateway's stderr nor the state directory", async () => {
    await expectNoFormReachesAnyone(SECRET, FORMS, holdsValue);
  });
});
