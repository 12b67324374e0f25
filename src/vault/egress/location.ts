/**
 * A redirect's target with the values released for its request put back as their placeholders.
 * An upstream that redirects keeping the request's query (`http://` to `https://`, a bare
 * domain to `www.`, an old path to a new one) writes the released value into `Location`, and
 * HTTP clients follow a redirect on their own: the server's client would send the value on to
 * the new target as it got it, to a host no declaration names, and hold it meanwhile. With the
 * placeholder there instead, a redirect to a declared host gets the value again from the proxy
 * (under the same rule as any request), one to another host gets the placeholder.
 * Only `Location` is read: the rest of an answer passes as it came (an upstream that echoes the
 * value elsewhere hands it to the server; docs/security.md says so).
 */

/**
 * A released value as a URL may hold it: URL-encoded as release.ts writes it, its escapes in
 * either case (`%2f` is `%2F`: an upstream may write its own), and as written (an upstream may
 * have decoded it), each with the placeholder it goes back to.
 */
function spellings(scope: string, value: string): [RegExp, string][] {
  const raw = Buffer.from(value, "utf8").toString("latin1");
  const encoded = encodeURIComponent(value);
  const literal = (t: string) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const anyCase = literal(encoded).replace(
    /%([0-9A-F])([0-9A-F])/g,
    (_, a: string, b: string) => `%[${a}${a.toLowerCase()}][${b}${b.toLowerCase()}]`,
  );
  return [
    [new RegExp(anyCase, "g"), `portcullis-placeholder%3A${scope}`],
    ...(raw === encoded
      ? []
      : ([[new RegExp(literal(raw), "g"), `portcullis-placeholder:${scope}`]] as [RegExp, string][])),
  ];
}

/** A `Location` header's value (latin1, as read) with the released values taken out. */
export function locationWithoutValues(location: string, released: ReadonlyMap<string, string>): string {
  let out = location;
  for (const [scope, value] of released)
    if (value !== "") for (const [from, to] of spellings(scope, value)) out = out.replace(from, () => to);
  return out;
}

/**
 * A response head (latin1 bytes, CRLF lines, already checked by parseResponseHead) with the
 * released values taken out of its `Location` lines; the same buffer when there is nothing to take.
 */
export function headWithoutValues(head: Buffer, released: ReadonlyMap<string, string>): Buffer {
  if (released.size === 0) return head;
  const lines = head.toString("latin1").split("\r\n");
  let changed = false;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(":");
    if (colon !== 8 || line.slice(0, 8).toLowerCase() !== "location") continue;
    const value = line.slice(9);
    const clean = locationWithoutValues(value, released);
    if (clean !== value) {
      lines[i] = `${line.slice(0, 9)}${clean}`;
      changed = true;
    }
  }
  return changed ? Buffer.from(lines.join("\r\n"), "latin1") : head;
}
