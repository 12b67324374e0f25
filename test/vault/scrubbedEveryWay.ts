// What the property tests of spellings with references share (scrub-references,
// scrub-deep-escapes, scrub-non-ascii): a text scrubbed as a stderr line, as a JSON message's
// string, and as one whose `&` are written `\u0026` (Go's JSON), each read back as text.
import type { ReleasedValues } from "../../src/vault/scrub.js";

/** What `before`, `written` and `after` together come out as: a stderr line, a JSON string, and the latter with `&` as `\u0026`. */
export function scrubbedEveryWay(
  r: ReleasedValues,
  before: string,
  written: string,
  after: string,
): string[] {
  const text = `${before}${written}${after}`;
  const line = JSON.stringify({ jsonrpc: "2.0", id: 1, result: { text } });
  const strings = (l: string) => (JSON.parse(l) as { result: { text: string } }).result.text;
  return [
    r.scrubText(text),
    strings(r.scrubLine(line)),
    strings(r.scrubLine(line.replaceAll("&", "\\u0026"))),
  ];
}
