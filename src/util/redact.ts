/**
 * The one place that decides what a secret looks like. Everything portcullis shows or keeps
 * (status, reviews, approval requests, execution records, status lines, the audit's clear
 * arguments) goes through here first. Digests are computed by callers over the real values,
 * before redaction: a digest identifies, a redacted copy is only for people and the store.
 *
 * Three shapes are recognised:
 *   - a value under a key named like a secret, at any depth (keys compared without case or
 *     separators: `API-Key`, `api_key`, `apiKey` are one name);
 *   - a string that looks like a credential wherever it is (bearer tokens, JWTs, PEM private
 *     keys, well-known token prefixes, AWS access keys, passwords in URLs and users that look
 *     like tokens, `token=…` pairs);
 *   - command-line words: a value after a secret-named flag (`--token S`, `--api-key=S`, `-p S`)
 *     and `NAME=value` words whose NAME is secret-like.
 */

import { cutText } from "./cut.js";
import { setOwn } from "./setOwn.js";

export const REDACTED = "[redacted]";

const MAX_COMMAND_CHARS = 300;
const MAX_ARGUMENT_CHARS = 120;

/** Key fragments that make a name secret wherever they appear in it (separators removed). */
const SECRET_FRAGMENTS = [
  "password",
  "passwd",
  "passphrase",
  "secret",
  "token",
  "apikey",
  "authorization",
  "cookie",
  "privatekey",
  "credential",
  "session",
  "accesskey",
  "signingkey",
  "encryptionkey",
  "clientkey",
  "masterkey",
  "bearer",
  "jwt",
];

/** Whole words (of a split name) that make it secret: `auth`, `db_pass`, `pwd`, `x-auth-key`. */
const SECRET_WORDS = new Set(["auth", "pass", "pwd", "pin", "otp", "dsn", "sig", "signature", "hmac"]);

/**
 * Names that contain a fragment above but name no secret: credential scopes are names of
 * credentials, never their values. (Nothing else is excepted: the audit log refuses any string
 * under a token/secret/password-like key, so redaction must cover at least those.)
 */
const NOT_SECRET = new Set(["credentialscope", "credentialscopes"]);

/** Words of a name: split at separators and camelCase boundaries, lower-cased. */
function words(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(/[^A-Za-z0-9]+/)
    .filter((w) => w !== "")
    .map((w) => w.toLowerCase());
}

/** True when a key, flag or variable name says its value is a secret. */
export function isSecretName(name: string): boolean {
  const flat = name.toLowerCase().replace(/[^a-z0-9]/g, "");
  if (flat === "" || NOT_SECRET.has(flat)) return false;
  if (SECRET_FRAGMENTS.some((f) => flat.includes(f))) return true;
  return words(name).some((w) => SECRET_WORDS.has(w) || (w.startsWith("auth") && !w.startsWith("author")));
}

/** Names where a long, random-looking value is probably a key even though the name is not a secret's. */
function isSuspiciousName(name: string): boolean {
  return words(name).some((w) => /^(key|keys|access|refresh|nonce|salt|cert|private|sas)$/.test(w));
}

function entropyBitsPerChar(s: string): number {
  const counts = new Map<string, number>();
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

/** A long token of mixed characters with no spaces: what generated keys look like. */
function looksRandom(s: string): boolean {
  return (
    s.length >= 20 &&
    !/\s/.test(s) &&
    /[0-9]/.test(s) &&
    /[A-Za-z]/.test(s) &&
    entropyBitsPerChar(s) >= 3.5 &&
    !/^sha256:[0-9a-f]+$/.test(s)
  );
}

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

/** Marks that end a sentence or a clause: `see https://h/?k=S.` — the `.` is not the key's. */
const SENTENCE_MARKS = ".,;:!?";

/** Closing brackets and what opens each. */
const OPENERS = new Map([
  [")", "("],
  ["]", "["],
  ["}", "{"],
  [">", "<"],
]);

/**
 * How many characters at the end of s[start, end), a credential that a rule took as "the rest of
 * the word" (a URL, a `name=value` pair's value, a bearer token, a JWT), are the text's
 * punctuation rather than the credential's, to be kept after REDACTED: at most one of
 * SENTENCE_MARKS and at most one closing bracket that closes nothing opened in s[start, end)
 * (`(see https://h/?k=S).`: `).`; but `https://h/wiki/A_(b)` keeps its `)`), in either order,
 * and only when the word ends there, at a space or the end of the text, perhaps after marks the
 * rule did not take (WORD_END: `?k=S.x&y` is the value `S.x`; `token=S!@x` keeps the `!`
 * hidden). At least one character is left to the credential. A credential that itself ends in
 * such characters shows those (two at most), never more. O(end - start).
 */
export function trailingPunctuation(s: string, start: number, end: number): number {
  WORD_END.lastIndex = end;
  if (!WORD_END.test(s)) return 0;
  let n = 0;
  let mark = false;
  let bracket = false;
  while (end - n - 1 > start) {
    const at = end - n - 1;
    const c = s[at]!;
    if (!mark && SENTENCE_MARKS.includes(c)) mark = true;
    else if (!bracket && OPENERS.has(c) && !closesOne(s, start, at, OPENERS.get(c)!, c)) bracket = true;
    else break;
    n++;
  }
  return n;
}

/**
 * Where a word ends: a space or the end of the text, perhaps after two more marks or brackets
 * that the rule did not take (`password=S),` reads the value `S)`: its `,` ends the sentence).
 */
const WORD_END = /[.,;:!?)\]}>'"]{0,2}(?:\s|$)/y;

/** Whether `close` at `at` closes an `open` of s[start, at). */
function closesOne(s: string, start: number, at: number, open: string, close: string): boolean {
  let depth = 0;
  for (let i = start; i < at; i++) {
    if (s[i] === open) depth++;
    else if (s[i] === close && depth > 0) depth--;
  }
  return depth > 0;
}

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
function looksGenerated(value: string): boolean {
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
 * Every URL's password replaced: after `://` (afterSchemes), a user, `:`, then the password up
 * to the last `@` of the word (up to a space). Where the userinfo ends is read two ways: a URL
 * parser ends the authority at the first `/`, `?` or `#` and takes its last `@`
 * (`https://u:p@ss?x@host/` is the password `p`, the host `ss` and the query `x@host/`), while
 * whoever wrote a password with such characters in it unescaped meant the last `@` before the
 * host (`p@ss?x`, the host `host`). No reading may show any of the password, so the longest one
 * is hidden: `https://u:[redacted]@host/`. The price is what a URL with a password and another
 * `@` after it shows: `https://u:pw@host/?to=a@b` reads `https://u:[redacted]@b`, and so does
 * `http://localhost:3000/@scope` (`localhost:3000/` could be a user and a password):
 * `http://localhost:[redacted]@scope`. Each word is read once, for all its `://`: linear.
 */
function redactUserPasswords(s: string): string {
  let out = "";
  let done = 0; // s[0, done) is in out
  let wordEnd = -1; // the word of the last `://` read: where it ends, and its last `@`
  let lastAt = -1;
  for (let k = s.indexOf("://"); k !== -1; k = s.indexOf("://", k + 1)) {
    USER.lastIndex = k + 3;
    if (!USER.test(s)) continue;
    const from = USER.lastIndex; // the password's first character
    if (from >= wordEnd) {
      // a word not read yet (a user is never across a space: this `://` starts a new one)
      lastAt = -1;
      let i = from;
      for (;;) {
        NOT_AT.lastIndex = i;
        NOT_AT.test(s);
        i = NOT_AT.lastIndex;
        if (s.charCodeAt(i) !== 64) break; // @
        lastAt = i++;
      }
      wordEnd = i;
    }
    if (lastAt <= from || s.slice(from, lastAt) === REDACTED) continue;
    out += `${s.slice(done, from)}${REDACTED}@`;
    done = lastAt + 1;
    k = done - 1;
  }
  return done === 0 ? s : out + s.slice(done);
}

/**
 * Every URL's user that looks like a credential (looksLikeCredentialUser) replaced:
 * `https://abcdef123456@github.com/o/r.git` (a token given as the user, with no password, as
 * git hosts accept it) reads `https://[redacted]@github.com/o/r.git`, and so does the user of
 * `https://TOKEN:x-oauth-basic@github.com` (whose password redactUserPasswords hides). The user
 * is what comes before the authority's last `@` (the authority ends at a `/`, `?`, `#`, a space
 * or a quote; passwords are hidden already), up to its first `:`; each of its `@`-separated
 * parts is judged, and one that looks like a credential hides the whole user. Each `://` reads
 * its authority once, which ends before the next `://`: linear.
 */
function redactTokenUsers(s: string): string {
  let out = "";
  let done = 0; // s[0, done) is in out
  for (let k = s.indexOf("://"); k !== -1; k = s.indexOf("://", k + 1)) {
    const from = k + 3;
    AUTHORITY.lastIndex = from;
    AUTHORITY.test(s);
    const authority = s.slice(from, AUTHORITY.lastIndex);
    const at = authority.lastIndexOf("@");
    if (at === -1) continue;
    const colon = authority.indexOf(":");
    const user = authority.slice(0, colon !== -1 && colon < at ? colon : at);
    if (!user.split("@").some(looksLikeCredentialUser)) continue;
    out += `${s.slice(done, from)}${REDACTED}`;
    done = from + user.length;
    k = done - 1;
  }
  return done === 0 ? s : out + s.slice(done);
}

/** After `scheme://`: the authority, with its userinfo (redactTokenUsers). */
const AUTHORITY = /[^\s/?#"'<>`\\]*/y;

/**
 * A URL's user (or a part of it between `@`s) that is a credential's shape, not a name's: made
 * of token characters only (letters, digits, `_`, `-`, `+`, `/`, `=`: a name with a `.`, a `%`
 * escape or an `@`, `john.doe`, `name%40example.com`, is a name), 12 of them or more, and
 *   - hex, with letters and digits (`abcdef123456`, a 40-digit token);
 *   - letters and digits alternating three times or more (`x7Kq9Lm2Pz4W`), where a name with a
 *     number after it, `deploy2024`, `jenkins12345678`, `oauth2accesstoken`, alternates once;
 *   - 20 characters or more, varied (3 bits a character), that do not read as words: capitals
 *     and small letters a quarter each or more, with a capital after a capital or a digit
 *     twice or more (a camel-case name, `ProdCityDeployBotBot`, starts each word with one
 *     capital after a small letter), or five consonants in a row (`y` a vowel: words seldom
 *     have them, random letters mostly do).
 * `git`, `user`, `oauth2`, `x-access-token`, `deploy-bot`, `svc-backup-production-01` are none
 * of these. A random token in hex, base32, base36, base62 or base64url is hidden, but for about
 * one in 25,000 at 32 characters, one in 200,000 at 40, one in 200 at 20 (simulated: a short
 * one can read as a name); tokens of known shapes are redacted wherever they are (`ghp_…`).
 */
export function looksLikeCredentialUser(u: string): boolean {
  if (u.length < 12 || !/^[A-Za-z0-9_+/=-]+$/.test(u)) return false;
  const digits = /[0-9]/.test(u);
  const letters = u.replace(/[^A-Za-z]/g, "").length;
  if (digits && letters > 0 && /^(?:[0-9a-f]+|[0-9A-F]+)$/.test(u)) return true;
  if (digits && letters > 0 && (u.match(/[0-9](?=[A-Za-z])|[A-Za-z](?=[0-9])/g)?.length ?? 0) >= 3)
    return true;
  if (u.length < 20 || entropyBitsPerChar(u) < 3) return false;
  const upper = u.replace(/[^A-Z]/g, "").length;
  const lower = letters - upper;
  const capitalsInRun = u.match(/[A-Z0-9](?=[A-Z])/g)?.length ?? 0;
  return (
    (upper * 4 >= u.length && lower * 4 >= u.length && capitalsInRun >= 2) || /[b-df-hj-np-tv-xz]{5}/i.test(u)
  );
}

function isWordChar(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 95;
}

/** After `scheme://`: a URL's user and its `:` (redactUserPasswords). */
const USER = /[^\s:/@]*:/y;

/** A run of a word's characters without an `@` (redactUserPasswords). */
const NOT_AT = /[^\s@]*/y;

/** After `scheme://`: the rest of a URL in text, up to a space, a quote, an angle bracket or a backslash (JSON's escape). */
const URL_REST = /[^\s"'<>`\\]+/y;

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
export function redactQueries(s: string): string {
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
    let out = judgedPath(q === -1 ? beforeHash : beforeHash.slice(0, q));
    if (q !== -1) out += `?${redactPairs(beforeHash.slice(q + 1))}`;
    if (hash !== -1) out += `#${redactPairs(body.slice(hash + 1))}`;
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
function judgedPath(s: string): string {
  const slash = s.indexOf("/");
  if (slash === -1 || decodes >= MAX_DECODES || !s.includes("%", slash)) return s;
  return s.slice(0, slash) + redactEncoded(s.slice(slash), PLAIN_PATH, false);
}

/**
 * A query's or a fragment's `name=value` pairs, those that carry a credential replaced. A value
 * kept may hold another URL's query (`next=https://b/?key=S`: the inner URL is taken with the
 * outer's rest, and its first pair is in the outer's value): nestedQuery. A name may hold a
 * route or another URL before its own name (`#/login?key=S`, `?https://b/?key=S`): what follows
 * its last `?`, `#` or `/` is judged too (lastName).
 */
function redactPairs(query: string): string {
  return query.replace(
    /(^|[&;])([^=&;]+)(?:=([^&;]+))?/g,
    (pair, sep: string, name: string, value?: string) => {
      // (a piece with no `=` but escapes, `key%3DS`: judged as what it reads decoded, `key=S`)
      if (value === undefined)
        return decodes >= MAX_DECODES || !name.includes("%")
          ? pair
          : `${sep}${redactEncoded(name, PLAIN_QUERY)}`;
      if (value === REDACTED) return pair;
      const n = decodedName(name);
      // (the value's shape is judged on its deepest decoding: once-decoded escapes of escapes,
      // `%25253Daaaa…`, glue into a long run of letters and digits that looks generated)
      if (isSecretQueryParameter(n, decodedName(value)) || namesCredential(lastName(n)))
        return `${sep}${name}=${REDACTED}`;
      if (decodes < MAX_DECODES && /[%+]/.test(value))
        return `${sep}${name}=${redactEncoded(value, PLAIN_VALUE)}`;
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
function redactEncoded(value: string, before: string, plusIsSpace = true): string {
  const d = decodedWithOffsets(value, plusIsSpace);
  const plain = before + d.text;
  let judged: string;
  decodes++;
  try {
    judged = redactText(plain);
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
 * ends in `s`: a character of a run of escapes is given the whole run.
 */
function decodedWithOffsets(
  s: string,
  plusIsSpace: boolean,
): { text: string; start: number[]; end: number[] } {
  let text = "";
  const start: number[] = [];
  const end: number[] = [];
  const put = (t: string, from: number, to: number): void => {
    for (let k = 0; k < t.length; k++) {
      start.push(from);
      end.push(to);
    }
    text += t;
  };
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
      put(t, i, i + m[0].length);
      i += m[0].length;
    } else {
      put(plusIsSpace && s[i] === "+" ? " " : s[i]!, i, i + 1);
      i++;
    }
  }
  return { text, start, end };
}

/** A run of percent escapes (decodedWithOffsets). */
const ESCAPES = /(?:%[0-9A-Fa-f]{2})+/y;

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

export interface RedactOptions {
  /** what replaces a whole value under a secret-named key (default the string REDACTED) */
  marker?: unknown;
}

/**
 * A copy of a JSON value with every value under a secret-named key replaced (whatever its type:
 * an object under `auth` goes whole), every string redacted with redactText, and long random
 * strings under suspicious names (`key`, `access`, `refresh`, …) replaced. Other structure is
 * kept as it is.
 */
export function redactValue(value: unknown, opts: RedactOptions = {}): unknown {
  return redactValueUnder(null, value, opts);
}

/**
 * `value` redacted as if it sat under the key `key`: what a value given apart from its name needs
 * (a schema's default under its property's name, a top-level argument), so that the name decides
 * as it does for a value nested under it.
 */
export function redactValueUnder(key: string | null, value: unknown, opts: RedactOptions = {}): unknown {
  const marker = opts.marker ?? REDACTED;
  const walk = (v: unknown, key: string | null, seen: Set<object>): unknown => {
    if (
      key !== null &&
      isSecretName(key) &&
      v !== null &&
      v !== undefined &&
      v !== "" &&
      typeof v !== "boolean"
    ) {
      return isMarker(v, marker) ? v : marker;
    }
    if (typeof v === "string") {
      if (key !== null && isSuspiciousName(key) && looksRandom(v)) return marker;
      return redactText(v);
    }
    if (typeof v !== "object" || v === null) return v;
    if (seen.has(v)) return "[circular]";
    seen.add(v);
    try {
      if (Array.isArray(v)) return v.map((x) => walk(x, key, seen));
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) setOwn(out, k, walk(x, k, seen));
      return out;
    } finally {
      seen.delete(v);
    }
  };
  return walk(value, key, new Set());
}

/**
 * A copy of a JSON value (tool definitions, input schemas) in which the values a schema gives for
 * a property (SCHEMA_VALUES: `default`, `const`, `examples`) are redacted under the property's
 * name (redactSchemaValue): `{"api_key": {"default": S}}` holds S under the key `default`, so
 * redactValue, which goes by keys, never read it as the api_key's value; a server's default is
 * the value the call gets when the client leaves it out. The name is that of the property the
 * schema describes, through its subschemas (`{"token": {"anyOf": [{"default": S}]}}`,
 * `{"api_keys": {"items": {"const": S}}}`: schemaOwner), and a secret-like name holds for every
 * property below it too, as redactValue replaces everything under such a key. Such values outside
 * any property (an input schema's own `examples` or `default`, whole argument objects) are
 * redacted as redactValue would, by their keys. Everything else is kept as it is (the caller
 * redacts the rest as it did).
 */
export function redactSchemaDefaults(
  value: unknown,
  opts: RedactOptions & { refOwners?: ReadonlyMap<object, string> } = {},
): unknown {
  const owners = secretRefTargets(value);
  const walk = (v: unknown, outer: string | null): unknown => {
    if (typeof v !== "object" || v === null) return v;
    if (Array.isArray(v)) return v.map((x) => walk(x, outer));
    // a definition a secret-like property takes by `$ref` is that property's (secretRefTargets)
    const owner = owners.get(v) ?? opts.refOwners?.get(v) ?? outer;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      let copy: unknown;
      // (outside any property, a schema's own values, `examples: [{"session": S}]` of a whole
      // input, are redacted by their keys: redactValueUnder with no name)
      if (isSchemaValue(k)) copy = redactSchemaValue(owner, k, x, opts);
      else if (k === "enum")
        copy = walk(x, null); // values, shown (SCHEMA_VALUES)
      else if (k === "properties" && typeof x === "object" && x !== null && !Array.isArray(x)) {
        const props: Record<string, unknown> = {};
        for (const [name, sub] of Object.entries(x)) setOwn(props, name, walk(sub, schemaOwner(owner, name)));
        copy = props;
      } else copy = walk(x, owner);
      setOwn(out, k, copy);
    }
    return out;
  };
  return walk(value, null);
}

/**
 * The subschemas that a property named like a secret takes by reference, each mapped to that
 * property's name: every object of a definition reached from anywhere under such a property,
 * including through its subschemas, and transitively from there (`{"api_key": {"$ref":
 * "#/$defs/K"}}` makes `K`'s default the api_key's: redactSchemaDefaults, and the diff's values,
 * src/catalog/schema.ts), by
 *   - `$ref` to a JSON pointer (`#/$defs/K`, `#/definitions/K`, its `%` and `~0`/`~1` escapes
 *     decoded) or an anchor (`#name`: `$anchor`, `$dynamicAnchor`, a draft-07 `$id: "#name"`),
 *     in the same document: the reference's own (`#…`), or one named by a URI that resolves,
 *     against the `$id`s around the reference, to the `$id` of the schema or of a subschema of
 *     the document (`https://x.example/s.json#/$defs/K` under `"$id": "https://x.example/s.json"`,
 *     `k.json` under a subschema's `"$id": "k.json"`). Any other URI is another document's:
 *     never fetched, never followed;
 *   - `$dynamicRef` (2020-12) as `$ref`, and, when it names an anchor, to every anchor of that
 *     name anywhere in the document, whatever its URI: the dynamic scope decides at evaluation
 *     time which one it lands on, and any could be; and to the roots `#` names (ajv calls the
 *     function it is compiling when no dynamic anchor of that name is in scope, whatever the
 *     fragment says, and that is the schema the reference is in or one around it);
 *   - `$recursiveRef` (2019-09) as `$ref`, and to every schema of the document with
 *     `"$recursiveAnchor": true`.
 * A document is a tool's `inputSchema` or `outputSchema` (each compiled on its own: ajv never
 * registers one tool's schema for another's references), or the value itself where it is none
 * (a schema given alone). A list of tools is no schema: each of its items is read as if it were
 * given alone, so that no tool's reference reaches another tool (a `"$ref": "#"` in one tool's
 * input made every tool's defaults its own). A `#…` reference is resolved against its
 * document's root and the nearest subschema with an `$id` around it, and against the value too
 * where what that names is in the same document (`#/inputSchema/$defs/K` in a tool given whole);
 * an anchor, an `$id` or a `$recursiveAnchor` is looked for in the same document (from outside
 * every input and output schema, in all of them). Both may take more than a validator would,
 * never less. Each object is scanned under a secret-like name at most once (cycles end), each URI
 * reference, anchor name and the `$recursiveAnchor` schemas followed once a document, so this is
 * linear in the value's size.
 */
export function secretRefTargets(value: unknown): Map<object, string> {
  if (Array.isArray(value)) {
    // a list of tools: each one alone (an object in two of them is the first one's)
    const all = new Map<object, string>();
    for (const x of value) for (const [o, name] of secretRefTargets(x)) if (!all.has(o)) all.set(o, name);
    return all;
  }
  const owners = new Map<object, string>();
  const seen = new Map<object, Where>(); // where each object was first met
  const refs: [string, string, string, Where][] = []; // [keyword, reference, secret-like owner, where]
  let documents = 0;
  const newDocument = (root: unknown, top: Doc | null): Doc => ({
    root,
    top,
    // a document's own address, for `$id`s relative to nothing (no one can name it)
    base: `https://${documents++}.document.portcullis.invalid/`,
    anchors: new Map(),
    recursiveAnchors: [],
    resources: new Map(),
    anchorsFollowed: new Set(),
    urisFollowed: new Set(),
    recursiveFollowed: false,
  });
  const schemaDocuments = new Map<object, Doc>(); // each input or output schema's
  const addTo = <K>(map: Map<K, object[]>, key: K, v: object): void => {
    const list = map.get(key);
    if (list === undefined) map.set(key, [v]);
    else list.push(v);
  };
  /** What a schema of `doc` names is found from its document and from the value's (`top`). */
  const register = (doc: Doc, add: (d: Doc) => void): void => {
    add(doc);
    if (doc.top !== null) add(doc.top);
  };
  const scan = (v: unknown, owner: string | null, at: Where): void => {
    if (typeof v !== "object" || v === null) return;
    const secret = owner !== null && isSecretName(owner);
    if (secret) {
      if (owners.has(v)) return;
      owners.set(v, owner);
    }
    const first = !seen.has(v);
    if (first) seen.set(v, at);
    if (Array.isArray(v)) {
      for (const x of v) scan(x, owner, at);
      return;
    }
    const o = v as Record<string, unknown>;
    for (const k of ["$anchor", "$dynamicAnchor", "$id"]) {
      const a = Object.hasOwn(o, k) ? o[k] : undefined;
      if (typeof a !== "string") continue;
      const hash = a.indexOf("#");
      // (`$id: "#name"` and `$id: "https://…#name"` name an anchor, as drafts 6 and 7 read it)
      const name = k === "$id" ? (hash === -1 ? "" : a.slice(hash + 1)) : a;
      if (first && name !== "") register(at.doc, (d) => addTo(d.anchors, name, v));
      if (k === "$id" && hash !== 0) {
        const base = resolvedUri(a, at.base);
        if (base !== null && first) register(at.doc, (d) => addTo(d.resources, base, v));
        at = { doc: at.doc, idRoot: v, base: base ?? at.base };
      }
    }
    if (first && Object.hasOwn(o, "$recursiveAnchor") && o.$recursiveAnchor === true)
      register(at.doc, (d) => d.recursiveAnchors.push(v));
    for (const [k, x] of Object.entries(o)) {
      if (isSchemaValue(k) || k === "enum") continue; // values, not schemas
      if (k === "$ref" || k === "$dynamicRef" || k === "$recursiveRef") {
        if (secret && typeof x === "string") refs.push([k, x, owner, at]);
      } else if (k === "properties" && typeof x === "object" && x !== null && !Array.isArray(x)) {
        for (const [name, sub] of Object.entries(x)) scan(sub, schemaOwner(owner, name), at);
      } else if (
        (k === "inputSchema" || k === "outputSchema") &&
        at.doc.top === null && // (in a schema, a definition may have that name)
        typeof x === "object" &&
        x !== null
      ) {
        let doc = schemaDocuments.get(x);
        if (doc === undefined) {
          doc = newDocument(x, at.doc);
          schemaDocuments.set(x, doc);
        }
        scan(x, owner, { doc, idRoot: null, base: doc.base });
      } else scan(x, owner, at);
    }
  };
  // a target is scanned where it was met (its `$id`s, its document), not where the reference was
  const whereMet = (t: unknown): Where | undefined =>
    typeof t === "object" && t !== null ? seen.get(t) : undefined;
  const scanTarget = (t: unknown, owner: string, at: Where): void => {
    scan(t, owner, whereMet(t) ?? at);
  };
  const outer = newDocument(value, null);
  scan(value, null, { doc: outer, idRoot: null, base: outer.base });
  // a worklist, not recursion: a chain of thousands of definitions must not exhaust the stack
  for (let i = 0; i < refs.length; i++) {
    const [keyword, ref, owner, at] = refs[i]!;
    const doc = at.doc;
    if (keyword === "$recursiveRef" && !doc.recursiveFollowed) {
      doc.recursiveFollowed = true;
      for (const t of doc.recursiveAnchors) scanTarget(t, owner, at);
    }
    // (ajv calls the function it is compiling when no dynamic anchor of that name is in scope,
    // whatever the fragment says: the schema the reference is in, or one around it: its
    // document, the input or output schema or the value given alone, and the nearest subschema
    // with an `$id`)
    if (keyword === "$dynamicRef") for (const d of [doc.root, at.idRoot]) scanTarget(d, owner, at);
    const hash = ref.indexOf("#");
    const uri = hash === -1 ? ref : ref.slice(0, hash);
    let fragment: string;
    try {
      fragment = hash === -1 ? "" : decodeURIComponent(ref.slice(hash + 1));
    } catch {
      continue;
    }
    // [a root the fragment is read in, whether what it names must be in the same document]
    let roots: [unknown, boolean][];
    if (uri === "")
      roots = [
        [doc.root, false],
        [at.idRoot, false],
        [value, true], // (a tool given whole: `#/inputSchema/…`, never into another document)
      ];
    else {
      const resolved = resolvedUri(uri, at.base);
      if (resolved === null || doc.urisFollowed.has(`${resolved}#${fragment}`)) roots = [];
      else {
        doc.urisFollowed.add(`${resolved}#${fragment}`);
        // none: another document's, never followed
        roots = (doc.resources.get(resolved) ?? []).map((r) => [r, false]);
      }
    }
    if (fragment === "" || fragment.startsWith("/")) {
      for (const [r, sameDocument] of roots) {
        if (r === null || r === undefined) continue;
        const t = pointed(r, fragment);
        if (sameDocument && whereMet(t)?.doc !== doc) continue;
        scanTarget(t, owner, whereMet(r) ?? at);
      }
    } else if ((roots.length > 0 || keyword === "$dynamicRef") && !doc.anchorsFollowed.has(fragment)) {
      doc.anchorsFollowed.add(fragment);
      for (const t of doc.anchors.get(fragment) ?? []) scanTarget(t, owner, at);
    }
  }
  return owners;
}

/** A schema document: a tool's input or output schema, or the value given (secretRefTargets). */
interface Doc {
  root: unknown;
  /** the value's document, for an input or output schema in it; null for the value's own */
  top: Doc | null;
  /** its made-up address, for `$id`s relative to nothing */
  base: string;
  anchors: Map<string, object[]>;
  /** `"$recursiveAnchor": true` */
  recursiveAnchors: object[];
  /** an `$id` resolved (no fragment) → its schemas */
  resources: Map<string, object[]>;
  /** (every object with one is scanned once for all) */
  anchorsFollowed: Set<string>;
  urisFollowed: Set<string>;
  recursiveFollowed: boolean;
}

/** Where a schema is: its document, what a `#…` reference in it is resolved against, its base URI. */
interface Where {
  doc: Doc;
  /** the nearest subschema with an `$id`, if any */
  idRoot: object | null;
  /** the `$id`s above it resolved, or its document's own made-up address */
  base: string;
}

/**
 * `uri` resolved against `base`, without its fragment, normalised as a URL parser writes it
 * (`HTTPS://X.example:443/s.json` is `https://x.example/s.json`); null when it is none. Nothing
 * is fetched.
 */
function resolvedUri(uri: string, base: string): string | null {
  try {
    const u = new URL(uri, base === "" ? undefined : base);
    u.hash = "";
    return u.href;
  } catch {
    return null;
  }
}

/** What the JSON pointer `pointer` (`/a/b~1c`, decoded from its URI fragment) names in `doc`. */
function pointed(doc: unknown, pointer: string): unknown {
  if (pointer === "") return doc;
  let at = doc;
  for (const raw of pointer.slice(1).split("/")) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (typeof at !== "object" || at === null) return undefined;
    if (Array.isArray(at)) {
      if (!/^(?:0|[1-9][0-9]*)$/.test(key)) return undefined;
      at = at[Number(key)];
    } else at = Object.hasOwn(at, key) ? (at as Record<string, unknown>)[key] : undefined;
  }
  return at;
}

/**
 * The name whose values a property's schema gives: the property's own, unless it sits under one
 * named like a secret, whose name then holds (everything under a secret-like key is a secret).
 */
export function schemaOwner(outer: string | null, name: string): string {
  return outer !== null && isSecretName(outer) ? outer : name;
}

function isSchemaValue(k: string): k is (typeof SCHEMA_VALUES)[number] {
  return (SCHEMA_VALUES as readonly string[]).includes(k);
}

/**
 * The keywords whose value a schema gives as a property's value: `default` (what the call gets
 * when the client leaves it out), `const` (the one value it may take) and `examples` (values it
 * might take: a server pastes its own key there as readily as into a default). Not `enum`: it
 * lists the choices every caller is offered (`auth_mode: oauth|basic|none`), which the human
 * must see to judge what a call may do, and a narrowed or widened enum is an authority change
 * the diff reports; its strings are still redacted as text wherever they are shown.
 */
export const SCHEMA_VALUES = ["default", "const", "examples"] as const;

/**
 * A value a schema gives for the property `name` under `keyword` (SCHEMA_VALUES), redacted as the
 * property's own value would be (redactValueUnder): each of `examples` on its own, so that the
 * human still sees how many there are and which are empty or null.
 */
export function redactSchemaValue(
  name: string | null,
  keyword: string,
  v: unknown,
  opts: RedactOptions = {},
): unknown {
  if (keyword === "examples" && Array.isArray(v)) return v.map((x) => redactValueUnder(name, x, opts));
  return redactValueUnder(name, v, opts);
}

/** A copy of a JSON value with every string redacted as text (redactText); keys decide nothing. */
export function redactStrings(value: unknown): unknown {
  if (typeof value === "string") return redactText(value);
  if (Array.isArray(value)) return value.map(redactStrings);
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) setOwn(out, k, redactStrings(v));
  return out;
}

function isMarker(v: unknown, marker: unknown): boolean {
  if (v === marker || v === REDACTED) return true;
  return (
    typeof v === "object" &&
    v !== null &&
    typeof marker === "object" &&
    marker !== null &&
    JSON.stringify(v) === JSON.stringify(marker)
  );
}

const FLAG = /^(--?)([A-Za-z0-9][A-Za-z0-9_.-]*)(?:(=)([\s\S]*))?$/;

/** A flag whose value is a path to a secret, not the secret (`--token-file`, `--password-dir`). */
function namesAPath(flag: string): boolean {
  return /(?:^|[-_.])(?:file|path|dir|env|var)$/i.test(flag);
}

/** Short flags that take a password by convention (`mysql -p S`, `-P S`); a port number is kept. */
const SHORT_PASSWORD_FLAGS = new Set(["p", "P", "pw"]);

function looksLikeFlag(a: string): boolean {
  return /^--?[A-Za-z]/.test(a);
}

/**
 * A command line with secret values replaced, word for word (same length, same positions), for
 * execution records and anything shown. JSON words are redacted inside, other words as text.
 */
export function redactArgv(argv: readonly string[]): string[] {
  const out: string[] = [];
  let hideNext = false;
  for (const a of argv) {
    if (hideNext) {
      hideNext = false;
      if (!looksLikeFlag(a)) {
        out.push(REDACTED);
        continue;
      }
    }
    const flag = FLAG.exec(a);
    if (flag) {
      const [, dashes, name, eq, value] = flag as unknown as [string, string, string, string?, string?];
      const secret =
        (isSecretName(name) && !namesAPath(name)) || (dashes === "-" && SHORT_PASSWORD_FLAGS.has(name));
      if (secret) {
        if (eq !== undefined) {
          const shortPort = dashes === "-" && !isSecretName(name) && /^[0-9]+$/.test(value ?? "");
          out.push(shortPort ? a : `${dashes}${name}=${REDACTED}`);
        } else {
          out.push(a);
          hideNext = true;
        }
        continue;
      }
      if (eq !== undefined) {
        out.push(`${dashes}${name}=${redactWord(value ?? "")}`);
        continue;
      }
      out.push(redactText(a));
      continue;
    }
    const env = /^([A-Za-z_][A-Za-z0-9_.-]*)=([\s\S]*)$/.exec(a);
    if (env) {
      out.push(isSecretName(env[1]!) ? `${env[1]}=${REDACTED}` : `${env[1]}=${redactWord(env[2]!)}`);
      continue;
    }
    out.push(redactWord(a));
  }
  // `-p 8080` is a port, not a password: put the number back.
  for (let i = 1; i < argv.length; i++) {
    const prev = argv[i - 1]!;
    const m = FLAG.exec(prev);
    if (
      m &&
      m[1] === "-" &&
      m[3] === undefined &&
      SHORT_PASSWORD_FLAGS.has(m[2]!) &&
      /^[0-9]+$/.test(argv[i]!)
    ) {
      out[i] = argv[i]!;
    }
  }
  return out;
}

/** One word: a JSON blob is redacted inside (keys and values), anything else as text. */
function redactWord(a: string): string {
  if (/^\s*[[{]/.test(a)) {
    try {
      return JSON.stringify(redactValue(JSON.parse(a)));
    } catch {
      return redactText(a);
    }
  }
  return redactText(a);
}

/**
 * A command line as a person reads it: secrets redacted (redactArgv), JSON blobs and very long
 * words shown by size only (they can carry anything), the whole cut to a readable length.
 */
export function displayCommand(argv: string[]): string {
  const out = redactArgv(argv).map((a, i) => {
    const given = argv[i]!;
    if (a !== REDACTED && /^\s*[[{]/.test(given)) return `[${given.length}-char JSON argument]`;
    if (given.length > MAX_ARGUMENT_CHARS) return `[${given.length}-char argument]`;
    return a;
  });
  const text = out.map((a) => (/^[A-Za-z0-9_./:=@%+,[\]-]+$/.test(a) ? a : JSON.stringify(a))).join(" ");
  return text.length > MAX_COMMAND_CHARS ? `${cutText(text, MAX_COMMAND_CHARS)}…` : text;
}

/**
 * An execution record as it may be kept and shown: the launch command and every process's argv
 * through redactArgv, every other string through redactText. The record's digests were computed
 * over the real values before this copy was made.
 */
export function redactRecord<T extends { launchCommand: string[]; processes?: { argv: string[] }[] }>(
  r: T,
): T {
  const out = redactStrings(r) as T;
  out.launchCommand = redactArgv(r.launchCommand);
  if (Array.isArray(r.processes) && Array.isArray(out.processes)) {
    out.processes = r.processes.map((p, i) => ({
      ...(out.processes as { argv: string[] }[])[i]!,
      argv: Array.isArray(p.argv) ? redactArgv(p.argv.map(String)) : p.argv,
    }));
  }
  return out;
}

/**
 * An audit event as shown to a person: its execution record and clear arguments redacted as
 * they are when written, every other string as text. Digests in it stay as they are.
 */
export function redactEvent<T extends Record<string, unknown>>(e: T): T {
  const out = redactStrings(e) as Record<string, unknown>;
  const rec = e.record as { launchCommand?: unknown } | undefined;
  if (rec && typeof rec === "object" && Array.isArray(rec.launchCommand)) {
    out.record = redactRecord(rec as { launchCommand: string[] });
  }
  if (e.arguments !== undefined) out.arguments = redactValue(e.arguments, { marker: { redacted: true } });
  return out as T;
}
