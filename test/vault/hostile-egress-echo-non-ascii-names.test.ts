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
import { describeFormsPage, readEscapes } from "./echoUpstreamKit.js";

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
const byName = new Map(Object.entries(NAMES).flatMap(([c, ns]) => ns.map((n) => [n, c] as const)));
const read = (text: string) => readEscapes(text, byName, true);

// pieces cut inside the references (every 37 bytes)
describeFormsPage(
  "an upstream that echoes the value's characters outside ASCII as HTML named references",
  SECRET,
  FORMS,
  37,
  read,
  ["café-crème", "ñü½∳"],
);
