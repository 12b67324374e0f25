/** Users and passwords in URLs: `scheme://user:password@host` and `scheme://TOKEN@host`. */

import { entropyBitsPerChar } from "./names.js";
import { REDACTED } from "./redacted.js";

/**
 * Every URL's password replaced: after `://` (afterSchemes, urlQueries.ts), a user, `:`, then the
 * password up to the last `@` of the word (up to a space). Where the userinfo ends is read two
 * ways: a URL parser ends the authority at the first `/`, `?` or `#` and takes its last `@`
 * (`https://u:p@ss?x@host/` is the password `p`, the host `ss` and the query `x@host/`), while
 * whoever wrote a password with such characters in it unescaped meant the last `@` before the host
 * (`p@ss?x`, the host `host`). No reading may show any of the password, so the longest one is
 * hidden: `https://u:[redacted]@host/`. The price is what a URL with a password and another `@`
 * after it shows: `https://u:pw@host/?to=a@b` reads `https://u:[redacted]@b`, and so does
 * `http://localhost:3000/@scope` (`localhost:3000/` could be a user and a password):
 * `http://localhost:[redacted]@scope`. Each word is read once, for all its `://`: linear.
 */
export function redactUserPasswords(s: string): string {
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
export function redactTokenUsers(s: string): string {
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
  // (runs are `[…][…]*`, not `[…]+`: unoptimized, `+` threw on a user of 8 MiB; URL_REST in urlQueries.ts)
  if (u.length < 12 || !/^[A-Za-z0-9_+/=-][A-Za-z0-9_+/=-]*$/.test(u)) return false;
  const digits = /[0-9]/.test(u);
  const letters = u.replace(/[^A-Za-z]/g, "").length;
  if (digits && letters > 0 && /^(?:[0-9a-f][0-9a-f]*|[0-9A-F][0-9A-F]*)$/.test(u)) return true;
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

/** After `scheme://`: a URL's user and its `:` (redactUserPasswords). */
const USER = /[^\s:/@]*:/y;

/** A run of a word's characters without an `@` (redactUserPasswords). */
const NOT_AT = /[^\s@]*/y;
