/**
 * What an answer echoes of the values released for its request, put back as their placeholders.
 * An upstream may hand a request's credential back in its answer: an error that quotes it
 * ("invalid token sk-live-…"), an echo service (httpbin's `/headers`), a `Set-Cookie` or a
 * `Content-Location` built from the request's query, a redirect's `Location` keeping the query.
 * The server reads the answer, and whatever it reads it may pass to the agent: so in every answer
 * to a request that carried a released value, each value is replaced by its placeholder in the
 * status line, every header and the body, as written and URL-encoded (upper- or lower-case
 * escapes), the spellings a URL or a form may give it. Other encodings of the value (base64, a
 * JSON `\u` escape, HTML entities) are not looked for: docs/security.md says so.
 */

/** One spelling of a released value and the placeholder it goes back to. */
export interface Spelling {
  from: Buffer;
  to: Buffer;
}

/**
 * The spellings of each released value, longest first (so that where two overlap at one place,
 * the longer goes): as written (its UTF-8 bytes), URL-encoded with encodeURIComponent's
 * upper-case escapes (as release.ts puts it into a URL), and with lower-case escapes.
 */
export function spellingsOf(released: ReadonlyMap<string, string>): Spelling[] {
  const out: Spelling[] = [];
  const seen = new Set<string>();
  const add = (form: string, encoding: "utf8" | "latin1", to: string) => {
    const from = Buffer.from(form, encoding);
    const key = from.toString("latin1");
    if (from.length === 0 || seen.has(key)) return;
    seen.add(key);
    out.push({ from, to: Buffer.from(to, "latin1") });
  };
  for (const [scope, value] of released) {
    if (value === "") continue;
    add(value, "utf8", `portcullis-placeholder:${scope}`);
    const encoded = encodeURIComponent(value);
    add(encoded, "latin1", `portcullis-placeholder%3A${scope}`);
    add(
      encoded.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()),
      "latin1",
      `portcullis-placeholder%3A${scope}`,
    );
  }
  return out.sort((a, b) => b.from.length - a.from.length);
}

/**
 * The first occurrence of any spelling in `buf` from `from` that starts before `before`: the
 * earliest, the longest of those at one place. Searched with Buffer.indexOf (plain bytes, never a
 * regular expression built from a value: a value may be 64 KiB, a size V8 refuses for one).
 */
function firstAt(
  buf: Buffer,
  from: number,
  before: number,
  spellings: readonly Spelling[],
): { at: number; s: Spelling } | null {
  let best: { at: number; s: Spelling } | null = null;
  for (const s of spellings) {
    const at = buf.indexOf(s.from, from);
    if (at < 0 || at >= before) continue;
    if (best === null || at < best.at) best = { at, s };
  }
  return best;
}

/** `buf` with every spelling replaced by its placeholder; the same buffer when there is none. */
export function withoutValues(buf: Buffer, spellings: readonly Spelling[]): Buffer {
  if (spellings.length === 0) return buf;
  return replaceUpTo(buf, buf.length, spellings).out;
}

/**
 * Replaces the occurrences that start before `limit` (each whole, since `buf` holds it through
 * its end); returns the bytes up to `cut` (the end of the last one replaced, or `limit`,
 * whichever is later) with them replaced, and `cut`.
 */
function replaceUpTo(
  buf: Buffer,
  limit: number,
  spellings: readonly Spelling[],
): { out: Buffer; cut: number } {
  let m = firstAt(buf, 0, limit, spellings);
  if (m === null) return { out: limit === buf.length ? buf : buf.subarray(0, limit), cut: limit };
  const parts: Buffer[] = [];
  let at = 0;
  while (m !== null) {
    parts.push(buf.subarray(at, m.at), m.s.to);
    at = m.at + m.s.from.length;
    m = firstAt(buf, at, limit, spellings);
  }
  const cut = Math.max(at, limit);
  parts.push(buf.subarray(at, cut));
  return { out: Buffer.concat(parts), cut };
}

/**
 * A response head (latin1, CRLF lines, as read) with the released values taken out of its status
 * line and every header: the same buffer when there is nothing to take. Values are compared as
 * bytes, so a value written into a header as UTF-8 (latin1 characters, one per byte) is found.
 */
export function headWithoutEchoes(head: Buffer, spellings: readonly Spelling[]): Buffer {
  if (spellings.length === 0) return head;
  let out = withoutValues(head, spellings);
  // an encoded value whose escapes the upstream wrote in mixed case (`%2f%3A`): looked for again
  // in a copy with every escape in upper case, only when a lower-case escape is there at all
  const text = out.toString("latin1");
  if (/%(?:[a-f][0-9a-fA-F]|[0-9A-F][a-f])/.test(text)) {
    const upper = Buffer.from(
      text.replace(/%[0-9a-fA-F]{2}/g, (e) => e.toUpperCase()),
      "latin1",
    );
    const again = withoutValues(upper, spellings);
    if (again !== upper) out = again;
  }
  return out;
}

/**
 * Takes the released values out of a body that arrives in pieces, whatever the pieces: of each
 * piece, what can no longer be the start of a value is given back at once, the last (longest
 * spelling − 1) bytes kept until the next piece or the end, so a value split across pieces is
 * found whole. Nothing is given back of a body whose end never came (`end` not called): the kept
 * bytes are dropped with the answer.
 */
export class EchoScrubber {
  private kept: Buffer = Buffer.alloc(0);
  private readonly keep: number;

  constructor(private readonly spellings: readonly Spelling[]) {
    this.keep = spellings.reduce((n, s) => Math.max(n, s.from.length), 0) - 1;
  }

  /** The bytes of `piece` (after those kept) that can be given on, the values replaced. */
  push(piece: Buffer): Buffer {
    if (this.spellings.length === 0) return piece;
    const buf = this.kept.length === 0 ? piece : Buffer.concat([this.kept, piece]);
    const limit = buf.length - this.keep;
    if (limit <= 0) {
      this.kept = buf;
      return Buffer.alloc(0);
    }
    const { out, cut } = replaceUpTo(buf, limit, this.spellings);
    // (a copy: the kept bytes must outlive the piece's buffer, which its owner may reuse)
    this.kept = cut === buf.length ? Buffer.alloc(0) : Buffer.from(buf.subarray(cut));
    return out;
  }

  /** The kept bytes, the values in them replaced: the body's end came. */
  end(): Buffer {
    const last = withoutValues(this.kept, this.spellings);
    this.kept = Buffer.alloc(0);
    return last;
  }
}
