import { createHash } from "node:crypto";
import { cutText } from "../util/cut.js";

/**
 * Text rules used by the diff: when is a text change provably cosmetic, which effect verbs a new
 * description names, which input names look like destinations, selectors or secrets.
 */

/**
 * The text with runs of whitespace collapsed to one space and the ends trimmed.
 *
 * The runs here and in `words` and `nameTokens` are written `X X*`, never `X+`: the text is a
 * server's description or property name, megabytes long if it likes, and V8, compiling a pattern
 * unoptimized (a long-lived process that has compiled much regular-expression code), runs `X+`
 * keeping a backtracking entry per character and throws RangeError past 64 MiB of them. A
 * description of 8 MiB of blanks or letters, or a property name of 8 MiB of dashes, made the
 * catalog's diff throw, and the catalog was not served (test/gateway/unoptimized-regex.test.ts).
 */
export function cosmeticForm(s: string): string {
  return s.replace(/\p{White_Space}\p{White_Space}*/gu, " ").trim();
}

/**
 * A change is cosmetic only when it touches nothing but whitespace (runs collapsed, ends
 * trimmed). Letter case and punctuation can carry meaning ("Does NOT delete anything." and
 * "Does not; delete anything!" read differently), so any other edit is not cosmetic.
 */
export function isCosmeticTextChange(before: string, after: string): boolean {
  return cosmeticForm(before) === cosmeticForm(after);
}

/**
 * Verbs that name an effect beyond reading. Each is matched with its usual inflections
 * (s, es, ed, d, ing, er, ion) plus the irregular forms listed.
 */
const EFFECT_VERBS: Record<string, string[]> = {
  write: ["wrote", "written", "writing"],
  update: [],
  delete: ["deletion"],
  remove: ["removal"],
  send: ["sent"],
  post: [],
  deploy: ["deployment"],
  publish: [],
  execute: ["execution"],
  run: ["ran", "running"],
  create: ["creation"],
  modify: ["modified", "modifies", "modification"],
  edit: [],
  upload: [],
  push: [],
  merge: [],
  commit: ["committed", "committing"],
  transfer: ["transferred", "transferring"],
  pay: ["paid", "payment"],
  email: [],
  message: [],
  notify: ["notified", "notifies", "notification"],
  drop: ["dropped", "dropping"],
  destroy: [],
  erase: [],
  purge: [],
  wipe: [],
  overwrite: ["overwrote", "overwritten", "overwriting"],
  reset: [],
  install: [],
  uninstall: [],
  invite: [],
  share: [],
  grant: [],
  revoke: [],
  approve: [],
  cancel: ["cancelled", "canceled", "cancelling", "canceling"],
  kill: [],
  terminate: [],
  restart: [],
  shutdown: [],
  stop: ["stopped", "stopping"],
  move: [],
  rename: [],
  submit: ["submitted", "submitting"],
  forward: [],
  export: [],
  upsert: [],
  insert: [],
  patch: [],
  put: ["putting"],
  trigger: [],
  launch: [],
  rollback: [],
  revert: [],
  close: [],
  archive: [],
  transmit: ["transmitted", "transmitting"],
  broadcast: [],
  spawn: [],
  invoke: ["invocation"],
  mutate: ["mutation"],
  charge: [],
  refund: [],
  purchase: [],
  exec: [],
  shell: [],
};

const EFFECT_FORMS: Map<string, string> = (() => {
  const m = new Map<string, string>();
  for (const [verb, extra] of Object.entries(EFFECT_VERBS)) {
    const stem = verb.endsWith("e") ? verb.slice(0, -1) : verb;
    const forms = [verb, `${verb}s`, `${verb}es`, `${verb}ed`, `${verb}d`, `${stem}ing`, `${verb}ing`];
    forms.push(`${verb}r`, `${verb}er`, `${stem}ion`, `${stem}ions`, ...extra);
    for (const f of forms) if (!m.has(f)) m.set(f, verb);
  }
  return m;
})();

function words(s: string): string[] {
  return s.toLowerCase().match(/\p{L}\p{L}*/gu) ?? [];
}

/** Effect verbs (base forms) named in `text`. */
export function effectVerbs(text: string): Set<string> {
  const out = new Set<string>();
  for (const w of words(text)) {
    const v = EFFECT_FORMS.get(w);
    if (v) out.add(v);
  }
  return out;
}

/** Effect verbs named in `after` that `before` did not name, sorted. */
export function newEffectVerbs(before: string, after: string): string[] {
  const had = effectVerbs(before);
  return [...effectVerbs(after)].filter((v) => !had.has(v)).sort();
}

/**
 * Name tokens that make a new input field worth a human's attention: it picks a destination,
 * a target, a scope (account, project), a command, or carries a secret.
 */
const SENSITIVE_TOKENS: Record<string, string> = {
  url: "url",
  urls: "url",
  uri: "url",
  uris: "url",
  link: "url",
  href: "url",
  endpoint: "url",
  webhook: "url",
  callback: "url",
  path: "path",
  paths: "path",
  file: "path",
  files: "path",
  filename: "path",
  filepath: "path",
  dir: "path",
  directory: "path",
  folder: "path",
  host: "host",
  hostname: "host",
  hosts: "host",
  server: "host",
  domain: "host",
  ip: "host",
  port: "host",
  destination: "destination",
  dest: "destination",
  target: "destination",
  to: "recipient",
  cc: "recipient",
  bcc: "recipient",
  recipient: "recipient",
  recipients: "recipient",
  channel: "recipient",
  email: "email",
  emails: "email",
  mail: "email",
  phone: "recipient",
  command: "command",
  commands: "command",
  cmd: "command",
  shell: "command",
  script: "command",
  exec: "command",
  argv: "command",
  query: "free-form query",
  sql: "free-form query",
  account: "account",
  accounts: "account",
  user: "account",
  username: "account",
  owner: "account",
  org: "account",
  organization: "account",
  tenant: "account",
  workspace: "account",
  project: "project",
  projects: "project",
  repo: "project",
  repository: "project",
  env: "project",
  environment: "project",
  region: "project",
  cluster: "project",
  namespace: "project",
  token: "secret",
  secret: "secret",
  password: "secret",
  passwd: "secret",
  key: "secret",
  apikey: "secret",
  credential: "secret",
  credentials: "secret",
  auth: "secret",
  cookie: "secret",
  private: "private data",
  internal: "private data",
  sudo: "privilege",
  admin: "privilege",
  force: "privilege",
};

const SENSITIVE_FORMATS: Record<string, string> = {
  uri: "url",
  "uri-reference": "url",
  iri: "url",
  "iri-reference": "url",
  "uri-template": "url",
  url: "url",
  hostname: "host",
  "idn-hostname": "host",
  ipv4: "host",
  ipv6: "host",
  email: "email",
  "idn-email": "email",
};

/** Splits snake_case, kebab-case, dotted and camelCase names into lower-case tokens. */
export function nameTokens(name: string): string[] {
  return name
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, "$1 $2")
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, "$1 $2")
    .toLowerCase()
    .split(/[^\p{L}\p{N}][^\p{L}\p{N}]*/u)
    .filter((t) => t.length > 0);
}

/** Why a field name (and its declared format) looks sensitive; empty when it does not. */
export function sensitiveReasons(name: string, format?: unknown): string[] {
  const out = new Set<string>();
  const tokens = nameTokens(name);
  for (const t of tokens) {
    const r = SENSITIVE_TOKENS[t];
    if (r && Object.hasOwn(SENSITIVE_TOKENS, t)) out.add(`${r}-like name`);
  }
  // joined forms: "apiKey" → api, key (caught above); "accesstoken" as one word
  const joined = tokens.join("");
  for (const t of ["token", "secret", "password", "url", "path", "host", "email", "account", "project"]) {
    if (joined.includes(t) && !tokens.includes(t)) {
      const r = SENSITIVE_TOKENS[t];
      if (r) out.add(`${r}-like name`);
    }
  }
  if (typeof format === "string" && Object.hasOwn(SENSITIVE_FORMATS, format)) {
    out.add(`format ${format}`);
  }
  return [...out].sort();
}

/**
 * Characters a human cannot see for what they are: C0 and C1 controls, format characters (bidi
 * overrides, marks and isolates, zero-width characters, the soft hyphen, Unicode tag characters),
 * every Default_Ignorable_Code_Point (Hangul fillers, variation selectors, Mongolian free
 * variation selectors, combining grapheme joiner, …), separators other than the plain space
 * (line and paragraph separators, no-break and other spaces that look like a space), lone
 * surrogates, private-use and unassigned code points (drawn as anything, or as the same box).
 * The `u` flag makes the class match whole code points, so the astral ones (tags at U+E0000…,
 * variation selectors at U+E0100…) are caught too. The space itself is left alone.
 */
const HIDDEN = /(?! )[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Z}\p{Default_Ignorable_Code_Point}]/gu;

/** Replaces every hidden character of `s` with what `mark` makes of its code point. */
export function markHidden(s: string, mark: (codePoint: number) => string): string {
  return s.replace(HIDDEN, (c) => mark(c.codePointAt(0)!));
}

/** `\u00ad` for a code point in the BMP, `\u{e0041}` beyond it. */
function escapeCodePoint(cp: number): string {
  const hex = cp.toString(16);
  return cp > 0xffff ? `\\u{${hex}}` : `\\u${hex.padStart(4, "0")}`;
}

/**
 * Makes untrusted text safe to print on a terminal and honest to read: every hidden character
 * (see `HIDDEN`) is written as an escape, so a server cannot move the cursor, recolor the
 * screen, reorder what the human reads, or hide a character from them (a soft hyphen, a tag).
 */
export function safeText(s: string): string {
  return markHidden(s, escapeCodePoint);
}

const PLAIN_NAME = /^[A-Za-z0-9_.:/@-]{1,128}$/;

/**
 * A tool or field name for display: bare when plain, otherwise quoted, with `\` and `"` escaped
 * and every hidden character written as an escape. Two different names never display the same
 * (the quoted form decodes back to the name), whatever characters a server put in them, nor are
 * drawn alike (escapeName: a name not in its canonical form is spelled out).
 */
export function displayName(name: string): string {
  return PLAIN_NAME.test(name) ? name : quotedName(name);
}

/** Longer names are shown by their start, their length and a digest of the whole. */
const NAME_SHOWN = 128;

/**
 * A name always in quotes, escaped as `displayName` escapes it: for a name inside a sentence.
 * A name longer than NAME_SHOWN characters (a server may send megabytes) is shown by its start,
 * its length and a digest of the whole name, so the line stays short and two long names that
 * share their start still display differently.
 */
export function quotedName(name: string): string {
  if (name.length <= NAME_SHOWN) return `"${escapeName(name)}"`;
  // never cut a surrogate pair in two: the escape would show a character the name does not have
  const end = /[\ud800-\udbff]/.test(name[NAME_SHOWN - 1]!) ? NAME_SHOWN - 1 : NAME_SHOWN;
  const digest = createHash("sha256").update(JSON.stringify(name)).digest("hex").slice(0, 16);
  const pairs = name.match(/[\ud800-\udbff][\udc00-\udfff]/g)?.length ?? 0;
  return `"${escapeName(name.slice(0, end))}…" (${name.length - pairs} characters, sha256 ${digest}…)`;
}

function escapeName(name: string): string {
  const shown = markHidden(name.replace(/[\\"]/g, "\\$&"), escapeCodePoint);
  // A terminal or a browser draws text as its canonical form: `café` and `cafe` + U+0301, `Å` and
  // `A` + U+030A or the Angstrom sign U+212B, Hangul syllables and their jamo, all look the same.
  // A name shown otherwise than in that form (not NFC, or made so by the escapes) has every
  // character beyond ASCII written as an escape, so two names never draw alike.
  if (shown.normalize("NFC") === shown) return shown;
  return shown.replace(/[^\x20-\x7e]/gu, (c) => escapeCodePoint(c.codePointAt(0)!));
}

/** `s` cut to `max` characters, with a count of what was cut. */
export function clip(s: string, max: number): string {
  if (s.length <= max) return s;
  const cut = cutText(s, max);
  return `${cut}… (${s.length - cut.length} more chars)`;
}

/**
 * The first `max` items shown with `show`, joined with `sep`, the rest counted ("… and 4988
 * more"): a server may send thousands of values, and a line that lists them all is unreadable.
 */
export function firstOf<T>(items: readonly T[], max: number, show: (v: T) => string, sep = ", "): string {
  const shown = items.slice(0, max).map(show).join(sep);
  return items.length > max ? `${shown}${sep}… and ${items.length - max} more` : shown;
}

/**
 * Whether a name is printable ASCII only. A name that is not may imitate one the human knows
 * (a Cyrillic "о" in "deplоy", an accent, a character shown as an escape): reviews say so.
 */
export function isPlainAscii(name: string): boolean {
  // `[…][…]*`, not `[…]+`: a name is the server's, of any length (see cosmeticForm); `portcullis
  // approvals` stopped on an internal error over a call of a tool named with 8 MiB of letters
  return /^[\x20-\x7e][\x20-\x7e]*$/.test(name);
}

/** The warning a review shows under a tool name that is not printable ASCII only. */
export const NOT_ASCII_NOTE =
  "this name is not plain ASCII: it may imitate the name of another tool (check the escapes and letters)";

/**
 * Letters that pass for Latin ones: those of the Cyrillic, Greek, Armenian and Cherokee scripts
 * (`а`, `і`, `ο`, `ս`, `Ꭺ`), the fullwidth and mathematical forms of Latin letters and digits, and
 * the symbols and phonetic letters drawn as a Latin letter though they are not one (`ɡ` U+0261,
 * `ɑ`, `ɩ`, `ȷ`, `ǀ`, the small capitals `ᴅ`, the Kelvin sign `K`, `Å`, `ℓ`, `ℯ`, the Roman
 * numerals `ⅼ` `ⅰ` `Ⅹ`): no language's words mix them with ASCII letters. (Letters of a language's
 * alphabet that differ from ASCII ones, the Turkish `ı`, Azerbaijani `ə`, accented Latin, are not
 * among them; `™` and `℠` neither.)
 */
const LOOKS_LATIN =
  /[\p{Script=Cyrillic}\p{Script=Greek}\p{Script=Armenian}\p{Script=Cherokee}\uFF10-\uFF19\uFF21-\uFF3A\uFF41-\uFF5A\u{1D400}-\u{1D7FF}\u0251\u0261\u0269\u0237\u01C0\u1D00-\u1D2B\u210A-\u2113\u2115\u2119-\u211D\u2124\u2128\u212A-\u212D\u212F-\u2134\u2139\u2145-\u2149\u2160-\u2188]/u;
const LOOKS_LATIN_EACH = new RegExp(LOOKS_LATIN.source, "gu");
const ASCII_LETTER = /[A-Za-z]/;
/** How many strings of one value are looked at, at most: an argument, not a document. */
const MAX_STRINGS_LOOKED_AT = 4096;

/**
 * What mixedScriptText gives for a value holding more strings than it looks at: not known to be
 * free of look-alikes, so flagged as not looked at whole (as a form with too many strings is taken
 * as naming portcullis). An agent that put one mixed string among 5,000 others went unflagged.
 */
export const NOT_ALL_LOOKED_AT: unique symbol = Symbol("not all strings looked at");

/**
 * The first string inside `v` (an argument's value, its keys included) that mixes ASCII letters
 * with letters that pass for them, with those letters written as escapes (`g\u{456}thub.com`),
 * NOT_ALL_LOOKED_AT when `v` holds more strings than are looked at, or null. A one-call approval
 * is of the values the human reads: `https://gіthub.com` with a Cyrillic `і` reads as GitHub's
 * address and is not, and nothing else on the line says so. Text wholly in another script
 * (`Привет`) and accented Latin (`café`) are not flagged.
 */
export function mixedScriptText(v: unknown): string | typeof NOT_ALL_LOOKED_AT | null {
  const stack: unknown[] = [v];
  let looked = 0;
  while (stack.length > 0) {
    const x = stack.pop();
    if (typeof x === "string") {
      if (looked++ === MAX_STRINGS_LOOKED_AT) return NOT_ALL_LOOKED_AT;
      if (ASCII_LETTER.test(x) && LOOKS_LATIN.test(x))
        return x.replace(LOOKS_LATIN_EACH, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
    } else if (Array.isArray(x)) {
      for (const item of x) stack.push(item);
    } else if (typeof x === "object" && x !== null) {
      for (const [key, value] of Object.entries(x)) stack.push(value, key);
    }
  }
  return null;
}

/** The warning a review shows under an argument whose value mixes scripts (mixedScriptText). */
export function mixedScriptNote(text: string | typeof NOT_ALL_LOOKED_AT): string {
  if (text === NOT_ALL_LOOKED_AT)
    return `it holds more than ${MAX_STRINGS_LOOKED_AT} strings, and only ${MAX_STRINGS_LOOKED_AT} were looked at for letters that imitate Latin ones: read it whole before approving one call of it`;
  return `"${clip(text, 120)}" mixes Latin letters with look-alikes from another script (written here as \\u{…}): it may imitate other text`;
}

/** Never throws, whatever `v` is (an object whose toString is not a function, a BigInt, a cycle). */
export function jsonText(v: unknown): string {
  try {
    const s = JSON.stringify(v);
    if (typeof s === "string") return s;
  } catch {
    // fall through
  }
  try {
    return String(v);
  } catch {
    return Object.prototype.toString.call(v);
  }
}

/** A JSON value for display on one line, shortened when long, always terminal-safe. */
export function displayValue(v: unknown, max = 160): string {
  return displayJson(v === undefined ? "(absent)" : jsonText(v), max);
}

/** JSON text made already (a remote server's serverInfo as written), shown as displayValue shows a value. */
export function displayJson(text: string, max = 160): string {
  return safeText(clip(text, max));
}
