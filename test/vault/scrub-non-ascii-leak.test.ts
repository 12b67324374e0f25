// A real gateway in front of a server given a vault value holding characters outside ASCII that
// returns it as PHP's htmlentities writes it (`&eacute;`, `&frac12;`, `&filig;`), with the legacy
// names' `;` left out (`&eacute-`), decomposed (NFD), decomposed with each mark a hex reference,
// decomposed and URL-encoded, and with compatibility characters replaced as Python's JSON writes
// it (NFKD, `\u0301`), and prints each to stderr (test/fixtures/servers/vaulted.mjs,
// NON_ASCII_FORMS): the client's results, the gateway's stderr and the state directory hold none
// of them, read back and composed again (NFC and NFKC). Before, every one reached the client: a
// name for a character outside ASCII was not read, and a value was searched only as released.
import { describe, it } from "vitest";
import { expectNoFormReachesAnyone } from "./echoLeakKit.js";

// letters that decompose (é, ü, Å, ö), compatibility characters (ﬁ, ½), a name without a legacy
// form (€), a `"` (JSON escapes it)
const SECRET = 'Zq7é-ﬁ½ü"Å€tok9Xö©';
const FORMS = ["html-entities", "html-entities-bare", "nfd", "nfd-references", "nfd-url", "nfkd-json"];
/** The names the fixture writes (the test's own list, not the scrubber's table). */
const NAMES: Record<string, string> = {
  eacute: "é",
  uuml: "ü",
  ouml: "ö",
  Aring: "Å",
  frac12: "½",
  copy: "©",
  euro: "€",
  filig: "ﬁ",
  quot: '"',
};

/** Whether `text`, its references, `\u` escapes, JSON's `\"` and URL escapes read, holds the value in NFC or NFKC. */
function holdsValue(text: string): boolean {
  let t = text;
  for (let level = 0; level <= 2; level++) {
    const refs = t
      .replace(/&#[xX]([0-9a-fA-F]+);?|&#([0-9]+);?/g, (_m, h, d) =>
        String.fromCodePoint(h !== undefined ? Number.parseInt(h, 16) : Number.parseInt(d, 10)),
      )
      .replace(/&([A-Za-z0-9]+);?/g, (m, name) => NAMES[name] ?? m)
      .replace(/\\u([0-9a-fA-F]{4})/g, (_m, u) => String.fromCharCode(Number.parseInt(u, 16)));
    const bytes = Buffer.from(refs, "utf8")
      .toString("latin1")
      .replace(/%([0-9a-fA-F]{2})/g, (_m, h) => String.fromCharCode(Number.parseInt(h, 16)));
    const shown = Buffer.from(bytes, "latin1").toString("utf8");
    for (const form of ["NFC", "NFKC"])
      if (shown.normalize(form).includes(SECRET.normalize(form))) return true;
    t = t.replace(/\\(["\\/])/g, "$1");
  }
  return false;
}

describe("a released value outside ASCII echoed with named references and in other normalizations", () => {
  it("reaches neither the client, the gateway's stderr nor the state directory", async () => {
    await expectNoFormReachesAnyone(SECRET, FORMS, holdsValue);
  });
});
