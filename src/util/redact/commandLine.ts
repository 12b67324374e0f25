/** Command lines: secret values after flags and in `NAME=value` words, and how a command is shown. */

import { cutText } from "../cut.js";
import { isSecretName } from "./names.js";
import { REDACTED } from "./redacted.js";
import { redactText } from "./text.js";
import { redactValue } from "./values.js";

const MAX_COMMAND_CHARS = 300;
const MAX_ARGUMENT_CHARS = 120;

const FLAG = /^(--?)([A-Za-z0-9][A-Za-z0-9_.-]*)(?:(=)([\s\S]*))?$/;

/** A flag whose value is a path to a secret, not the secret (`--token-file`, `--password-dir`). */
function namesAPath(flag: string): boolean {
  return /(?:^|[-_.])(?:file|path|dir|env|var)$/i.test(flag);
}

/**
 * Short flags that take a password by convention (`mysql -p S`, `-P S`); a port number is kept.
 * (A run in this file's patterns is `[…][…]*`, never `[…]+`: compiled unoptimized, as V8 does in
 * a process that has compiled much regexp code, `+` keeps a backtracking entry per character and
 * threw on a word of 8 MiB: see VALUE_PATTERNS in text.ts.)
 */
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
          const shortPort = dashes === "-" && !isSecretName(name) && /^[0-9][0-9]*$/.test(value ?? "");
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
      /^[0-9][0-9]*$/.test(argv[i]!)
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
  const text = out
    .map((a) => (/^[A-Za-z0-9_./:=@%+,[\]-][A-Za-z0-9_./:=@%+,[\]-]*$/.test(a) ? a : JSON.stringify(a)))
    .join(" ");
  return text.length > MAX_COMMAND_CHARS ? `${cutText(text, MAX_COMMAND_CHARS)}…` : text;
}
