import { once } from "node:events";
import { closeSync, existsSync, fstatSync, openSync } from "node:fs";
import { join } from "node:path";
import type { ChainEntry } from "../approval/chain.js";
import { unaccountedHistory } from "../approval/chainHistory.js";
import { ApproverKeyMismatchError, checkApproverKey } from "../approval/pin.js";
import { whoAsks } from "../approval/render.js";
import { storedRunEnds } from "../approval/storedRunEnd.js";
import {
  AuditChainError,
  AuditOpenError,
  activityView,
  ChainVerifier,
  type Checkpoint,
  CheckpointFormatError,
  ExportLineTooLongError,
  exportLines,
  exportRecords,
  firstRecordTooLongToExport,
  type GatewayWithoutRun,
  gatewaysWithoutRunView,
  MAX_EXPORT_LINE_BYTES,
  makeCheckpoint,
  type OpenedRecord,
  openRecords,
  parseCheckpoint,
  RecordTooLongToExportError,
  type SessionView,
  type StoredRecord,
  sessionsView,
  shownOutcome,
  storedRecords,
  type VerifyResult,
  verifyExport,
  verifyStore,
} from "../audit/index.js";
import { displayName, safeText } from "../catalog/text.js";
import { unlockKeyring } from "../keyring/keyring.js";
import {
  KeyringError,
  KeyringMissingError,
  KeyringTamperedError,
  WrongPassphraseError,
} from "../keyring/keyringErrors.js";
import { keyringExists } from "../keyring/keyringRead.js";
import { openEmptyStore, openStoreToRead, type Store, StoreError } from "../store/db.js";
import { quotedCommand, requireInitialized, STORE_FILE, stateDirFlagFor } from "../store/stateDir.js";
import { envWholeNumber } from "../util/envMs.js";
import { fileProblem } from "../util/errno.js";
import { printableJson } from "../util/printableJson.js";
import { redactEvent } from "../util/redact.js";
import { shellWord } from "../util/shellWord.js";
import { readSmallFile, SmallFileError } from "../util/smallFile.js";
import {
  emptyValue,
  givenSubcommand,
  leadingZero,
  parse as parseArgs,
  subcommandFirst,
  unknownSubcommand,
} from "./args.js";
import { UsageError as CliUsageError, missingSubcommand } from "./errors.js";
import { failureLine } from "./failureLine.js";
import { keyringEnding } from "./keyringAdvice.js";
import { PASSPHRASE_HELP, PassphraseError, readPassphrase } from "./passphrase.js";
import { type Progress, stderrProgress } from "./progress.js";

export const AUDIT_HELP = `usage:
  portcullis audit verify [--json] [--file EXPORT.jsonl] [--checkpoint FILE]
  portcullis audit export [--json]        JSONL of the sealed records, to stdout
                                          (always JSON lines: --json is accepted, and changes nothing)
  portcullis audit checkpoint [--json]    the head (seq, hash) as a small JSON, to stdout
                                          (always JSON: --json is accepted, and changes nothing)
  portcullis audit sessions [--json]      each agent run: epochs, catalog revisions, grants
  portcullis audit activity [--json]      each call: id, tool, epoch, revision, grant, decision, outcome
  portcullis audit show SEQ [--json]      one record, decrypted

verify, export and checkpoint need no key: they read ciphertext only. verify checks
the store (or an export given with --file) record by record and, with --checkpoint,
that nothing the checkpoint covers was cut off or rewritten. Each record is held by
the record after it; the head (the last record) only by a checkpoint. Keep checkpoints
somewhere the state directory's owner cannot rewrite. checkpoint makes one only of a
store verify passes (exit 1 otherwise, as verify). On a terminal, verify and
export show their progress on stderr when they take more than a second.

sessions, activity and show decrypt, after verifying the chain: they ask for the
passphrase. ${PASSPHRASE_HELP}

Every one of these takes --state-dir DIR (default: $PORTCULLIS_HOME, else
$XDG_STATE_HOME/portcullis, else ~/.local/state/portcullis): the state directory whose log it reads.
An option may come before the subcommand: 'audit --file EXPORT verify' is 'audit verify --file EXPORT'.

Exit codes: 0 ok, 1 the chain (or a record) failed a check, or a wrong passphrase,
2 usage or environment error.`;

class UsageError extends Error {}

const AUDIT_SUBCOMMANDS = ["verify", "export", "checkpoint", "sessions", "activity", "show"] as const;
/** Every subcommand's options, for those written before the subcommand (`audit --json sessions`). */
const AUDIT_OPTIONS = {
  json: { type: "boolean" },
  file: { type: "string" },
  checkpoint: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/**
 * The subcommand an `audit` line names, read as auditCommand reads it (an option may come first),
 * from the words main.ts is given, `--state-dir` still among them: a failure met before the
 * subcommand runs (no state directory, a store that cannot be used, `--state-dir` given twice)
 * names it too ("portcullis audit verify: …"). Null when none is given or the word is none.
 */
export function auditSubcommand(args: string[]): string | null {
  return givenSubcommand(args, { ...AUDIT_OPTIONS, "state-dir": { type: "string" } }, AUDIT_SUBCOMMANDS);
}

export async function auditCommand(args: string[], ctx: { stateDir: string }): Promise<number> {
  const [first] = args;
  if (first === undefined || first === "--help" || first === "-h" || first === "help") {
    process.stdout.write(`${AUDIT_HELP}\n`);
    if (first === undefined) missingSubcommand("audit", AUDIT_SUBCOMMANDS);
    return first === undefined ? 2 : 0;
  }
  // the failure line's command: "portcullis audit verify: …" once the subcommand is known, as
  // vault's, catalog's and passkey's name theirs (README, "Commands")
  let named = "audit";
  try {
    // `audit --json sessions` is `audit sessions --json`, as in catalog and passkey
    const words = subcommandFirst("audit", args, AUDIT_OPTIONS);
    if (words === null) {
      process.stdout.write(`${AUDIT_HELP}\n`);
      missingSubcommand("audit", AUDIT_SUBCOMMANDS);
      return 2;
    }
    const [sub, ...rest] = words as [string, ...string[]];
    if ((AUDIT_SUBCOMMANDS as readonly string[]).includes(sub)) named = `audit ${sub}`;
    const opts = parse(sub, rest);
    if (opts.help) {
      process.stdout.write(`${AUDIT_HELP}\n`);
      return 0;
    }
    switch (sub) {
      case "verify":
        return await verify(ctx.stateDir, opts);
      case "export":
        return await withStore(
          ctx.stateDir,
          async (db) => {
            // A record whose line V8 cannot make (arguments recorded in clear under a raised
            // --max-message-bytes) made export fail halfway with an internal error, leaving the
            // lines before it, or none, as an export that verifies: refused before a line is written.
            const maxLine = exportLineLimit();
            const tooLong = firstRecordTooLongToExport(db, maxLine);
            if (tooLong) throw new UsageError(`${tooLong.message}; nothing was written. ${NOT_EXPORTABLE}`);
            const shown = stderrProgress(
              (n) => `portcullis audit export: ${n.toLocaleString("en-US")} records…`,
            );
            try {
              await writeLines(counted(exportRecords(db, maxLine), (n) => shown.update(n)));
            } catch (err) {
              if (!(err instanceof RecordTooLongToExportError)) throw err;
              // appended by a gateway while this export ran: what was written is cut short, and a
              // last line that is no record says so to whoever verifies it (verify fails there)
              await write(`portcullis audit export stopped here: ${err.message}\n`);
              throw new UsageError(
                `${err.message}; the output stops before it with a line that is not a record, and is not a complete export. ${NOT_EXPORTABLE}`,
              );
            } finally {
              shown.done();
            }
            // What an export cannot carry: the store's other tables, which `verify` holds the
            // chain against. An export of a chain cut before its pin verifies whole on its own,
            // so it is said here, where the store is, that `verify` fails on this one.
            const unaccounted = unaccountedHistory(db);
            if (unaccounted)
              process.stderr.write(
                `${safeText(`portcullis audit export: note: ${unaccounted}; ${quotedCommand("audit verify", ctx.stateDir)} fails on this store, though the export, which holds the records only, may verify on its own`)}\n`,
              );
            return 0;
          },
          { keyless: true },
        );
      case "checkpoint":
        return await withStore(
          ctx.stateDir,
          async (db) => {
            const cp = makeCheckpoint(db);
            // made only of a chain `verify` passes: one that cannot account for the rest of the
            // store (emptied, cut before its pin) fails verify, and a checkpoint of it would
            // vouch for the cut log from then on
            const unaccounted = unaccountedHistory(db);
            if (unaccounted) throw new AuditChainError(cp.seq + 1, unaccounted);
            await write(`${JSON.stringify(cp, null, 2)}\n`);
            if (cp.seq === 0 && keyringExists(ctx.stateDir))
              process.stderr.write(
                `${safeText(`portcullis audit checkpoint: note: this is a checkpoint of an empty log beside a keyring; 'portcullis init' writes record 1 (the approver key's pin) into the store it sets up, so if this state directory was in use, its store was deleted or replaced: a checkpoint taken earlier shows it (${quotedCommand("audit verify --checkpoint FILE", ctx.stateDir)})`)}\n`,
              );
            return 0;
          },
          { keyless: true },
        );
      case "sessions":
      case "activity":
      case "show":
        return await decrypting(sub, ctx.stateDir, opts);
      default:
        throw new CliUsageError(`${unknownSubcommand("audit", sub, AUDIT_SUBCOMMANDS)}.`);
    }
  } catch (err) {
    // Its sentences name files (an export, a checkpoint, the keyring in the state directory), and
    // are written here, not by the command line's reportFailure: escaped here as it escapes them.
    const said = (line: string) => process.stderr.write(`${safeText(line)}\n`);
    // the shared parser's and the shared sentences' refusals, which name the command themselves
    if (err instanceof CliUsageError) {
      said(failureLine(err.message));
      return 2;
    }
    // A wrong passphrase is a check that failed, as in every command that asks for one (README).
    if (
      err instanceof AuditChainError ||
      err instanceof AuditOpenError ||
      err instanceof ApproverKeyMismatchError ||
      err instanceof WrongPassphraseError ||
      err instanceof KeyringTamperedError
    ) {
      said(`portcullis ${named}: ${err.message}.`);
      return 1;
    }
    // a subcommand's own usage error ("verify: …") is named by it, as vault's and catalog's are
    // ("portcullis audit verify: …", not "portcullis audit: verify: …")
    if (err instanceof UsageError && SUBCOMMAND_NAMED.test(err.message)) {
      said(`${failureLine(`audit ${err.message}`)}.`);
      return 2;
    }
    if (
      err instanceof UsageError ||
      err instanceof KeyringError ||
      err instanceof PassphraseError ||
      err instanceof CheckpointFormatError
    ) {
      said(`portcullis ${named}: ${err.message}${keyringEnding(err)}`);
      return 2;
    }
    throw err;
  }
}

/** A usage error's message that starts with the subcommand it is about ("verify: …"). */
const SUBCOMMAND_NAMED = new RegExp(`^(?:${AUDIT_SUBCOMMANDS.join("|")}): `);

interface Opts {
  help: boolean;
  json: boolean;
  file?: string;
  checkpoint?: string;
  seq?: number;
}

function parse(sub: string, rest: string[]): Opts {
  const allowed: Record<string, string[]> = {
    verify: ["json", "file", "checkpoint"],
    // always lines of JSON, as checkpoint is always JSON: --json, which every other read command
    // takes, is accepted rather than refused in a script that passes it to each
    export: ["json"],
    checkpoint: ["json"],
    sessions: ["json"],
    activity: ["json"],
    show: ["json"],
  };
  // own keys only: `audit constructor` found Object's and failed with "names.includes is not a function"
  const names = Object.hasOwn(allowed, sub) ? allowed[sub] : undefined;
  if (!names) throw new CliUsageError(`${unknownSubcommand("audit", sub, AUDIT_SUBCOMMANDS)}.`);
  let parsed: ReturnType<typeof parseArgs>;
  try {
    // the shared parser: its refusals name a flag, never a value or a stray word
    parsed = parseArgs(
      `audit ${sub}`,
      rest,
      {
        help: { type: "boolean", short: "h" },
        ...(names.includes("json") ? { json: { type: "boolean" } } : {}),
        ...(names.includes("file") ? { file: { type: "string" } } : {}),
        ...(names.includes("checkpoint") ? { checkpoint: { type: "string" } } : {}),
      },
      sub === "show",
    );
  } catch (err) {
    // named `audit SUB` so that an unknown option's refusal points to 'portcullis audit SUB
    // --help', a command that exists (not 'portcullis SUB --help'); the line's own prefix is
    // "portcullis audit: ", so the sentence keeps only SUB; and its final period goes, as the
    // line's ending adds its own
    const said = (err as Error).message.replace(/^audit /, "").replace(/\.$/, "");
    throw new UsageError(said.includes("--help") ? said : `${said}; see 'portcullis audit --help'`);
  }
  const v = parsed.values as { help?: boolean; json?: boolean; file?: string; checkpoint?: string };
  const opts: Opts = { help: v.help === true, json: v.json === true, file: v.file, checkpoint: v.checkpoint };
  // `--file "$EXPORT"` with EXPORT unset verified the state directory's log and said "ok"
  if (v.file === "")
    throw new UsageError(
      `${sub}: ${emptyValue("file", "the export to verify", "to verify the state directory's log")}`,
    );
  if (v.checkpoint === "")
    throw new UsageError(
      `${sub}: ${emptyValue("checkpoint", "the checkpoint file", "to verify without one")}`,
    );
  if (sub === "show" && !opts.help) {
    const [seq, extra] = parsed.positionals;
    // a leading zero ("01") is refused as every numeric flag refuses it (args.ts)
    if (seq !== undefined && extra === undefined && /^0[0-9]/.test(seq))
      throw new UsageError(`show: ${leadingZero("SEQ", "number")}`);
    if (seq === undefined || extra !== undefined || !/^[1-9][0-9]*$/.test(seq)) {
      throw new UsageError("show: takes one record number (SEQ ≥ 1)");
    }
    // Past 2^53 a Number is no longer the integer typed (99999999999999999999 would become
    // 100000000000000000000): refused, naming the number as given. Only digits get here.
    if (!Number.isSafeInteger(Number(seq)))
      throw new UsageError(
        `show: ${seq} is larger than any record number (at most ${Number.MAX_SAFE_INTEGER})`,
      );
    opts.seq = Number(seq);
  }
  return opts;
}

async function withStore(
  stateDir: string,
  f: (db: Store) => Promise<number>,
  o: { keyless?: boolean } = {},
): Promise<number> {
  // A directory init was never run in: refused (exit 2, as one that does not exist), no store
  // created, so `audit verify` never calls it "ok: the log is empty". One this user may not
  // write (a copy given to a reviewer, a backup) is read as it is.
  requireInitialized(stateDir);
  let db: Store;
  try {
    // what only reads the log (verify, export, checkpoint) creates no store where there is none:
    // the empty log it reads is said to be beside a keyring (report, emptyBesideKeyring)
    db = o.keyless && !existsSync(join(stateDir, STORE_FILE)) ? openEmptyStore() : openStoreToRead(stateDir);
  } catch (err) {
    // a StoreError names the file and what is wrong with it already (the command line adds the
    // one thing to do about it)
    if (err instanceof StoreError) throw err;
    throw new UsageError(`cannot open the store in ${stateDir}: ${(err as Error).message}`);
  }
  try {
    return await f(db);
  } finally {
    db.close();
  }
}

async function verify(stateDir: string, opts: Opts): Promise<number> {
  const checkpoint = opts.checkpoint === undefined ? undefined : readCheckpoint(opts.checkpoint);
  const shown = stderrProgress(
    (n) => `portcullis audit verify: ${n.toLocaleString("en-US")} records verified…`,
  );
  const progress = (n: number) => shown.update(n);
  try {
    if (opts.file) {
      const file = opts.file;
      let first: string | undefined;
      const lines = (function* () {
        for (const line of readLines(file)) {
          first ??= line;
          yield line;
        }
      })();
      const r = verifyExport(lines, { checkpoint, progress });
      const not = notAnExport(file, first, r);
      return await report(not ? { ok: false, seq: 1, problem: not } : r, opts, stateDir, shown, not !== null);
    }
    return await withStore(
      stateDir,
      (db) => report(accountsForStore(db, verifyStore(db, { checkpoint, progress })), opts, stateDir, shown),
      { keyless: true },
    );
  } finally {
    shown.done();
  }
}

/**
 * What `--file` was, when it was no export at all: an empty file (a store set up by init exports
 * at least record 1, the approver key's pin: an empty one is cut, or another file), or one whose
 * first line is not an export record (a checkpoint, the JSON of another command). Said so, rather
 * than as a chain broken at seq 1 (which reads as tampering) or "ok: the log is empty".
 */
function notAnExport(file: string, first: string | undefined, r: VerifyResult): string | null {
  if (first === undefined || first === "")
    return `${file} is empty, so it is no audit export (an export of a store set up by 'portcullis init' holds at least record 1, the approver key's pin); give the file 'portcullis audit export' wrote`;
  if (!r.ok && r.seq === 1 && !first.startsWith(EXPORT_LINE_START))
    return `${file} does not read as an audit export: its first line is not an export record (the file 'portcullis audit export' writes holds one {"hash":…} record a line)`;
  return null;
}

/** How every line of an export begins (src/audit/record.ts). */
const EXPORT_LINE_START = '{"hash":"';

/**
 * A chain that verifies but cannot account for the rest of the store (emptied, or cut before its
 * pin: src/approval/chainHistory.ts) fails like a chain that lost records: at the first seq
 * missing, the one after its head.
 */
function accountsForStore(db: Store, r: VerifyResult): VerifyResult {
  if (!r.ok) return r;
  const problem = unaccountedHistory(db);
  return problem ? { ok: false, seq: r.head.seq + 1, problem } : r;
}

/** `notAnExport`: the file given was no export at all (said as such, not as a broken chain). */
async function report(
  r: VerifyResult,
  opts: Opts,
  stateDir: string,
  shown?: Progress,
  notAnExport = false,
): Promise<number> {
  shown?.done();
  // An empty log beside a keyring: init writes record 1 (the approver key's pin) into the store
  // it sets up, so this is a store deleted or replaced, or an init interrupted before its pin.
  // The chain alone cannot tell which (a checkpoint can); it is said, not passed over.
  const emptyBesideKeyring = r.ok && r.head.seq === 0 && opts.file === undefined && keyringExists(stateDir);
  if (opts.json) {
    // a file that is no export says so in a member too: a script reading only `ok` and `seq`
    // would take "seq 1" for a chain broken at its first record, which reads as tampering
    const ok = r.ok
      ? { ...r, headCovered: headCovered(r), ...(emptyBesideKeyring ? { emptyBesideKeyring } : {}) }
      : { ...r, ...(notAnExport ? { notAnExport } : {}) };
    await write(`${printableJson(ok)}\n`);
  } else if (r.ok) {
    await write(`${okLine(r, saveAdvice(stateDir, opts.file))}\n`);
    if (emptyBesideKeyring)
      await write(
        `but a keyring is here, and 'portcullis init' writes record 1 (the approver key's pin) into the store it sets up: if this state directory was in use, its store was deleted or replaced (a checkpoint taken earlier shows it: ${quotedCommand("audit verify --checkpoint FILE", stateDir)}); if its init was interrupted, the next command that takes the passphrase pins the key\n`,
      );
  } else if (notAnExport) {
    // the problem names the file given, whose path may hold a control character
    await write(`${safeText(`audit verify: ${r.problem}`)}\n`);
  } else {
    await write(`${safeText(`audit chain broken at seq ${r.seq}: ${r.problem}`)}\n`);
  }
  return r.ok ? 0 : 1;
}

type Verified = Extract<VerifyResult, { ok: true }>;

/** Whether a checkpoint vouches for the head record: nothing after it links to it. */
function headCovered(r: Verified): boolean {
  return r.checkpoint !== undefined && r.checkpoint.seq === r.head.seq;
}

/**
 * How to save a checkpoint and check against it: the commands carry the state directory when it
 * is not the default. An export (`--file`) is checked against a checkpoint of the store it was
 * exported from, taken where that store is: the state directory of this command has nothing to do
 * with it (often a reviewer's machine with none), so none is named.
 */
function saveAdvice(stateDir: string, file: string | undefined): string {
  if (file !== undefined)
    return `a checkpoint of the store this export was made from, saved where that store is with 'portcullis audit checkpoint > CHECKPOINT' and kept where its owner cannot rewrite it, is checked with 'portcullis audit verify --file ${shellWord(file)} --checkpoint CHECKPOINT'`;
  const flag = stateDirFlagFor(stateDir);
  return `save one with 'portcullis audit checkpoint${flag} > CHECKPOINT' where the state directory's owner cannot rewrite it, and check with 'portcullis audit verify${flag} --checkpoint CHECKPOINT'`;
}

/**
 * What a verified chain proves, and no more: each record is held by the hash in the record
 * after it, so a record can only be changed unseen together with everything after it; the head
 * has nothing after it, and only a checkpoint kept elsewhere vouches for it.
 */
function okLine(r: Verified, save: string): string {
  const n = r.head.seq;
  const cp = r.checkpoint;
  if (n === 0)
    return `audit chain ok: the log is empty${cp ? "; matches the checkpoint of the empty log" : ""}`;
  const held =
    n === 1
      ? "the one record is the head"
      : n === 2
        ? "record 1 is held by the record after it"
        : `records 1-${n - 1} are each held by the record after them`;
  const head = !cp
    ? `the head is covered only by a checkpoint (none given: ${save})`
    : headCovered(r)
      ? "the checkpoint covers the head"
      : `the head is covered only by a checkpoint (this one stops at seq ${cp.seq}: ${save})`;
  const matches = cp ? `; matches the checkpoint at seq ${cp.seq}` : "";
  return `audit chain ok: ${n} records, head seq ${n} hash ${r.head.hash}${matches}; ${held}, ${head}`;
}

/** A checkpoint is one small JSON; a file far larger is not one (and is not read into memory). */
const MAX_CHECKPOINT_BYTES = 64 * 1024;

function readCheckpoint(path: string): Checkpoint {
  let text: string;
  try {
    // a pipe is read (`--checkpoint <(ssh host cat checkpoint.json)`); a device is refused, so
    // /dev/zero is not read until memory runs out
    text = readSmallFile(path, MAX_CHECKPOINT_BYTES, "a checkpoint", { pipes: true });
  } catch (err) {
    if (!(err instanceof SmallFileError)) throw err;
    const p = err.problem;
    if ("code" in p) throw new UsageError(`cannot read the checkpoint ${path}: ${fileProblem(p.code)}`);
    throw new UsageError(`--checkpoint ${path}: ${err.message}`);
  }
  try {
    return parseCheckpoint(text);
  } catch (err) {
    // which file: checkpoints are kept elsewhere, often several
    if (err instanceof CheckpointFormatError) throw new CheckpointFormatError(`${path}: ${err.message}`);
    throw err;
  }
}

/** The items of `items`, telling `seen` how many have passed every 1,024. */
function* counted<T>(items: Iterable<T>, seen: (n: number) => void): Generator<T> {
  let n = 0;
  for (const item of items) {
    yield item;
    if ((++n & 1023) === 0) seen(n);
  }
}

/** The lines of an export file (see exportLines); a file that cannot be opened is a usage error. */
function* readLines(path: string): Generator<string> {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${fileProblem((err as NodeJS.ErrnoException).code)}`);
  }
  try {
    // a directory opens, then fails at the first read: one sentence, as a missing file is
    const st = fstatSync(fd);
    if (st.isDirectory()) throw new UsageError(`cannot read ${path}: ${fileProblem("EISDIR")}`);
    // a FIFO is read (--file <(...)); a device is not an export, and /dev/zero would never end
    if (st.isCharacterDevice() || st.isBlockDevice())
      throw new UsageError(`--file ${path}: it is a device, not an export (a regular file or a FIFO is)`);
    try {
      yield* exportLines(fd);
    } catch (err) {
      // an endless or huge input (`--file <(cat /dev/zero)`): no export, and no longer read
      if (err instanceof ExportLineTooLongError)
        throw new UsageError(`--file ${path}: ${err.message}, so it is not one; it was not read further`);
      const code = (err as NodeJS.ErrnoException).code;
      if (typeof code === "string" && (err as NodeJS.ErrnoException).syscall === "read")
        throw new UsageError(`cannot read ${path}: ${fileProblem(code)}`);
      throw err;
    }
  } finally {
    closeSync(fd);
  }
}

/** Verifies the chain while decrypting it, in one pass over one snapshot. */
async function decrypting(
  sub: "sessions" | "activity" | "show",
  stateDir: string,
  opts: Opts,
): Promise<number> {
  if (!keyringExists(stateDir)) throw new KeyringMissingError(stateDir);
  return withStore(stateDir, async (db) => {
    // A record past the end of the log is said before the passphrase is typed for nothing (as
    // `vault rm` says a name it does not hold): the count of records is no secret.
    if (sub === "show" && opts.seq !== undefined) {
      const { n } = db.prepare("SELECT count(*) AS n FROM audit_records").get() as { n: number };
      if (opts.seq > n) throw new UsageError(`show: there is no record ${opts.seq} (the log has ${n})`);
    }
    const passphrase = await readPassphrase("Passphrase: ");
    const unlocked = await unlockKeyring(stateDir, passphrase);
    const { auditPrivateKey, dataKey, earlierDataKeys, earlierAuditKeys } = unlocked;
    dataKey.fill(0);
    for (const k of earlierDataKeys) k.fill(0);
    // An old keyring gets its approver key here (pinned); a swapped one is refused.
    await checkApproverKey(db, stateDir, passphrase, unlocked, (line) =>
      process.stderr.write(`portcullis audit ${sub}: ${safeText(line)}\n`),
    );
    const verifier = new ChainVerifier();
    function* verified(): Generator<StoredRecord> {
      for (const r of storedRecords(db)) {
        if (!verifier.push(r)) {
          // A gap: the verifier reads what follows to tell a reordering from a loss (none yielded).
          if (verifier.wantsNext) continue;
          return;
        }
        if (sub !== "show" || verifier.records === opts.seq) yield r;
      }
    }
    // Shown redacted (src/util/redact.ts), whatever an older writer sealed in clear.
    const opened: OpenedRecord[] = [
      ...openRecords(db, [auditPrivateKey, ...earlierAuditKeys], verified()),
    ].map((r) => ({
      ...r,
      event: redactEvent(r.event),
    }));
    const result = verifier.result();
    if (!result.ok) throw new AuditChainError(result.seq, result.problem);
    // a chain that cannot account for the rest of the store (emptied, cut before its pin) is
    // broken for these views as for `audit verify`: nothing is shown from it
    const unaccounted = unaccountedHistory(db);
    if (unaccounted) throw new AuditChainError(result.head.seq + 1, unaccounted);

    if (sub === "show") {
      const rec = opened[0];
      if (!rec) throw new UsageError(`show: there is no record ${opts.seq} (the log has ${result.records})`);
      const { seq, hash, header, event } = rec;
      await write(
        opts.json
          ? `${printableJson({ seq, hash, header, event })}\n`
          : renderRecord(seq, hash, header, event),
      );
      return 0;
    }
    if (sub === "sessions") {
      // a run with no recorded end whose row says it ended is shown so, never as open (endInStoreOnly)
      const sessions = sessionsView(opened, storedRunEnds(db));
      const idle = gatewaysWithoutRunView(opened);
      // --json: the runs, then each gateway without one marked by `run: null` (docs/audit-format.md)
      const json = () => printableJson([...sessions, ...idle.map((g) => ({ run: null, ...g }))]);
      await write(opts.json ? `${json()}\n` : renderSessions(sessions, idle));
      return 0;
    }
    const activity = activityView(opened);
    await write(
      opts.json
        ? `${printableJson(activity)}\n`
        : renderTable(
            // SEQ first: the record `audit show SEQ` opens (the table is where a human finds one)
            [
              "SEQ",
              "TIME",
              "RUN",
              "CALL",
              "SERVER",
              "TOOL",
              "EPOCH",
              "REV",
              "GRANT",
              "DECISION",
              "OUTCOME",
              "CREDENTIALS",
            ],
            activity.map((a) => [
              String(a.seq),
              a.at,
              a.run ?? "-",
              a.call ?? "-",
              a.server ?? "-",
              a.tool === null ? "-" : displayName(a.tool),
              a.epoch ?? "-",
              a.revision === null ? "-" : String(a.revision),
              a.grant ?? "-",
              a.decision,
              shownOutcome(a),
              a.credentials.join(",") || "-",
            ]),
          ),
    );
    return 0;
  });
}

/**
 * One record for a terminal. The event holds what servers and the agent sent (tool names,
 * arguments, status lines): JSON escapes C0 control characters but not C1 ones or bidirectional
 * overrides, so each line also goes through safeText.
 */
function renderRecord(seq: number, hash: string, header: OpenedRecord["header"], event: unknown): string {
  const t = (v: unknown) => safeText(String(v));
  const json = JSON.stringify(event, null, 2) ?? "null";
  return (
    `seq     ${seq}\nhash    ${t(hash)}\nprev    ${t(header.prev)}\ntime    ${t(header.time)}\n` +
    `type    ${t(header.type)}\nwriter  ${t(header.writer)} (pid ${t(header.pid)})\nkey     ${t(header.key)}\n` +
    `event   ${json.split("\n").map(safeText).join("\n        ")}\n`
  );
}

/** What `audit sessions` prints; every value from a server, the agent or a label goes through safeText. */
function renderSessions(sessions: SessionView[], idle: GatewayWithoutRun[]): string {
  if (sessions.length === 0 && idle.length === 0) return "no agent runs in the audit log\n";
  const runs = sessions.map((s) => {
    const t = (v: unknown) => safeText(String(v));
    const lines = [
      `run ${t(s.run)}  server ${t(s.server ?? "-")}  ${t(s.startedAt ?? "?")} → ${shownEnd(s)}`,
      ...shownAgent(s.agent),
      `  epochs     ${s.epochs.map(t).join(", ") || "-"}`,
      `  revisions  ${shownRevisions(s.revisions)}`,
      ...(s.grants.length === 0
        ? ["  grants     -"]
        : s.grants.map(
            (g, i) =>
              `  ${i === 0 ? "grants   " : "         "}  ${t(g.grant ?? "?")} epoch ${t(g.epoch ?? "?")} mode ${t(g.mode ?? "?")}` +
              ` tools ${t(JSON.stringify(g.tools))}${g.credentialScope ? ` credentials ${t(JSON.stringify(g.credentialScope))}` : ""}`,
          )),
      `  calls      ${s.counts.calls} (${s.counts.answered} answered, ${s.counts.refused} refused, ` +
        `${s.counts.invalid} invalid, ${s.counts.cancelled} cancelled, ${s.counts.interrupted} interrupted, ` +
        `${s.counts.pending} pending)`,
      `  approvals  ${s.approvals.requested} requested, ${s.approvals.granted} granted, ` +
        `${s.approvals.denied} denied, ${s.approvals.cancelled} cancelled, ${s.approvals.expired} expired`,
      // the store says the run ended and the log does not: the log is the record (endInStoreOnly)
      ...(s.endInStoreOnly
        ? [
            `  unrecorded end: the store's row says this run ended (reason in the row: ${t(s.endInStoreOnly.reason ?? "none")}), but the audit log holds no run_ended for it: the log is the record, so that end and its reason are the store's word only (an edit of the row, or an end that could not be recorded)`,
          ]
        : []),
      // another process ended the run while its gateway still served it (SessionView.callsAfterEnd)
      ...(s.callsAfterEnd > 0
        ? [
            `  calls after its end: ${s.callsAfterEnd} (recorded by its gateway, which still served the run after another process ended it)`,
          ]
        : []),
    ];
    return `${lines.join("\n")}\n`;
  });
  return [...(runs.length === 0 ? ["no agent runs in the audit log\n"] : runs), ...idle.map(renderIdle)].join(
    "\n",
  );
}

/**
 * Who ran the run, as the approval review says who asks (the agent host, and the process that
 * launched the gateway when it is another): `--json` has the chain run_started recorded, and the
 * text had nothing of it. The record is read for its shape first: any process of the user can
 * write the store, so a chain that is not a list of processes is said to be unreadable.
 */
function shownAgent(agent: unknown): string[] {
  if (agent === null || agent === undefined) return ["  agent      (not recorded)"];
  const chain = Array.isArray(agent) && agent.every(isChainEntry) ? agent : null;
  if (chain === null || chain.length === 0)
    return ["  agent      (the recorded process chain cannot be read)"];
  const [first, ...rest] = whoAsks(chain);
  return [`  agent      ${first}`, ...rest.map((l) => `             ${l}`)];
}

function isChainEntry(e: unknown): e is ChainEntry {
  if (typeof e !== "object" || e === null) return false;
  const { pid, executable, command } = e as Record<string, unknown>;
  return (
    Number.isSafeInteger(pid) &&
    (executable === null || typeof executable === "string") &&
    (command === undefined || command === null || typeof command === "string")
  );
}

/**
 * The catalog revisions a run was served, one per revision and epoch in the order first served:
 * a client lists tools again (after list_changed, or at each turn) and was served the same
 * revision each time, which written out once per listing read as so many revisions. How many
 * times is said beside it; `--json` keeps every listing with its time.
 */
function shownRevisions(revisions: SessionView["revisions"]): string {
  const t = (v: unknown) => safeText(String(v));
  const served = new Map<string, { revision: string; epoch: string | null; times: number }>();
  for (const r of revisions) {
    const key = JSON.stringify([r.server, r.revision, r.epoch]);
    const seen = served.get(key);
    if (seen) seen.times += 1;
    else served.set(key, { revision: t(r.revision ?? "?"), epoch: r.epoch ? t(r.epoch) : null, times: 1 });
  }
  const shown = [...served.values()].map(({ revision, epoch, times }) => {
    const notes = [...(epoch ? [`epoch ${epoch}`] : []), ...(times > 1 ? [`served ${times} times`] : [])];
    return notes.length === 0 ? revision : `${revision} (${notes.join(", ")})`;
  });
  return shown.join(", ") || "-";
}

/** A run's end as the table shows it: the recorded one; else the store's, said to be no record; else open. */
function shownEnd(s: SessionView): string {
  const t = (v: unknown) => safeText(String(v));
  if (s.endedAt !== null) return `${t(s.endedAt)}${s.endReason ? ` (${t(s.endReason)})` : ""}`;
  if (s.endInStoreOnly)
    return `ended in the store only, unrecorded (the row says ${t(s.endInStoreOnly.endedAt)})`;
  return "(open)";
}

/** A gateway whose client sent no request: never a run, and never shown as open. */
function renderIdle(g: GatewayWithoutRun): string {
  const t = (v: unknown) => safeText(String(v));
  const end =
    g.endedAt !== null
      ? `${t(g.endedAt)} (${t(g.endReason ?? "shutdown")})`
      : g.lastExit !== null
        ? `? (no end recorded; its server last exited ${t(g.lastExit.at)} (${t(g.lastExit.why ?? "exit")}))`
        : "? (no exit recorded)";
  return (
    `gateway ${t(g.writer)}${g.pid === null ? "" : ` (pid ${g.pid})`}  server ${t(g.server ?? "-")}  ` +
    `${t(g.startedAt)} → ${end}  no agent run: its client sent no request\n` +
    `  epochs     ${g.epochs.map(t).join(", ") || "-"}\n`
  );
}

/**
 * The activity table. Its cells hold tool names, server labels and outcomes that a server or the
 * agent chose (a refused call's tool name is recorded as sent): each is made terminal-safe before
 * it is measured and padded, so no cell can move the cursor or erase another row.
 */
export function renderTable(head: string[], cells: string[][]): string {
  if (cells.length === 0) return "no calls in the audit log\n";
  const rows = cells.map((r) => r.map(safeText));
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    `${cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd()}\n`;
  return line(head) + rows.map(line).join("");
}

async function write(text: string): Promise<void> {
  if (!process.stdout.write(text)) await once(process.stdout, "drain");
}

/** Lines are gathered into writes of about this many characters. */
const WRITE_CHUNK = 1 << 16;

/** What to do about a record too long to export (RecordTooLongToExportError). */
const NOT_EXPORTABLE =
  "The record is kept in the store as written: back up the state directory instead ('portcullis audit verify --state-dir' checks a copy), and record arguments as digests (the default) or lower --max-message-bytes so that new records can be exported";

/**
 * The longest line `audit export` writes: MAX_EXPORT_LINE_BYTES, or for tests a lower whole number
 * from PORTCULLIS_EXPORT_MAX_LINE (a record that long cannot be made cheaply), read as every
 * PORTCULLIS_* number is: Number() took `0x10` as 16 and `010` as 10.
 */
function exportLineLimit(): number {
  return envWholeNumber("PORTCULLIS_EXPORT_MAX_LINE", 1, MAX_EXPORT_LINE_BYTES) ?? MAX_EXPORT_LINE_BYTES;
}

async function writeLines(lines: Iterable<string>): Promise<void> {
  let chunk = "";
  for (const l of lines) {
    if (l.length >= WRITE_CHUNK) {
      // written as it is: a line as long as a string can be has no room for its newline
      if (chunk) await write(chunk);
      chunk = "";
      await write(l);
      await write("\n");
      continue;
    }
    chunk += `${l}\n`;
    if (chunk.length >= WRITE_CHUNK) {
      await write(chunk);
      chunk = "";
    }
  }
  if (chunk) await write(chunk);
}
