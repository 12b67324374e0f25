/**
 * Credentials in free text, wherever they are: PEM keys, HTTP authorization schemes, JWTs,
 * well-known token prefixes, AWS key ids, users and passwords in URLs (urlUsers.ts), secret-named
 * `name=value` pairs, and URLs' queries (urlQueries.ts).
 */

import { isSecretName } from "./names.js";
import { trailingPunctuation } from "./punctuation.js";
import { REDACTED } from "./redacted.js";
import { redactUrlQueries } from "./urlQueries.js";
import { redactTokenUsers, redactUserPasswords } from "./urlUsers.js";

/**
 * Credential shapes found inside any string. Each replacement keeps the part that says what it
 * was (`Bearer`, the key name, the URL's user) and puts REDACTED where the secret was, so that
 * redacting twice changes nothing.
 */
//
// No pattern here runs a quantifier over an unbounded run of the text. V8's regular expressions
// keep one backtracking entry per repetition of such a quantifier (`[A-Za-z0-9]{16,}`, a group
// under `*`), in a stack of at most 64 MiB, and throw RangeError ("Maximum call stack size
// exceeded") past it: `sk-` followed by 8 MiB of letters threw, and so did every other long-run
// pattern, compiled or interpreted. The one exception is `*` over a single character class (or
// a group of fixed length without captures): V8 runs it as a loop that keeps one entry, however
// it compiled the pattern. Not `+`: V8 rewrites `[^\s]+` as `[^\s][^\s]*` only when it compiles
// the pattern optimized, and it stops optimizing in a process that has compiled more than 1 MB
// of regular expressions and holds 16 MB of machine code (TooMuchRegExpCode: a test worker that
// has run many files, any long-lived process), or for a pattern over 20 KB; then
// `password=` and 8 MiB of letters threw, where it passed in a fresh process. So a run is
// written `[…][…]*` (NAMED_VALUE), never `[…]+` (test/util/redact-unoptimized.test.ts runs the
// large shapes in a node started with --no-regexp-optimization). A call argument is up to the message size limit (64 MiB), and
// every string of one is redacted for the audit with `audit.arguments: "clear"`: the intent could
// not be written and the call was refused audit_unavailable. So each pattern matches a bounded
// head (`sk-` and 16 characters), and the run after it is read by a loop (`extendRun`). Should a
// pattern throw all the same, redactText redacts the whole string (it never shows text it could
// not redact).
const VALUE_PATTERNS: ([RegExp, string] | ((s: string) => string))[] = [
  // PEM private keys (cut off or whole)
  (s) => redactPem(s),
  // HTTP authorization schemes (a `.` or `:` that ends a sentence after the token is kept:
  // trailingPunctuation); in prose, only a word that looks like a value (redactAuthSchemes)
  (s) => redactAuthSchemes(s),
  // JWTs (header.payload.signature, base64url, the header starts with {" → eyJ). A header not
  // followed by the rest is matched too, and kept: the match takes its word whole, so that the
  // next try starts after it. Without that, every `eyJ` in a word (`eyJab-eyJab-…`) was tried
  // and read to the word's end: quadratic (4 s for 100 kB). No later start in the word could
  // match where the first did not: they end at the same `.`, with fewer characters before it.
  // An unsigned JWT ends in its `.`; one that ends a sentence is kept (trailingPunctuation).
  (s) => redactJwts(s),
  // well-known token prefixes: GitHub, GitLab, Slack, OpenAI/Anthropic-style sk-, npm, Stripe, Google
  // (each head ends in the least its run may be; the run is then read to its end: replaceRuns)
  // (one head for these three, tried in this order at each place as one regex tried them; the
  // run read after it is the matched one's)
  (s) =>
    replaceRuns(
      s,
      /\b(?:gh[pousr]_[A-Za-z0-9]{16}|github_pat_[A-Za-z0-9_]{20}|glpat-[A-Za-z0-9_-]{16})/g,
      (m) =>
        m[0].startsWith("github_pat_") ? isWordChar : m[0].startsWith("glpat-") ? isTokenChar : isAlnum,
    ),
  (s) => replaceRuns(s, /\bxox[abposre]-[A-Za-z0-9-]{8}/g, () => (c) => isAlnum(c) || c === 45),
  (s) =>
    replaceRuns(
      s,
      /\b(?:sk|rk|pk)[-_](?:live[-_]|test[-_]|proj[-_]|ant[-_])?[A-Za-z0-9_-]{16}/g,
      () => isTokenChar,
    ),
  (s) => replaceRuns(s, /\bnpm_[A-Za-z0-9]{30}/g, () => isAlnum),
  (s) => replaceRuns(s, /\bAIza[0-9A-Za-z_-]{30}/g, () => isTokenChar),
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

/**
 * An HTTP authorization scheme, perhaps a quote, and the first 6 characters of its credential
 * (see VALUE_PATTERNS). A value that starts with `=` or `:` is a pair's (`token = S`: NAMED_VALUE).
 * The blank run is `\s\s*`, not `\s+`: unoptimized, `+` threw on a scheme and 8 MiB of spaces.
 */
const AUTH_SCHEME =
  /\b(Bearer|Basic|Digest|Token)(\s\s*["']?)(?![=:])(?!\[redacted\])[A-Za-z0-9._~+/=:-]{6}/gi;

/**
 * The credential after an HTTP authorization scheme, to the end of its word. In a header (after
 * `Authorization:`, or any secret-like name and `:` or `=`) every such word is one. Elsewhere the
 * scheme's name is also an English word ("token cache.", "the token expired", "Bearer tokens
 * are"), and the word after it is hidden only when it looks like a value (looksLikeValue): a
 * digit, a mark, capitals inside it, more than 20 letters, or letters no word is made of.
 */
function redactAuthSchemes(s: string): string {
  let out = "";
  let done = 0;
  AUTH_SCHEME.lastIndex = 0;
  for (let m = AUTH_SCHEME.exec(s); m !== null; m = AUTH_SCHEME.exec(s)) {
    const at = m.index;
    const valueAt = at + m[1]!.length + m[2]!.length;
    const end = extendRun(s, AUTH_SCHEME.lastIndex, isAuthTokenChar);
    const tail = trailingPunctuation(s, valueAt, end);
    if (!afterSecretName(s, at) && !looksLikeValue(s.slice(valueAt, end - tail))) {
      // a word: kept, and read again from its start (it may be a scheme itself: "Bearer Token S")
      AUTH_SCHEME.lastIndex = valueAt;
      continue;
    }
    out += `${s.slice(done, at)}${m[1]}${m[2]}${REDACTED}`;
    done = end - tail;
    AUTH_SCHEME.lastIndex = end;
  }
  return done === 0 ? s : out + s.slice(done);
}

/** The most letters a word after a scheme may have and still be read as one (looksLikeValue). */
const LONGEST_WORD = 20;

/**
 * Whether the word after an authorization scheme in prose looks like a credential rather than a
 * word: anything but letters (a digit, `.`, `-`, `_`, `/`, `+`, `=`, `:`, `~` inside it), a
 * capital after a small letter (`dXNlcjpw`, `abcdefTHESECRET`), more than LONGEST_WORD letters,
 * or letters no English word is made of: five consonants in a row, or fewer than one vowel (y
 * counted) in six letters. What is left, 6 to 20 letters of one case after an optional capital
 * that read as a word ("expired", "Refresh", "EXPIRED"), is shown. A credential of that shape is
 * hidden only in a header (afterSecretName), or by its own shape elsewhere. Bounded: the caller
 * hands a word of at most its run (read once).
 */
function looksLikeValue(word: string): boolean {
  if (word.length > LONGEST_WORD || !/^[A-Za-z]+$/.test(word)) return true;
  const rest = word.slice(1);
  if (rest !== rest.toLowerCase() && word !== word.toUpperCase()) return true;
  let vowels = 0;
  let consonants = 0;
  for (const c of word.toLowerCase()) {
    if ("aeiouy".includes(c)) {
      vowels++;
      consonants = 0;
    } else if (++consonants >= 5) return true;
  }
  return vowels * 6 < word.length;
}

/** Characters looked back over for the name before a scheme (afterSecretName). */
const NAME_LOOKBACK = 64;

/**
 * Whether the scheme at `at` is a header's or a secret-like name's value: `Authorization: Bearer`,
 * `"auth": "Token`, `password=Basic` (spaces and one quote around the `:` or `=`). The name is
 * judged by isSecretName on its last NAME_LOOKBACK characters, and a name that says what happened
 * to a credential (`authorization_denied: Bearer tokens expired`) is a message's, not a header's.
 */
function afterSecretName(s: string, at: number): boolean {
  let i = at;
  const skipSpaces = () => {
    for (let n = 0; n < NAME_LOOKBACK && i > 0 && /\s/.test(s[i - 1]!); n++) i--;
  };
  const skipQuote = () => {
    if (i > 0 && (s[i - 1] === '"' || s[i - 1] === "'")) i--;
  };
  skipSpaces();
  skipQuote();
  skipSpaces();
  if (i === 0 || (s[i - 1] !== ":" && s[i - 1] !== "=")) return false;
  i--;
  skipSpaces();
  skipQuote();
  const end = i;
  while (i > 0 && end - i < NAME_LOOKBACK && isNameChar(s.charCodeAt(i - 1))) i--;
  if (i === end) return false;
  const name = s.slice(i, end);
  return isSecretName(name) && !isEventType(name);
}

/** A character of an authorization scheme's credential: `[A-Za-z0-9._~+/=:-]`. */
function isAuthTokenChar(c: number): boolean {
  return isWordChar(c) || (c >= 43 && c <= 47 && c !== 44) || c === 58 || c === 61 || c === 126; // + - . / : = ~
}

/** `[A-Za-z0-9]` */
function isAlnum(c: number): boolean {
  return isWordChar(c) && c !== 95;
}

/** `[A-Za-z0-9_-]`: base64url, and most tokens' alphabet */
function isTokenChar(c: number): boolean {
  return isWordChar(c) || c === 45;
}

/** Where the run of characters `inRun` accepts that starts at `i` in `s` ends. */
function extendRun(s: string, i: number, inRun: (c: number) => boolean): number {
  while (i < s.length && inRun(s.charCodeAt(i))) i++;
  return i;
}

/**
 * `s` with each match of `head` (global), made longer by the run after it of the characters
 * `runOf(match)` accepts, replaced by what `by` makes of it (`end`: where it ends; `at`: where it
 * starts; default REDACTED). A head that ends in the least its run may be, and this loop, read
 * what `head{N,}` read, without a backtracking entry per character (see VALUE_PATTERNS).
 */
function replaceRuns(
  s: string,
  head: RegExp,
  runOf: (m: RegExpExecArray) => (c: number) => boolean,
  by: (m: RegExpExecArray, end: number, at: number) => string = () => REDACTED,
): string {
  let out = "";
  let done = 0;
  head.lastIndex = 0;
  for (let m = head.exec(s); m !== null; m = head.exec(s)) {
    const end = extendRun(s, head.lastIndex, runOf(m));
    out += s.slice(done, m.index) + by(m, end, m.index);
    done = end;
    head.lastIndex = end;
  }
  return done === 0 ? s : out + s.slice(done);
}

/** The start of a JWT: its header's first 8 characters (see redactJwts). */
const JWT_HEAD = /\beyJ[A-Za-z0-9_-]{5}/g;

/**
 * JWTs: `eyJ` and 5 or more of `[A-Za-z0-9_-]` (the header), then `.`, 5 or more (the payload),
 * `.` and any number (the signature), as `\beyJ[A-Za-z0-9_-]{5,}(\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*)?`
 * read them, by a loop (see VALUE_PATTERNS). A header not followed by the rest is kept (see the
 * comment in VALUE_PATTERNS); an unsigned JWT ends in its `.`; one that ends a sentence is kept
 * (trailingPunctuation).
 */
function redactJwts(s: string): string {
  let out = "";
  let done = 0;
  JWT_HEAD.lastIndex = 0;
  for (let m = JWT_HEAD.exec(s); m !== null; m = JWT_HEAD.exec(s)) {
    const headEnd = extendRun(s, JWT_HEAD.lastIndex, isTokenChar);
    JWT_HEAD.lastIndex = headEnd; // the word is taken whole, signed or not
    if (s.charCodeAt(headEnd) !== 46) continue;
    const payloadEnd = extendRun(s, headEnd + 1, isTokenChar);
    if (payloadEnd - (headEnd + 1) < 5 || s.charCodeAt(payloadEnd) !== 46) continue;
    const end = extendRun(s, payloadEnd + 1, isTokenChar);
    out += s.slice(done, m.index) + REDACTED;
    done = end - trailingPunctuation(s, m.index, end);
    JWT_HEAD.lastIndex = end;
  }
  return done === 0 ? s : out + s.slice(done);
}

/** The first line of a PEM private key (see redactPem). */
const PEM_BEGIN = /-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----/g;
const PEM_END = /-----END [A-Z0-9 ]*PRIVATE KEY-----/y;

/**
 * PEM private keys, cut off or whole: from `-----BEGIN … PRIVATE KEY-----` to the next
 * `-----END`, and the END line when it is one of a private key, as
 * `-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----(?:(?!-----END)[\s\S])*(?:-----END [A-Z0-9 ]*PRIVATE KEY-----)?`
 * read them (see VALUE_PATTERNS: that regex kept an entry per character of the key).
 */
function redactPem(s: string): string {
  let out = "";
  let done = 0;
  PEM_BEGIN.lastIndex = 0;
  for (let m = PEM_BEGIN.exec(s); m !== null; m = PEM_BEGIN.exec(s)) {
    const bodyEnd = s.indexOf("-----END", PEM_BEGIN.lastIndex);
    let end = bodyEnd < 0 ? s.length : bodyEnd;
    if (bodyEnd >= 0) {
      PEM_END.lastIndex = bodyEnd;
      if (PEM_END.test(s)) end = PEM_END.lastIndex;
    }
    out += `${s.slice(done, m.index)}-----BEGIN ${m[1]}PRIVATE KEY-----${REDACTED}-----END ${m[1]}PRIVATE KEY-----`;
    done = end;
    PEM_BEGIN.lastIndex = end;
  }
  return done === 0 ? s : out + s.slice(done);
}

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
    if (e > done && (s.charCodeAt(e - 1) === 34 || s.charCodeAt(e - 1) === 39)) e--; // a double or a single quote
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
    if (p < plain || !isEventType(s.slice(p, e))) return p;
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

/** What a name that says what happened to a credential ends in, after a `_` (NAMED_VALUE's exception). */
const EVENT_ENDINGS = [
  "denied",
  "injected",
  "released",
  "missing",
  "expired",
  "revoked",
  "rotated",
  "granted",
  "refused",
  "rejected",
  "required",
  "failed",
  "removed",
  "stored",
  "pinned",
  "withheld",
  "changed",
];

/**
 * Whether `name` says what happened to a credential (NAMED_VALUE's exception): words of
 * `[a-z0-9]`, any case, joined by single `_`, the last one of EVENT_ENDINGS, as
 * `^[a-z0-9]+(?:_[a-z0-9]+)*_(?:denied|…)$` (case-insensitive) reads it. Not that regex: it kept
 * an entry per word, and threw on a name of millions of `a_` (see VALUE_PATTERNS); nor
 * `/^[a-z0-9_]+$/i` for its characters, which did too once V8 compiled it unoptimized.
 */
function isEventType(name: string): boolean {
  for (let i = 0; i < name.length; i++) if (!isWordChar(name.charCodeAt(i))) return false;
  const lower = name.toLowerCase();
  return EVENT_ENDINGS.some((ending) => {
    if (!lower.endsWith(`_${ending}`)) return false;
    const words = lower.slice(0, lower.length - ending.length - 1);
    return words !== "" && !words.startsWith("_") && !words.endsWith("_") && !words.includes("__");
  });
}

// (nameStart never starts it on a name that is an event type, so the regex does not look for one;
// a list of more than 8 JSON Schema types is not taken for one, so that no quantified group runs
// over the value; the value is `[…][…]*`, not `[…]+`, which unoptimized keeps an entry per
// character: see VALUE_PATTERNS)
const NAMED_VALUE =
  /\b([A-Za-z0-9_.-]*(?:password|passwd|passphrase|secret|token|api[-_]?key|apikey|private[-_]?key|access[-_]?key|credential|authorization)[A-Za-z0-9_.-]*)(["']?\s*[=:]\s*["']?)(?!\[redacted\])(?!(?:Bearer|Basic|Digest|Token)\s)(?![{[])(?!(?:(?:string|number|integer|boolean|object|array|null)(?:\|(?:string|number|integer|boolean|object|array|null)){0,7}|any value)(?![^\s"'&,;}]))[^\s"'&,;}][^\s"'&,;}]*/iy;

/**
 * A string with every credential-shaped part replaced by REDACTED. Should a pattern fail to run
 * on it (a regular expression out of backtracking room: see VALUE_PATTERNS), the whole string is
 * REDACTED: text that could not be redacted is never shown.
 */
export function redactText(s: string): string {
  try {
    let out = s;
    for (const p of VALUE_PATTERNS) out = typeof p === "function" ? p(out) : out.replace(p[0], p[1]);
    return redactQueries(out);
  } catch {
    return REDACTED;
  }
}

/**
 * Every URL's query and fragment parameters that carry a credential replaced (redactUrlQueries),
 * what they read decoded judged as text (redactText).
 */
export function redactQueries(s: string): string {
  return redactUrlQueries(s, redactText);
}
