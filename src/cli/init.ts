import { mkdirSync, readdirSync, rmdirSync, rmSync, statSync } from "node:fs";
import { constants as osConstants } from "node:os";
import { dirname, join } from "node:path";
import { ApproverKeyMismatchError, PinRefusedError, pinnedSigner } from "../approval/pin.js";
import { safeText } from "../catalog/text.js";
import { initKeyring } from "../keyring/keyring.js";
import { KeyringError, KeyringExistsError } from "../keyring/keyringErrors.js";
import { keyringExists, keyringPath } from "../keyring/keyringRead.js";
import { INSECURE_TEST_KDF_ENV } from "../keyring/keyWrapping.js";
import { openStore, type Store } from "../store/db.js";
import { privateForInit, quotedCommand, resolveStateDir } from "../store/stateDir.js";
import { fileProblem } from "../util/errno.js";
import { parse } from "./args.js";
import { UsageError } from "./errors.js";
import { MIN_PASSPHRASE_LENGTH, PASSPHRASE_HELP, PassphraseError, readPassphrase } from "./passphrase.js";

export const INIT_HELP = `usage: portcullis init [--state-dir DIR]

Creates the keyring in the state directory: you choose a passphrase (at least
${MIN_PASSPHRASE_LENGTH} characters); it protects a random data key, the private half of the audit
key pair and the private half of the approver key (which signs every approval and
denial). Gateways seal audit records to the audit public key without it, and
honour only decisions signed by the approver key pinned in the audit chain (init
writes that pin). Reading the audit (portcullis audit sessions|activity|show) and
deciding need the passphrase. An existing keyring is never overwritten. keyring.json is
mode 0600 (back it up with the state directory; a copy restored readable by others is made 0600
again by the next command that reads it, which says so on stderr, and refused when that user
cannot make it 0600). The state directory is made mode 0700; an existing one others may read
is made 0700 when it is empty, and refused (with the chmod to run) when it holds other files. init is all or nothing: when
the store cannot be used, the pin cannot be written or init is interrupted (Ctrl-C, SIGTERM,
SIGHUP), no keyring is left behind; nor is a state directory init made (one that was there stays).

${PASSPHRASE_HELP}

Exit codes: 0 created, 2 usage or environment error (a keyring exists already,
no terminal and no passphrase file, a passphrase under ${MIN_PASSPHRASE_LENGTH} characters, a store that
cannot be used).`;

const INIT_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

export async function initCommand(args: string[], ctx: { stateDir: string }): Promise<number> {
  // The passphrase is asked for, never taken from an argument: a stray word is refused unseen.
  let help: boolean | undefined;
  try {
    help = parse("init", args, { help: { type: "boolean", short: "h" } }, false).values.help;
  } catch (e) {
    if (e instanceof UsageError) {
      // an unknown option's refusal already names 'portcullis init --help': not twice
      // nor its final period: fail() ends the sentence
      const said = e.message.replace(/^init: /, "").replace(/\.$/, "");
      return fail(said.includes("--help") ? said : `${said}; see portcullis init --help`);
    }
    throw e;
  }
  if (help) {
    process.stdout.write(`${INIT_HELP}\n`);
    return 0;
  }
  // The state directory is made once there is a passphrase, and taken back when init fails: a
  // passphrase file that cannot be read left an empty state directory behind, which later
  // commands took for one set up. Only what init made goes; a directory that was there stays.
  let made: string | null = null;
  /** the keyring this process wrote (null: none, or another process's is there) */
  let written: string | null = null;
  const takeBack = () => {
    // Another init's keyring in the directory (two inits at once: that one won): the directory,
    // its keyring and its store are that init's, pinned and reported created; nothing is taken.
    if (made !== null && !(written === null && keyringExists(ctx.stateDir)))
      removeMadeStateDir(ctx.stateDir, made);
    made = null;
  };
  try {
    // A file where the directory (or one above it) should be is said before the passphrase is typed.
    made = missingFrom(ctx.stateDir);
    // Checked before asking for a passphrase; initKeyring refuses again, atomically.
    if (keyringExists(ctx.stateDir)) throw new KeyringExistsError(keyringPath(ctx.stateDir));
    // the keyring and the store go in a directory only its owner can read (doctor checks it too)
    const was = privateForInit(ctx.stateDir);
    if (was)
      process.stderr.write(
        `portcullis init: the state directory ${safeText(ctx.stateDir)} was mode ${was}; it is now 700 (only you may read it)\n`,
      );
    const passphrase = await readPassphrase("New passphrase: ", { confirm: true });
    if ([...passphrase].length < MIN_PASSPHRASE_LENGTH) {
      return fail(`the passphrase must be at least ${MIN_PASSPHRASE_LENGTH} characters`);
    }
    if (process.env[INSECURE_TEST_KDF_ENV] === "1") {
      process.stderr.write(
        `portcullis init: ${INSECURE_TEST_KDF_ENV}=1: cheap key derivation, for tests only\n`,
      );
    }
    // The directory init makes is its own only if this process is the one that makes it: two
    // inits at once both found it missing, and the one that fails must not take back the other's.
    if (made !== null && !madeHere(made)) made = null;
    // The store first: one that cannot be used stops init before a keyring exists (a keyring
    // without its pin would make the next init refuse, and the pin would never be written).
    resolveStateDir(ctx.stateDir);
    const db = openStore(ctx.stateDir);
    let keyring: Awaited<ReturnType<typeof initKeyring>>;
    // Ctrl-C (or SIGTERM, SIGHUP) while the key is derived, twice, would end the process with a
    // keyring written and its approver key not pinned: init would not be all or nothing, and the
    // next init would refuse over it. Until the pin is written the keyring is taken back first.
    // The keyring's write and the pin's are synchronous, so a signal is handled before or after each.
    const interrupted = (signal: NodeJS.Signals) => {
      if (written) rmSync(written, { force: true });
      takeBack();
      process.stderr.write(`portcullis init: interrupted; no keyring was created (run init again).\n`);
      process.exit(128 + (osConstants.signals[signal] ?? 0));
    };
    for (const signal of INIT_SIGNALS) process.on(signal, interrupted);
    try {
      keyring = await initKeyring(ctx.stateDir, passphrase).catch((e: unknown) => {
        // a full disk or a read-only directory: the temporary file is gone, nothing is left
        const code = (e as NodeJS.ErrnoException).code;
        if (typeof code !== "string") throw e;
        throw new KeyringError(`cannot write ${keyringPath(ctx.stateDir)}: ${fileProblem(code)}`);
      });
      written = keyring.path;
      await pinOrTakeBack(db, ctx.stateDir, passphrase, keyring.path);
    } finally {
      for (const signal of INIT_SIGNALS) process.off(signal, interrupted);
      db.close();
    }
    made = null; // created: it stays
    process.stdout.write(
      `Keyring created: ${safeText(keyring.path)}\nAudit key id: ${keyring.keyId}\n` +
        `Approver key id: ${keyring.approver?.keyId} (pinned in the audit chain)\n` +
        "Without the passphrase the audit log cannot be read; back up keyring.json with the state directory.\n" +
        // what comes after init: the host files' servers, wrapped or not, and what to run for them
        `next: ${quotedCommand("doctor", ctx.stateDir)} lists the servers of your MCP hosts' files and what to run to put them behind portcullis (${quotedCommand("wrap HOST --dry-run", ctx.stateDir)} first)\n`,
    );
    return 0;
  } catch (err) {
    takeBack();
    if (err instanceof PinRefusedError) return fail(`${err.message}; nothing was created`);
    if (err instanceof ApproverKeyMismatchError)
      return fail(
        `the audit chain in ${ctx.stateDir} already pins the approver key of another keyring, so a new one would never be honoured; nothing was created: restore that keyring.json, or start over in a new state directory`,
      );
    if (err instanceof PassphraseError || err instanceof KeyringError) return fail(err.message);
    throw err;
  }
}

/**
 * Pins the new keyring's approver key in the audit chain. When that fails, the keyring made a
 * moment ago is removed again, so that `init` can be run once more: nothing has been sealed to it
 * and no pin names it (the pin is one record, written whole or not at all).
 */
async function pinOrTakeBack(db: Store, stateDir: string, passphrase: string, path: string): Promise<void> {
  try {
    await pinnedSigner(db, stateDir, passphrase);
  } catch (err) {
    rmSync(path, { force: true });
    throw err;
  }
}

/**
 * The highest directory on the way to `dir` that does not exist yet (what `mkdir -p` would make
 * first), or null when `dir` exists. Throws the state directory's sentence when a file stands
 * where a directory should be, before any passphrase is asked.
 */
function missingFrom(dir: string): string | null {
  let missing: string | null = null;
  for (let at = dir; ; at = dirname(at)) {
    let st: ReturnType<typeof statSync> | null = null;
    try {
      st = statSync(at);
    } catch {
      st = null;
    }
    if (st) {
      if (!st.isDirectory()) resolveStateDir(dir); // throws: "… is not a directory …"
      return missing;
    }
    missing = at;
    if (dirname(at) === at) return missing;
  }
}

/** The files init may have made in a state directory it created (the store, the keyring). */
const MADE_FILES = /^(?:portcullis\.db(?:-wal|-shm|-journal)?|keyring\.json(?:\.\d+\.[0-9a-f]+\.tmp)?)$/;

/**
 * Takes back a state directory init created, from `dir` up to `top` (the first directory made):
 * its own files, then each directory once empty. Anything else found in it (another process's)
 * is left, and with it the directories that hold it.
 */
function removeMadeStateDir(dir: string, top: string): void {
  try {
    for (const name of readdirSync(dir)) if (MADE_FILES.test(name)) rmSync(join(dir, name), { force: true });
    for (let at = dir; ; at = dirname(at)) {
      rmdirSync(at);
      if (at === top || dirname(at) === at) break;
    }
  } catch {
    // not empty, or gone already: what is left is not init's alone
  }
}

/**
 * Makes `top` (the first missing directory on the way to the state directory) with one mkdir that
 * only one process can win; false when another made it first. Any other failure keeps the claim:
 * resolveStateDir, next, says why the directory cannot be made, and nothing of it is there.
 */
function madeHere(top: string): boolean {
  try {
    mkdirSync(top, { mode: 0o700 });
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== "EEXIST";
  }
}

/**
 * The sentence quotes the state directory, whose name may hold a newline, an ESC or a bidi
 * override (PORTCULLIS_HOME, --state-dir): written escaped, as every command's failure line is.
 */
function fail(sentence: string): number {
  process.stderr.write(`portcullis init: ${safeText(sentence)}.\n`);
  return 2;
}
