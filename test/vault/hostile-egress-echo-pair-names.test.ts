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
import { describeFormsPage, readEscapes } from "./echoUpstreamKit.js";

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
const byName = new Map(Object.entries(PAIRS).flatMap(([two, ns]) => ns.map((n) => [n, two] as const)));
const read = (text: string) => readEscapes(text, byName);

// pieces cut inside the references (every 23 bytes)
describeFormsPage(
  "an upstream that echoes two characters of the value as the one HTML name of both",
  SECRET,
  FORMS,
  23,
  read,
  ["q7-<\u20d2=\u20e5x", "\u2242\u0338tok9fjX"],
);
