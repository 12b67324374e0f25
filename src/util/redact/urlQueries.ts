/**
 * The credentials in URLs' queries and fragments (`?api_key=S`, `#access_token=S`), in queries
 * nested in a value (`next=https://b/?key=S`), and in what a query or a path reads once its
 * percent escapes are decoded, up to MAX_DECODES levels.
 */

import { isSecretName, looksRandom } from "./names.js";
import { trailingPunctuation } from "./punctuation.js";
import { REDACTED } from "./redacted.js";

/**
 * How the plain form of an escaped piece is judged: as text, by redactText (text.ts), which
 * redacts every URL it finds through this file. It is handed in rather than imported, so that
 * the two files do not import each other.
 */
type AsText = (s: string) => string;

/**
 * Whether a URL query parameter carries a credential: its name says so (`api_key`,
 * `access_token`, `sig`, `X-Amz-Signature`: isSecretName), it names a key (`key`, `x-key`,
 * `subscription_key`), or its value looks like a generated key whatever the name (`?k=…`,
 * `?s=…`: looksRandom). A query's names are often one letter, so the name alone says too little.
 */
export function isSecretQueryParameter(name: string, value: string): boolean {
  return namesCredential(name) || looksGenerated(value);
}

/** A query parameter's name that says its value is a credential (isSecretQueryParameter). */
function namesCredential(name: string): boolean {
  return isSecretName(name) || /(?:^|[-_.])key$/i.test(name);
}

/**
 * A query value that looks generated: random-looking (looksRandom) with a run of 16 letters and
 * digits or more, as keys, signatures and hex or base64 tokens have. Readable values that are
 * long and varied but made of short words (`acme-prod-2026-eu-west`, `report-2026-q4-final.pdf`,
 * `winter_sale_2026_email`) are kept: under a plain name they are a workspace or a file, and
 * `run --url` would refuse a server's URL for them.
 */
export function looksGenerated(value: string): boolean {
  return looksRandom(value) && /[A-Za-z0-9]{16}/.test(value);
}

/**
 * `s` with `replace` applied to every `://` followed by a match of `rest` (a sticky regex, tried
 * just after the `://`), found left to right as a global replace finds them. Whatever comes
 * before the `://` is its scheme, glued to the word before it or not (`x%29https://…`,
 * `foo(https://…`, `a_https://…`, `"https://…`): a scheme is not looked for at a word boundary,
 * which let a URL after a digit, an `_` or a `%29` escape keep its credentials. Not a regex over
 * the scheme either: `\b[a-z][a-z0-9+.-]*:\/\/` is tried at every word boundary and runs to the
 * end of the word each time, which is quadratic in a long word of scheme characters
 * (`a-1+a-1+…`: 25 s for 100 kB, and text is redacted on a call's path when `audit.arguments` is
 * "clear") and costs most of the redaction of plain prose, every word of which starts a try. The
 * text without a `://` is read once by indexOf.
 */
function afterSchemes(s: string, rest: RegExp, replace: (m: RegExpExecArray) => string): string {
  let out = "";
  let done = 0; // s[0, done) is in out
  for (let k = s.indexOf("://"); k !== -1; k = s.indexOf("://", k + 1)) {
    rest.lastIndex = k + 3;
    const m = rest.exec(s);
    if (m === null) continue;
    // (read before `replace`, which may redact other text, with this regex too)
    const end = rest.lastIndex;
    out += s.slice(done, k + 3) + replace(m);
    done = end;
    k = done - 1;
  }
  return done === 0 ? s : out + s.slice(done);
}

/**
 * After `scheme://`: the rest of a URL in text, up to a space, a quote, an angle bracket or a
 * backslash (JSON's escape). A run here is `[…][…]*`, never `[…]+`: compiled unoptimized, as V8
 * does in a process that has compiled much regexp code, `+` keeps a backtracking entry per
 * character and threw on a URL of 8 MiB (see VALUE_PATTERNS in text.ts).
 */
const URL_REST = /[^\s"'<>`\\][^\s"'<>`\\]*/y;

function decoded(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, " "));
  } catch {
    return s;
  }
}

/**
 * Every URL's query and fragment parameters that carry a credential (isSecretQueryParameter)
 * replaced; the rest of the text, and each URL's scheme, host, path and other parameters, kept as
 * they are. A fragment's `name=value` pairs are a query's (`#access_token=…&state=…`, OAuth's
 * implicit flow). A path with escapes is judged as its plain form (judgedPath). Punctuation that
 * ends the sentence after a URL is the text's, not the last value's (trailingPunctuation).
 */
export function redactUrlQueries(s: string, asText: AsText): string {
  return afterSchemes(s, URL_REST, (m) => {
    const rest = m[0];
    const end = m.index + rest.length;
    let tail = trailingPunctuation(s, m.index, end);
    // a value is never punctuation only (`?key=.`): it keeps a character to be replaced
    while (tail > 0 && rest[rest.length - tail - 1] === "=") tail--;
    const body = rest.slice(0, rest.length - tail);
    const hash = body.indexOf("#");
    const beforeHash = hash === -1 ? body : body.slice(0, hash);
    const q = beforeHash.indexOf("?");
    let out = judgedPath(q === -1 ? beforeHash : beforeHash.slice(0, q), asText);
    if (q !== -1) out += `?${redactPairs(beforeHash.slice(q + 1), asText)}`;
    if (hash !== -1) out += `#${redactPairs(body.slice(hash + 1), asText)}`;
    return out + rest.slice(body.length);
  });
}

/**
 * A URL's authority and path (what follows its `://` up to its `?` or `#`), the path judged as
 * its plain form when it has escapes in it: another URL percent-encoded in it,
 * `/r/https%3A%2F%2Fb%2F%3Fkey%3DS`, is judged as `/r/https://b/?key=S` would be, and redacted as
 * written, `/r/https%3A%2F%2Fb%2F%3Fkey%3D[redacted]` (redactEncoded; a `+` in a path is itself).
 * The authority is not decoded: a user with an escape in it is a name (looksLikeCredentialUser).
 */
function judgedPath(s: string, asText: AsText): string {
  const slash = s.indexOf("/");
  if (slash === -1 || decodes >= MAX_DECODES || !s.includes("%", slash)) return s;
  return s.slice(0, slash) + redactEncoded(s.slice(slash), PLAIN_PATH, asText, false);
}

/**
 * A query's or a fragment's `name=value` pairs, those that carry a credential replaced. A value
 * kept may hold another URL's query (`next=https://b/?key=S`: the inner URL is taken with the
 * outer's rest, and its first pair is in the outer's value): nestedQuery. A name may hold a
 * route or another URL before its own name (`#/login?key=S`, `?https://b/?key=S`): what follows
 * its last `?`, `#` or `/` is judged too (lastName).
 */
function redactPairs(query: string, asText: AsText): string {
  return query.replace(
    /(^|[&;])([^=&;][^=&;]*)(?:=([^&;][^&;]*))?/g, // (`[…][…]*`, not `[…]+`: URL_REST)
    (pair, sep: string, name: string, value?: string) => {
      // (a piece with no `=` but escapes, `key%3DS`: judged as what it reads decoded, `key=S`)
      if (value === undefined)
        return decodes >= MAX_DECODES || !name.includes("%")
          ? pair
          : `${sep}${redactEncoded(name, PLAIN_QUERY, asText)}`;
      if (value === REDACTED) return pair;
      const n = decodedName(name);
      // (the value's shape is judged on its deepest decoding: once-decoded escapes of escapes,
      // `%25253Daaaa…`, glue into a long run of letters and digits that looks generated)
      if (isSecretQueryParameter(n, decodedName(value)) || namesCredential(lastName(n)))
        return `${sep}${name}=${REDACTED}`;
      if (decodes < MAX_DECODES && /[%+]/.test(value))
        return `${sep}${name}=${redactEncoded(value, PLAIN_VALUE, asText)}`;
      const q = value.indexOf("?");
      return q === -1 ? pair : `${sep}${name}=${value.slice(0, q + 1)}${nestedQuery(value.slice(q + 1))}`;
    },
  );
}

/** What follows the last `?`, `#` or `/` of a pair's name: a name of its own (redactPairs, nestedQuery). */
function lastName(name: string): string {
  return name.slice(Math.max(name.lastIndexOf("?"), name.lastIndexOf("#"), name.lastIndexOf("/")) + 1);
}

/**
 * How many times text with escapes is decoded at most, one level in another (redactEncoded):
 * `%253F` is `%3F` once decoded and `?` twice. Each level is one more redaction of what the level
 * above decoded, which is no longer than it: linear in the text, MAX_DECODES times over at most,
 * however deep the escapes go. A URL carried through three redirects, each encoding it once
 * more, is read; what is encoded five times or more is judged as its fourth decoding reads.
 */
export const MAX_DECODES = 4;

/** How many decodings the text being judged is under (redactEncoded): at most MAX_DECODES. */
let decodes = 0;

/**
 * A pair's name (or value) decoded once, and again while it has escapes and levels are left
 * (MAX_DECODES): `api%255Fkey` is `api_key`.
 */
function decodedName(name: string): string {
  let n = decoded(name);
  for (let left = MAX_DECODES - decodes - 1; left > 0 && n.includes("%"); left--) {
    const again = decoded(n);
    if (again === n) break;
    n = again;
  }
  return n;
}

/** What a decoded query piece is judged after: a URL's query (redactEncoded). */
const PLAIN_QUERY = "https://q.invalid/?";

/** What a decoded query value is judged after: a URL's query, a name and its `=` (redactEncoded). */
const PLAIN_VALUE = `${PLAIN_QUERY}v=`;

/** What a decoded path is judged after: a URL's scheme and host (redactEncoded). */
const PLAIN_PATH = "https://q.invalid";

/**
 * A query value with escapes in it (`%3F`, `+`), kept by its own name and shape, a piece of a
 * query with escapes and no `=` (`key%3DS`), or a path with escapes (judgedPath), judged the way
 * its plain form is: decoded once (percent escapes, `+` as a space but in a path), put after
 * `before` in a URL (its query, or its host for a path) and redacted as text
 * (redactText: another URL's query in it, `https%3A%2F%2Fb%2F%3Fkey%3DS` as `https://b/?key=S`,
 * a password in it, a token's shape). What that hides is hidden in the
 * encoded text: from the first escape or character that changed to the last one, the rest kept
 * as it was written. What the plain form holds with escapes is decoded again in turn, up to
 * MAX_DECODES levels in all (decodes): `%253Fkey%253DS` is judged as `?key=S`, and each level is
 * read once, linear in the text however deep the escapes go.
 */
function redactEncoded(value: string, before: string, asText: AsText, plusIsSpace = true): string {
  const d = decodedWithOffsets(value, plusIsSpace);
  const plain = before + d.text;
  let judged: string;
  decodes++;
  try {
    judged = asText(plain);
  } finally {
    decodes--;
  }
  if (judged === plain) return value;
  // the decoded characters [from, to) hold all that changed
  let p = 0;
  while (p < plain.length && p < judged.length && plain[p] === judged[p]) p++;
  if (p < before.length) return REDACTED; // (never: the plain form's start is kept)
  let e = 0;
  while (
    e < plain.length - p &&
    e < judged.length - p &&
    plain[plain.length - 1 - e] === judged[judged.length - 1 - e]
  )
    e++;
  const from = p - before.length;
  const to = Math.max(from + 1, d.text.length - e);
  return (
    value.slice(0, d.start[from] ?? value.length) + REDACTED + value.slice(d.end[to - 1] ?? value.length)
  );
}

/**
 * `s` decoded once as a query value (`%XX` escapes as UTF-8, `+` as a space unless
 * `plusIsSpace` is false, as in a path; an escape that
 * is not UTF-8 as U+FFFD, or its ASCII character), with where each decoded character starts and
 * ends in `s`: a character of a run of escapes is given the whole run. A run of plain characters
 * is copied whole and the offsets kept in typed arrays (the decoded text is never longer than
 * `s`): a character at a time, with arrays that grow, cost over a microsecond a character on
 * texts of a few hundred kB.
 */
function decodedWithOffsets(
  s: string,
  plusIsSpace: boolean,
): { text: string; start: Int32Array; end: Int32Array } {
  const parts: string[] = [];
  const start = new Int32Array(s.length);
  const end = new Int32Array(s.length);
  let n = 0;
  for (let i = 0; i < s.length; ) {
    ESCAPES.lastIndex = i;
    const m = ESCAPES.exec(s);
    if (m !== null) {
      let t: string;
      try {
        t = decodeURIComponent(m[0]);
      } catch {
        t = m[0].replace(/%([0-9A-Fa-f]{2})/g, (_, h: string) => {
          const b = Number.parseInt(h, 16);
          return b < 0x80 ? String.fromCharCode(b) : "\ufffd";
        });
      }
      const to = i + m[0].length;
      for (let k = 0; k < t.length; k++, n++) {
        start[n] = i;
        end[n] = to;
      }
      parts.push(t);
      i = to;
      continue;
    }
    // plain characters up to the next `%` (an escape, or a lone `%` taken as it is) or `+`
    let j = i + 1;
    while (j < s.length && s[j] !== "%" && s[j] !== "+") j++;
    parts.push(plusIsSpace && s[i] === "+" ? ` ${s.slice(i + 1, j)}` : s.slice(i, j));
    for (let k = i; k < j; k++, n++) {
      start[n] = k;
      end[n] = k + 1;
    }
    i = j;
  }
  return { text: parts.join(""), start: start.subarray(0, n), end: end.subarray(0, n) };
}

/**
 * A run of percent escapes (decodedWithOffsets). Written out, not `(?:%[0-9A-Fa-f]{2})+`: neither
 * `+` nor `{2}` is a plain loop in V8's unoptimized code, which kept an entry per escape (URL_REST).
 */
const ESCAPES = /%[0-9A-Fa-f][0-9A-Fa-f](?:%[0-9A-Fa-f][0-9A-Fa-f])*/y;

/**
 * What follows a `?` in a query value kept (redactPairs), as a query of its own: each piece up to
 * the next `?` that is a `name=value` pair is judged as a query's is (isSecretQueryParameter, the
 * piece's value alone); a name that says it is a credential hides all the rest of the value, as a
 * query's value runs to the next `&`. Each piece is read once: linear, however deep the nesting.
 */
function nestedQuery(rest: string): string {
  let out = "";
  for (let i = 0; i <= rest.length; ) {
    const q = rest.indexOf("?", i);
    const end = q === -1 ? rest.length : q;
    const piece = rest.slice(i, end);
    const eq = piece.indexOf("=");
    if (eq > 0 && eq < piece.length - 1) {
      const name = piece.slice(0, eq);
      const n = decodedName(name);
      if (namesCredential(n) || namesCredential(lastName(n))) return `${out}${name}=${REDACTED}`;
      const value = piece.slice(eq + 1);
      out += value !== REDACTED && looksGenerated(decoded(value)) ? `${name}=${REDACTED}` : piece;
    } else out += piece;
    if (q === -1) break;
    out += "?";
    i = q + 1;
  }
  return out;
}
