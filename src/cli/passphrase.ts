import { closeSync, openSync, writeSync } from "node:fs";
import { ReadStream } from "node:tty";
import { safeText } from "../catalog/text.js";
import { fileProblem } from "../util/errno.js";
import { readSmallFile, SmallFileError } from "../util/smallFile.js";
import {
  NEW_PASSPHRASE_FILE_ENV,
  PASSPHRASE_FILE_ENV,
  passphraseFileRefusal,
  passphraseFileSentence,
} from "./passphraseFile.js";

/**
 * Passphrase input. The passphrase is typed on the controlling terminal
 * (/dev/tty) with echo off — never taken from an argument or from an environment
 * value holding the passphrase itself. For tests and CI only,
 * PORTCULLIS_PASSPHRASE_FILE=<path> names a file whose first line is the passphrase, this
 * user's alone (src/cli/passphraseFile.ts).
 */

export { NEW_PASSPHRASE_FILE_ENV, PASSPHRASE_FILE_ENV };

/** The shortest passphrase a keyring is given (init, passphrase), in characters. */
export const MIN_PASSPHRASE_LENGTH = 8;

export const PASSPHRASE_HELP = `The passphrase is read from the terminal with echo off, as UTF-8 text (a terminal set to
another encoding is refused, never read as another passphrase). For tests and CI, set
${PASSPHRASE_FILE_ENV}=<path> to a file whose first line is the passphrase,
yours alone (chmod 600: a file others may read or change is refused).`;

/** The passphrase could not be obtained; the CLI exits 2 with this message. */
export class PassphraseError extends Error {
  override name = "PassphraseError";
}

export async function readPassphrase(prompt: string, opts: { confirm?: boolean } = {}): Promise<string> {
  const file = process.env[PASSPHRASE_FILE_ENV];
  if (file) return readPassphraseFile(file, PASSPHRASE_FILE_ENV);
  return readTerminalPassphrase(prompt, opts, PASSPHRASE_FILE_ENV);
}

/**
 * The new passphrase `portcullis passphrase` gives the keyring: typed twice on the terminal, or,
 * for tests and CI, the first line of the file PORTCULLIS_NEW_PASSPHRASE_FILE names, checked as
 * PORTCULLIS_PASSPHRASE_FILE is (this user's alone; src/cli/passphraseFile.ts).
 */
export async function readNewPassphrase(prompt: string): Promise<string> {
  const file = process.env[NEW_PASSPHRASE_FILE_ENV];
  if (file) return readPassphraseFile(file, NEW_PASSPHRASE_FILE_ENV);
  return readTerminalPassphrase(prompt, { confirm: true }, NEW_PASSPHRASE_FILE_ENV);
}

async function readTerminalPassphrase(
  prompt: string,
  opts: { confirm?: boolean },
  /** the variable that stands in for the terminal, named when there is none */
  env: string,
): Promise<string> {
  const out = openTerminal("w", env);
  try {
    // a slip in one of the two entries is asked again, as passwd does, a few times
    for (let attempt = 1; ; attempt++) {
      const first = await readHidden(out, prompt, "passphrase", env);
      if (!opts.confirm) return first;
      const again = await readHidden(out, "Repeat the passphrase: ", "passphrase", env);
      if (again === first) return first;
      if (attempt === CONFIRM_TRIES)
        throw new PassphraseError(`the two passphrases differed ${CONFIRM_TRIES} times`);
      writeSync(out, "the two passphrases differ; type it again\r\n");
    }
  } finally {
    closeSync(out);
  }
}

/** How many times a passphrase and its repetition may differ before the command gives up. */
const CONFIRM_TRIES = 3;

/** A passphrase is one line; a file far larger is not a passphrase file (and is not read into memory). */
const MAX_PASSPHRASE_FILE_BYTES = 64 * 1024;

function readPassphraseFile(file: string, env: string): string {
  // the path is the environment's words: a character a terminal would act on is shown escaped
  const shown = safeText(file);
  let text: string;
  try {
    // a pipe is read (`<(pass show …)`: the passphrase never sits in a file); a device is
    // refused, so /dev/zero is not read until memory runs out; a file others may read or change,
    // or another user's, is refused before a byte of it is read
    text = readSmallFile(file, MAX_PASSPHRASE_FILE_BYTES, "a passphrase file", {
      pipes: true,
      // bytes that are not UTF-8 would each become U+FFFD: another passphrase than the file's,
      // one that any other such bytes of the same count also give (random bytes, say)
      strictUtf8: true,
      refuse: (st) => {
        const r = passphraseFileRefusal(file, st);
        return r === null ? null : new PassphraseError(passphraseFileSentence(file, r, env));
      },
    });
  } catch (err) {
    if (!(err instanceof SmallFileError)) throw err;
    const p = err.problem;
    if ("code" in p) throw new PassphraseError(`cannot read ${env} (${shown}): ${fileProblem(p.code)}`);
    throw new PassphraseError(`${env} (${shown}): ${err.message}`);
  }
  const line = text.replace(/^\uFEFF/, "").split(/\r?\n/, 1)[0] ?? "";
  if (line === "") throw new PassphraseError(`the first line of ${env} (${shown}) is empty`);
  return line;
}

function openTerminal(flags: "r" | "w", env: string = PASSPHRASE_FILE_ENV): number {
  try {
    return openSync("/dev/tty", flags);
  } catch {
    const what = env === NEW_PASSPHRASE_FILE_ENV ? "new passphrase" : "passphrase";
    throw new PassphraseError(
      `there is no terminal to read the ${what} from; set ${env} to a file whose first line is the ${what} (meant for tests and CI)`,
    );
  }
}

/**
 * Reads one line from the terminal in raw mode (no echo). Ctrl-C or Ctrl-D on an empty line
 * cancels. `what` is what the line is ("passphrase", "value"), as its refusals name it.
 */
function readHidden(out: number, prompt: string, what: string, env?: string): Promise<string> {
  // The ReadStream owns (and closes) its descriptor.
  const input = new ReadStream(openTerminal("r", env));
  // raw (no echo) before the prompt shows: what is typed once it shows is never echoed
  input.setRawMode(true);
  writeSync(out, prompt);
  const restore = () => input.setRawMode(false);
  process.once("exit", restore);
  return new Promise<string>((resolve, reject) => {
    // fatal, as a passphrase file is read (src/util/smallFile.ts, strictUtf8): a terminal set to
    // another encoding (Latin-1's "é" is the byte E9) sends bytes that the lenient decoder made
    // U+FFFD each, another passphrase than the one typed, and one that any other such bytes of
    // the same count also give. Stream mode: a character's bytes may come in two reads.
    const decoder = new TextDecoder("utf-8", { fatal: true });
    let value = "";
    let notUtf8 = false;
    const done = (err: Error | null) => {
      input.off("data", onData);
      process.off("exit", restore);
      restore();
      input.destroy();
      writeSync(out, "\n");
      if (err) reject(err);
      else resolve(value);
    };
    // Once a byte is not UTF-8, the rest of the line is still read, to its end, not left to the
    // shell: refused only then, so that what follows is not run as a command, nor echoed.
    const toLineEnd = (chunk: Buffer) => {
      for (const byte of chunk) {
        if (byte === 0x0d || byte === 0x0a) return done(new PassphraseError(notUtf8Typed(what)));
        if (byte === 0x03) return done(new PassphraseError(`${what} entry cancelled`));
      }
    };
    const onData = (chunk: Buffer) => {
      if (notUtf8) return toLineEnd(chunk);
      let chars: string;
      try {
        chars = decoder.decode(chunk, { stream: true });
      } catch {
        notUtf8 = true;
        value = "";
        return toLineEnd(chunk);
      }
      for (const ch of chars) {
        const code = ch.codePointAt(0)!;
        if (ch === "\r" || ch === "\n") return done(null);
        if (code === 0x03 || (code === 0x04 && value === ""))
          return done(new PassphraseError(`${what} entry cancelled`));
        if (code === 0x7f || code === 0x08) value = [...value].slice(0, -1).join("");
        else if (code === 0x15) value = "";
        else if (code === 0x1b)
          return; // an escape sequence (arrow keys…): drop the rest of the chunk
        else if (code >= 0x20) value += ch;
      }
    };
    input.on("data", onData);
  });
}

/** The refusal of a line typed at a terminal that sent bytes that are not UTF-8. */
function notUtf8Typed(what: string): string {
  return `the ${what} typed is not UTF-8 text (the terminal sent a byte that is not UTF-8: is it set to another encoding?), so it would be read as another ${what} than the one typed; set the terminal's encoding to UTF-8 and type it again`;
}

/** A secret value typed on the terminal with echo off (never from an argument). */
export async function readHiddenLine(prompt: string): Promise<string> {
  const out = openTerminal("w");
  try {
    return await readHidden(out, prompt, "value");
  } finally {
    closeSync(out);
  }
}
