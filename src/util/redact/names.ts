/**
 * Names that say their value is a secret (keys, flags, variables, query parameters), and the
 * shape of a value that looks generated whatever its name.
 */

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

/**
 * Past this length a name is taken to say its value is a secret without being read: no real key,
 * flag or variable is that long, a server's schema can hold a key of megabytes, and each reading
 * of it costs time linear in its length at every place a diff or a redaction asks (an 8 MiB key
 * took seconds of CPU per catalog diff). Deny first: its value is redacted.
 */
const LONGEST_NAME_READ = 1024;

/**
 * The answers of isSecretName for names read lately: a diff or a redaction of a large catalog asks
 * about the same few property names for every tool (10,000 tools of 30 properties: 600,000
 * questions, a second of a re-list spent splitting names into words). Emptied when full.
 */
const secretNames = new Map<string, boolean>();
const SECRET_NAMES_KEPT = 4096;
/** (a longer name is read each time: the cache stays under a few MB) */
const NAME_KEPT = 256;

/** True when a key, flag or variable name says its value is a secret. */
export function isSecretName(name: string): boolean {
  if (name.length > LONGEST_NAME_READ) return true;
  if (name.length > NAME_KEPT) return readSecretName(name);
  const known = secretNames.get(name);
  if (known !== undefined) return known;
  const secret = readSecretName(name);
  if (secretNames.size >= SECRET_NAMES_KEPT) secretNames.clear();
  secretNames.set(name, secret);
  return secret;
}

function readSecretName(name: string): boolean {
  const flat = name.toLowerCase().replace(/[^a-z0-9]/g, "");
  if (flat === "" || NOT_SECRET.has(flat)) return false;
  if (SECRET_FRAGMENTS.some((f) => flat.includes(f))) return true;
  return words(name).some((w) => SECRET_WORDS.has(w) || (w.startsWith("auth") && !w.startsWith("author")));
}

/** Names where a long, random-looking value is probably a key even though the name is not a secret's. */
export function isSuspiciousName(name: string): boolean {
  if (name.length > LONGEST_NAME_READ) return true;
  return words(name).some((w) => /^(key|keys|access|refresh|nonce|salt|cert|private|sas)$/.test(w));
}

export function entropyBitsPerChar(s: string): number {
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
export function looksRandom(s: string): boolean {
  return (
    s.length >= 20 &&
    !/\s/.test(s) &&
    /[0-9]/.test(s) &&
    /[A-Za-z]/.test(s) &&
    entropyBitsPerChar(s) >= 3.5 &&
    // (`[…][…]*`, not `[…]+`, which threw on 8 MiB of hex compiled unoptimized: VALUE_PATTERNS in text.ts)
    !/^sha256:[0-9a-f][0-9a-f]*$/.test(s)
  );
}
