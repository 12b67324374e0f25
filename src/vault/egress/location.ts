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
 * A released value as a URL may hold it, each with the placeholder it goes back to: URL-encoded
 * as release.ts writes it, and as written (an upstream may have decoded it). Searched as plain
 * text, never as a regular expression built from the value: a vault value may be 64 KiB, and V8
 * refuses a regular expression that large ("too large"), which would end the answer's handling.
 */
function spellings(scope: string, value: string): [string, string][] {
  const raw = Buffer.from(value, "utf8").toString("latin1");
  const encoded = encodeURIComponent(value);
  return [
    [encoded, `portcullis-placeholder%3A${scope}`],
    ...(raw === encoded ? [] : ([[raw, `portcullis-placeholder:${scope}`]] as [string, string][])),
  ];
}

/** `text` with its percent escapes in upper case (`%2f` is `%2F`: the same URL, RFC 3986 6.2.2.1). */
function escapesUpper(text: string): string {
  return text.includes("%") ? text.replace(/%[0-9a-fA-F]{2}/g, (e) => e.toUpperCase()) : text;
}

/**
 * A `Location` header's value (latin1, as read) with the released values taken out. The escapes
 * an upstream wrote itself may be in lower case, so an encoded form not found as written is
 * looked for again with the header's escapes in upper case (encodeURIComponent's), so that
 * both spellings go; the header is changed only where a value is found.
 */
export function locationWithoutValues(location: string, released: ReadonlyMap<string, string>): string {
  let out = location;
  for (const [scope, value] of released) {
    if (value === "") continue;
    for (const [form, placeholder] of spellings(scope, value)) {
      if (out.includes(form)) out = out.split(form).join(placeholder);
      // then the occurrences whose escapes the upstream wrote in lower case, if any are left
      if (form.includes("%")) {
        const upper = escapesUpper(out);
        if (upper.includes(form)) out = upper.split(form).join(placeholder);
      }
    }
  }
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
