/**
 * Credentials in free text, wherever they are: PEM keys, HTTP authorization schemes, JWTs,
 * well-known token prefixes, AWS key ids, users and passwords in URLs (urlUsers.ts), secret-named
 * `name=value` pairs, and URLs' queries (urlQueries.ts).
 */

import { trailingPunctuation } from "./punctuation.js";
import { REDACTED } from "./redacted.js";
import { redactUrlQueries } from "./urlQueries.js";
import { redactTokenUsers, redactUserPasswords } from "./urlUsers.js";

/**
 * Credential shapes found inside any string. Each replacement keeps the part that says what it
 * was (`Bearer`, the key name, the URL's user) and puts REDACTED where the secret was, so that
 * redacting twice changes nothing.
 */
const VALUE_PATTERNS: ([RegExp, string] | ((s: string) => string))[] = [
  // PEM private keys (cut off or whole)
  [
    /-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----(?:(?!-----END)[\s\S])*(?:-----END [A-Z0-9 ]*PRIVATE KEY-----)?/g,
    `-----BEGIN $1PRIVATE KEY-----${REDACTED}-----END $1PRIVATE KEY-----`,
  ],
  // HTTP authorization schemes (a `.` or `:` that ends a sentence after the token is kept:
  // trailingPunctuation)
  (s) =>
    s.replace(AUTH_SCHEME, (m, scheme: string, space: string, at: number) => {
      const tail = trailingPunctuation(s, at + scheme.length + space.length, at + m.length);
      return `${scheme}${space}${REDACTED}${m.slice(m.length - tail)}`;
    }),
  // JWTs (header.payload.signature, base64url, the header starts with {" → eyJ). A header not
  // followed by the rest is matched too, and kept: the match takes its word whole, so that the
  // next try starts after it. Without that, every `eyJ` in a word (`eyJab-eyJab-…`) was tried
  // and read to the word's end: quadratic (4 s for 100 kB). No later start in the word could
  // match where the first did not: they end at the same `.`, with fewer characters before it.
  // An unsigned JWT ends in its `.`; one that ends a sentence is kept (trailingPunctuation).
  (s) =>
    s.replace(JWT, (m, rest: string | undefined, at: number) =>
      rest === undefined ? m : REDACTED + m.slice(m.length - trailingPunctuation(s, at, at + m.length)),
    ),
  // well-known token prefixes: GitHub, GitLab, Slack, OpenAI/Anthropic-style sk-, npm, Stripe, Google
  [/\b(?:gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{16,})/g, REDACTED],
  [/\bxox[abposre]-[A-Za-z0-9-]{8,}/g, REDACTED],
  [/\b(?:sk|rk|pk)[-_](?:live[-_]|test[-_]|proj[-_]|ant[-_])?[A-Za-z0-9_-]{16,}/g, REDACTED],
  [/\bnpm_[A-Za-z0-9]{30,}/g, REDACTED],
  [/\bAIza[0-9A-Za-z_-]{30,}/g, REDACTED],
  // AWS access key ids
  [/\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b/g, REDACTED],
  // passwords in URLs: scheme://user:password@host (redactUserPasswords)
  (s) => redactUserPasswords(s),
  // a URL's user that looks like a credential: scheme://TOKEN@host (redactTokenUsers)
  (s) => redactTokenUsers(s),
  // name=value / name: value pairs in free text whose name is secret-like — except a name that
  // says what happened to a credential (an audit event type such as `authorization_denied` or
  // `credential_injected` before a colon, as in "cannot record authorization_denied: database or
  // disk is full"): what follows such a name is a message, not the credential; and except a
  // value that is wholly a JSON Schema type (`string`, `string|null`) or `any value`: the
  // review's schema line `password: string (required)` (describeField) names the property's
  // type, which no credential is (it read "password: [redacted] (required)")
  (s) => redactNamedValues(s),
];

/** An HTTP authorization scheme and its credential (see VALUE_PATTERNS). */
const AUTH_SCHEME = /\b(Bearer|Basic|Digest|Token)(\s+)(?!\[redacted\])[A-Za-z0-9._~+/=:-]{6,}/gi;

/** A JWT; without its group, only a header's start (see VALUE_PATTERNS). */
const JWT = /\beyJ[A-Za-z0-9_-]{5,}(\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*)?/g;

/**
 * name=value / name: value pairs in free text whose name is secret-like (see VALUE_PATTERNS).
 * One sticky regex, tried at most once per name: the name is the run of name characters that
 * ends just before `"?\s*[=:]`, and where the regex would start in it is worked out first. Not
 * that regex as a global replace: it is tried at every word boundary and runs to the end of the
 * word each time, quadratic in a long word of name characters (`a.a.…`: 15 s for 50 kB), and
 * every string of a call's arguments is redacted on the call's path when `audit.arguments` is
 * "clear".
 */
function redactNamedValues(s: string): string {
  let out = "";
  let done = 0; // s[0, done) is in out
  for (let j = 0; j < s.length; j++) {
    const c = s.charCodeAt(j);
    if (c !== 61 && c !== 58) continue; // = :
    // back from the `=` or `:`: spaces, a quote, the name
    let e = j;
    while (e > done && /\s/.test(s[e - 1]!)) e--;
    if (e > done && s.charCodeAt(e - 1) === 34) e--;
    let r = e;
    while (r > done && isNameChar(s.charCodeAt(r - 1))) r--;
    if (r === e) continue;
    const p = nameStart(s, r, e);
    if (p === -1) continue;
    NAMED_VALUE.lastIndex = p;
    const m = NAMED_VALUE.exec(s);
    if (m === null) continue;
    // `(password=S).`: the `).` is the sentence's (trailingPunctuation)
    const tail = trailingPunctuation(s, p + m[1]!.length + m[2]!.length, NAMED_VALUE.lastIndex);
    out += `${s.slice(done, p)}${m[1]}${m[2]}${REDACTED}`;
    done = NAMED_VALUE.lastIndex - tail;
    j = done - 1;
  }
  return done === 0 ? s : out + s.slice(done);
}

/**
 * Where NAMED_VALUE would start in the name s[r, e): the first word boundary from which the
 * name holds a secret-like word and is not an event type; -1 when there is none.
 */
function nameStart(s: string, r: number, e: number): number {
  const name = s.slice(r, e);
  let last = -1; // where the last secret-like word in the name starts
  for (SECRET_WORD.lastIndex = 0; ; SECRET_WORD.lastIndex++) {
    const m = SECRET_WORD.exec(name);
    if (m === null) break;
    last = r + m.index;
    SECRET_WORD.lastIndex = m.index;
  }
  // an event type has no `.` or `-`: only a start after the last one can be one
  const plain = r + Math.max(name.lastIndexOf("."), name.lastIndexOf("-")) + 1;
  for (let p = r; p <= last; p++) {
    const word = isWordChar(s.charCodeAt(p));
    if (p === 0 ? !word : word === isWordChar(s.charCodeAt(p - 1))) continue; // no \b here
    if (p < plain || !EVENT_TYPE.test(s.slice(p, e))) return p;
  }
  return -1;
}

function isNameChar(c: number): boolean {
  return isWordChar(c) || c === 45 || c === 46;
}

function isWordChar(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 95;
}

/** The words that make a name before `=` or `:` secret-like (NAMED_VALUE's). */
const SECRET_WORD =
  /(?=(password|passwd|passphrase|secret|token|api[-_]?key|apikey|private[-_]?key|access[-_]?key|credential|authorization))/gi;

/** A name that says what happened to a credential (NAMED_VALUE's exception). */
const EVENT_TYPE =
  /^[a-z0-9]+(?:_[a-z0-9]+)*_(?:denied|injected|released|missing|expired|revoked|rotated|granted|refused|rejected|required|failed|removed|stored|pinned|withheld|changed)$/i;

const NAMED_VALUE =
  /\b(?![a-z0-9]+(?:_[a-z0-9]+)*_(?:denied|injected|released|missing|expired|revoked|rotated|granted|refused|rejected|required|failed|removed|stored|pinned|withheld|changed)"?\s*[=:])([A-Za-z0-9_.-]*(?:password|passwd|passphrase|secret|token|api[-_]?key|apikey|private[-_]?key|access[-_]?key|credential|authorization)[A-Za-z0-9_.-]*)("?\s*[=:]\s*"?)(?!\[redacted\])(?!Bearer\s|Basic\s)(?![{[])(?!(?:(?:string|number|integer|boolean|object|array|null)(?:\|(?:string|number|integer|boolean|object|array|null))*|any value)(?![^\s"'&,;}]))[^\s"'&,;}]+/iy;

/** A string with every credential-shaped part replaced by REDACTED. */
export function redactText(s: string): string {
  let out = s;
  for (const p of VALUE_PATTERNS) out = typeof p === "function" ? p(out) : out.replace(p[0], p[1]);
  return redactQueries(out);
}

/**
 * Every URL's query and fragment parameters that carry a credential replaced (redactUrlQueries),
 * what they read decoded judged as text (redactText).
 */
export function redactQueries(s: string): string {
  return redactUrlQueries(s, redactText);
}
