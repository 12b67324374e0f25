import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
  unlinkSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { quotedName } from "../catalog/text.js";
import { LABEL_MAX_LENGTH } from "../config/config.js";
import { stateDirFlagFor } from "../store/stateDir.js";
import { TempNotWrittenError, writeFileAtomic } from "../util/atomicFile.js";
import { sameJson, sha256Tag } from "../util/canonical.js";
import { nearestName } from "../util/nearest.js";
import { looksGenerated, REDACTED, redactArgv, redactText } from "../util/redact.js";
import { shellWord } from "../util/shellWord.js";
import {
  type Entry,
  entryAt,
  entryMap,
  entryPathKey,
  OnboardError,
  readHostServers,
  readHostText,
  replaceEntries,
  type ServerEntry,
  tableName,
} from "./document.js";
import { otherNameFor, unknownKeysWhy } from "./entryKeys.js";
import type { HostFile } from "./hosts.js";
import { removeStaleTemps, tempPathFor } from "./hostTemps.js";
import { changedParts, runOptionsEdited } from "./unwrapRunOptions.js";
import { historyOfAnother, latestEpochServer } from "./wrapHistory.js";
import type { RecordedEntry, WrapRecord } from "./wrapRecord.js";
import { carryOverV1, WRAP_FORMAT_V1 } from "./wrapRecordV1.js";

export type { RecordedEntry, WrapRecord } from "./wrapRecord.js";

/** What the gateway needs to start from a host with a bare environment (no PATH, another cwd). */
export interface Launcher {
  /** absolute path of node */
  node: string;
  /** absolute path of the built CLI (dist/cli/main.cjs) */
  cli: string;
  stateDir: string;
}

export interface WrapPlan {
  host: HostFile;
  before: string;
  after: string;
  wrapped: string[];
  skipped: { key: string; why: string }[];
  /**
   * Entries not wrapped because they hold a key their host does not read (`"arg"` for `"args"`):
   * `why` is the sentence naming the file, the server key and the unknown key. The others are
   * wrapped all the same; wrap exits 1.
   */
  refused: { key: string; why: string }[];
  /**
   * Labels the store's history holds for another server (LabelHistoryNote): `chosen` false, the
   * entry got `label` instead of its own, `own`; true, `--label` gave it `own` all the same.
   */
  labelHistory: LabelHistoryNote[];
}

/** A label whose history in the store is another server's, and what wrap did about it. */
export interface LabelHistoryNote {
  key: string;
  /** the label the entry was given */
  label: string;
  /** the label whose history is another server's: its own (from its key), or the one --label chose */
  own: string;
  chosen: boolean;
}

export interface WrapOptions {
  /** --servers: only these keys */
  only?: string[];
  /** --label KEY=LABEL: a label of the user's choosing for a key */
  labels?: Map<string, string>;
}

const BACKUP_SUFFIX = ".portcullis-backup";

/**
 * The entries wrap puts behind portcullis: a command and no URL. An HTTP entry is left alone
 * (the user writes in a 'run --url' entry by hand), and so is one the host cannot start either
 * (no command, or not a string); doctor asks this same question.
 */
export function isStdio(e: Entry): boolean {
  return notStdio(e) === null;
}

/** An entry that already starts portcullis, by any of the ways wrap or a human would write it. */
export function isWrapped(e: Entry): boolean {
  const args = Array.isArray(e.args) ? e.args : [];
  const cmd = typeof e.command === "string" ? basename(e.command) : "";
  if (/^portcullis(\.cmd|\.exe)?$/.test(cmd)) return true;
  return typeof args[0] === "string" && /[\\/]cli[\\/]main\.c?js$/.test(args[0]) && args[1] === "run";
}

/**
 * A label from an entry's key: what the audit log and the catalog history file it under. Always
 * one `run --label` takes (LABEL_PATTERN): a key that starts with '.' or '_' (`_private`), or one
 * longer than a label may be, gave a label the gateway refused at every start, written into the
 * host's file by wrap and offered by doctor.
 */
export function labelFor(key: string): string {
  const plain = key.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^[._-]+/, "");
  return plain.slice(0, LABEL_MAX_LENGTH).replace(/-+$/, "") || "server";
}

export function recordsDir(stateDir: string): string {
  return join(stateDir, "wrapped");
}

function recordPath(stateDir: string, file: string): string {
  return join(
    recordsDir(stateDir),
    `${sha256Tag(file)
      .replace(/^sha256:/, "")
      .slice(0, 24)}.json`,
  );
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Why a record's value is not a wrap record, or null when it is one. */
function recordDefect(r: unknown): string | null {
  if (!isObj(r) || r.format !== "portcullis-wrap/2") return "it is not a portcullis-wrap/2 record";
  if (
    typeof r.file !== "string" ||
    typeof r.originalText !== "string" ||
    (typeof r.wrappedText !== "string" && r.wrappedText !== null)
  )
    return "its file or texts are missing";
  if (!isObj(r.entries)) return "its entries are missing";
  for (const v of Object.values(r.entries))
    if (
      !isObj(v) ||
      typeof v.label !== "string" ||
      !isObj(v.original) ||
      !isObj(v.wrapped) ||
      !Array.isArray(v.path) ||
      v.path.length < 2 ||
      !v.path.every((p) => typeof p === "string")
    )
      return "an entry is incomplete";
  return null;
}

/**
 * A record that cannot be read blocks wrap and unwrap of its file (wrap would wrap twice, unwrap
 * cannot tell what wrap changed), so the refusal says how to get out by hand: the wrapped entries
 * name the original command after '--', the file before wrap is kept beside it as the backup, and
 * once the file is restored the record is only in the way.
 */
function damagedRecord(path: string, why: string, file?: string): OnboardError {
  const backup = file === undefined ? undefined : `${file}${BACKUP_SUFFIX}`;
  const restore =
    backup === undefined
      ? `restore the host file it belongs to by hand (each wrapped entry names its original command after '--'; the file before wrap is kept beside it as FILE${BACKUP_SUFFIX})`
      : existsSync(backup)
        ? `restore ${file} by hand (${backup} holds it as it was before wrap; edits made since are only in ${file})`
        : `restore ${file} by hand (each wrapped entry names its original command after '--')`;
  return new OnboardError(
    `the wrap record ${path} is damaged (${why}), so what wrap changed cannot be read from it; ${restore}, then delete ${path}; nothing was written.`,
  );
}

/** One record file, checked; a damaged one throws OnboardError saying how to recover. */
function readRecord(path: string, file?: string): WrapRecord {
  let r: unknown;
  try {
    r = JSON.parse(readFileSync(path, "utf8"));
  } catch {
    throw damagedRecord(path, "it is not JSON", file);
  }
  // written by an earlier portcullis: carried over here, written in this format by the next write
  if (isObj(r) && r.format === WRAP_FORMAT_V1) {
    const carried = carryOverV1(r);
    if (typeof carried === "string") throw damagedRecord(path, carried, file);
    return carried;
  }
  const why = recordDefect(r);
  if (why !== null) throw damagedRecord(path, why, file);
  return r as WrapRecord;
}

export function readRecords(stateDir: string): WrapRecord[] {
  const dir = recordsDir(stateDir);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => n.endsWith(".json"))
    .map((n) => readRecord(join(dir, n)));
}

export function assertWritable(file: string): void {
  const mode = statSync(file).mode;
  let writable = (mode & 0o222) !== 0;
  try {
    accessSync(file, constants.W_OK);
  } catch {
    writable = false;
  }
  if (!writable) throw new OnboardError(`${file} is read-only; nothing was written.`);
}

/**
 * Write beside the file, fsync, rename over it (src/util/atomicFile.ts): a reader sees the old
 * bytes or the new, never half. The temporary file is named by this process (hostTemps.ts), so a
 * killed wrap's is found and removed later.
 */
export function writeAtomic(path: string, text: string, mode?: number): void {
  // A configuration kept as a symlink (dotfile managers) stays one: the file it points to is replaced.
  const file = existsSync(path) ? realpathSync(path) : path;
  removeStaleTemps(file, dirname(file));
  try {
    // every byte, or nothing renamed: a cut host file, backup or record was renamed into place,
    // and wrap said it had wrapped
    writeFileAtomic(file, text, { mode: mode ?? 0o600, tempPath: (f) => tempPathFor(f, dirname(f)) });
  } catch (err) {
    if (err instanceof TempNotWrittenError)
      throw new OnboardError(`cannot write ${path}: ${err.reason}; it was not replaced`);
    throw err;
  }
}

function wrapEntry(e: Entry, label: string, l: Launcher): Entry {
  const args = Array.isArray(e.args) ? (e.args as string[]) : [];
  return {
    ...e,
    command: l.node,
    args: [l.cli, "run", "--state-dir", l.stateDir, "--label", label, "--", String(e.command), ...args],
  };
}

/** The two values wrap writes and unwrap restores: an entry's command and args. */
function launchOf(e: Entry): Entry {
  return { command: e.command, args: e.args };
}

/**
 * What starts a server, for deciding whether two entries are one server: the same command, args,
 * cwd and env run the same process, wherever the entry is written.
 */
function sameServer(a: Entry, b: Entry): boolean {
  const run = (e: Entry) => ({
    command: e.command,
    args: e.args ?? [],
    cwd: e.cwd ?? null,
    env: e.env ?? {},
  });
  return sameJson(run(a), run(b));
}

/** How notStdio's reason for an HTTP entry begins: wrap's next step for those is doctor's entry to write. */
const HTTP_ENTRY = "an HTTP entry";

/** Whether wrap left an entry alone for being an HTTP entry (a `why` of notStdio). */
export function leftAsHttp(why: string): boolean {
  return why.startsWith(`${HTTP_ENTRY} (`);
}

/** Why wrap leaves an entry alone, or null when it is a stdio server wrap can put behind portcullis. */
export function notStdio(e: Entry): string | null {
  if (e.url !== undefined || (e.type !== undefined && e.type !== "stdio"))
    return `${HTTP_ENTRY} (${e.url !== undefined ? "url" : `type ${JSON.stringify(e.type)}`}), which wrap leaves alone`;
  if (e.command === undefined) {
    const typo = mistypedLaunchKey(e);
    if (typo === null) return 'it has no "command" and no "url": the host cannot start it either';
    const other = typo.meant === "command" ? "url" : "command";
    return `it has ${quotedName(typo.key)}, not "${typo.meant}", and no "${other}": the host cannot start it either`;
  }
  if (typeof e.command !== "string")
    return `its "command" is ${kindOf(e.command)}, not a string: the host cannot start it either`;
  return null;
}

/** The keys of a server entry that are not a mistyped "command" or "url", whatever their spelling is near. */
const ENTRY_KEYS = new Set(["command", "args", "env", "cwd", "url", "type", "headers", "envFile", "timeout"]);

/**
 * A key of an entry without "command" and "url" that is one of them mistyped ("comand", "Command",
 * "uri"): the host reads neither, so the entry cannot start, and naming the key says what to
 * rename. A key two edits from "command" or "url" is that name, never a value, so it is shown.
 */
export function mistypedLaunchKey(e: Entry): { key: string; meant: "command" | "url" } | null {
  for (const key of Object.keys(e)) {
    if (ENTRY_KEYS.has(key)) continue;
    const meant = otherNameFor(key) ?? nearestName(key, ["command", "url"]);
    if (meant === "command" || meant === "url") return { key, meant };
  }
  return null;
}

/**
 * What a value is, never what it holds: a "command" written as a list (`["npx", "server",
 * "--api-key", "…"]`) is a command line, a credential among its words, and this is printed.
 */
function kindOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "an object";
  return typeof v === "number" ? "a number" : typeof v === "boolean" ? "true or false" : `a ${typeof v}`;
}

/**
 * args that are not a list of strings: wrap would have to drop or change them, and the server
 * would start with other arguments than the host gives it now.
 */
function badArgs(host: HostFile, key: string, e: Entry): OnboardError | null {
  if (e.args === undefined || (Array.isArray(e.args) && e.args.every((a) => typeof a === "string")))
    return null;
  const what = Array.isArray(e.args) ? "a list with values that are not strings" : `a ${typeof e.args}`;
  return new OnboardError(
    `${host.file}: server "${key}" has "args" that are ${what}, not a list of strings; write them as a list of strings (e.g. "args": ["x.js"]), then run wrap again; nothing was written.`,
  );
}

/**
 * Two different servers would be filed under one label (the audit log and the catalog history
 * could not tell them apart): refused, with a free label to give one of them. `label` is the one
 * `key` would take, `holder` the server that has it (`FILE (KEY)`, or `"KEY" in FILE`).
 */
export class LabelClash extends OnboardError {
  constructor(
    readonly key: string,
    readonly suggestion: string,
    readonly label: string,
    readonly holder: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A label to suggest for --label: `LABEL-2`, `LABEL-3`… (LABEL cut so that it stays a label run
 * takes, at most LABEL_MAX_LENGTH characters), the first that `used` says no record and no entry
 * of the plan has or would take. Taking only the records' and the earlier entries' labels into
 * account, it offered `inventory-2` beside a bare server named `inventory-2`, which the next
 * refusal then had to rename in turn; and a 63-character label got a 65-character one, which the
 * gateway refuses.
 */
function freeLabel(label: string, used: (l: string) => boolean): string {
  for (let i = 2; ; i++) {
    const suffix = `-${i}`;
    const candidate = `${label.slice(0, LABEL_MAX_LENGTH - suffix.length)}${suffix}`;
    if (!used(candidate)) return candidate;
  }
}

export { shellWord } from "../util/shellWord.js";

/**
 * The unwrap that undoes this file's wrap, as a command to paste: it names the file itself
 * (a bare 'portcullis unwrap' means claude-code, and a host name can cover several files) and the
 * state directory, where the record lives, unless it is the default one (stateDirFlagFor): one
 * taken from $PORTCULLIS_HOME is named too, since the shell it is pasted into may not have the
 * variable, and an unwrap there would find no record of the file.
 */
export function unwrapCommand(file: string, stateDir: string): string {
  return `portcullis unwrap ${shellWord(file)}${stateDirFlagFor(stateDir)}`;
}

/** Whether wrap has a record of this host file. */
export function recordExists(host: HostFile, stateDir: string): boolean {
  return existsSync(recordPath(stateDir, host.file));
}

/** The record of one host file, or null when it has none; a damaged one throws OnboardError. */
function recordOf(host: HostFile, stateDir: string): WrapRecord | null {
  const path = recordPath(stateDir, host.file);
  return existsSync(path) ? readRecord(path, host.file) : null;
}

/**
 * The keys named with --servers that none of a host's files has: a name must be in at least one
 * of them (Claude Code's `.mcp.json` and `~/.claude.json` each hold some of a project's servers).
 */
export function checkServersNamed(files: HostFile[], only: string[] | undefined, flag = "--servers"): void {
  if (!only || only.length === 0) return;
  const found = new Set<string>();
  for (const f of files) {
    if (!existsSync(f.file)) continue;
    const read = readHostServers(f, readHostText(f.file));
    for (const s of read.servers) found.add(s.key);
    for (const s of read.notEntries) found.add(s.key);
  }
  for (const k of only)
    if (!found.has(k)) {
      const names = files.map((f) => f.file);
      const where =
        names.length === 1 ? `${names[0]} has no server` : `none of ${names.join(", ")} has a server`;
      const shown = serverKeyAsGiven(k);
      // the names to give instead: the one meant when a key is two edits from it, else the keys
      // there (a host file's keys are shown anyway, by wrap's own lines and by doctor)
      const near = shown === null ? null : nearestName(k, found);
      const keys = [...found];
      const there =
        near !== null
          ? `; did you mean ${quotedName(near)}?`
          : keys.length === 0
            ? ""
            : `; the servers there: ${keys.slice(0, 12).map(quotedName).join(", ")}${keys.length > 12 ? ` and ${keys.length - 12} more ('portcullis doctor' lists them)` : ""}`;
      throw new OnboardError(
        shown === null
          ? `${where} by the name given to ${flag} (${NOT_SHOWN_KEY}${there}); nothing was written.`
          : `${where} ${shown} (${flag}${there}); nothing was written.`,
      );
    }
}

/** Why a server key given on the command line is not repeated (serverKeyAsGiven). */
export const NOT_SHOWN_KEY = "not shown: it reads as a secret typed in the wrong place";

/**
 * A server key named on wrap's command line (`--servers`, `--label KEY=…`), as a refusal repeats
 * it: quoted, escaped and bounded (a name typed there can be of any length), or null when it
 * reads as a secret (a token's shape, a generated-looking value), which a refusal must not put
 * into scrollback, CI logs and transcripts. Other commands do not repeat a name that names
 * nothing; wrap does for a name that reads as one, since a host file's keys are shown anyway.
 */
export function serverKeyAsGiven(key: string): string | null {
  return redactText(key) === key && !looksGenerated(key) ? quotedName(key) : null;
}

/** What wrap would do to one host file; throws OnboardError (nothing written) on bad input. */
export function planWrap(
  host: HostFile,
  launcher: Launcher,
  options: WrapOptions = {},
): { plan: WrapPlan; record: WrapRecord | null } {
  const { only, labels: chosenLabels } = options;
  if (!existsSync(host.file)) throw new OnboardError(`${host.file} does not exist; nothing was written.`);
  const before = readHostText(host.file);
  const read = readHostServers(host, before);
  const existing = recordOf(host, launcher.stateDir);
  const named = (key: string) => !only || only.includes(key);
  const skipped: WrapPlan["skipped"] = [];
  for (const n of read.notEntries)
    if (named(n.key))
      skipped.push({
        key: n.key,
        why: `not a server entry: ${tableName(n.table)} → "${n.key}" is ${n.what}`,
      });
  for (const s of read.shadowed)
    if (named(s.key))
      skipped.push({
        key: s.key,
        why: `the entry in ${tableName(s.table)} is not run here: the one of the same name in ${tableName(s.by)} shadows it`,
      });
  // labels already given: by any record (this file's other entries, other files), then by this plan
  const taken = new Map<string, { where: string; entry: Entry; path: string }>();
  for (const r of recordsFor(host, launcher.stateDir))
    for (const [k, v] of Object.entries(r.entries))
      taken.set(v.label, {
        where: `${r.file} (${v.path.at(-1)})`,
        entry: v.original,
        path: `${r.file}\0${k}`,
      });
  // the labels this plan's entries would take (a suggestion must not be one of them either)
  const planned = new Set(
    read.servers
      .filter((s) => named(s.key) && !isWrapped(s.entry) && notStdio(s.entry) === null)
      .map((s) => chosenLabels?.get(s.key) ?? labelFor(s.key)),
  );
  const replacements: ServerEntry[] = [];
  const entries: WrapRecord["entries"] = entryMap();
  const labelHistory: LabelHistoryNote[] = [];
  const refused: WrapPlan["refused"] = [];
  // a label the store's history holds for a server other than `e` (its latest epoch's command)
  const anothersHistory = (label: string, e: Entry): boolean => {
    const h = latestEpochServer(launcher.stateDir, label);
    return h !== null && historyOfAnother(h, e, process.cwd());
  };
  for (const s of read.servers.filter((s) => named(s.key))) {
    const { key, entry: e } = s;
    const pathKey = entryPathKey(s.table, key);
    if (isWrapped(e)) {
      const undo = existing?.entries[pathKey]
        ? `; undo with ${unwrapCommand(host.file, launcher.stateDir)}`
        : "";
      // named by --servers: what to do instead, as the line of a wrap without it says
      if (only)
        throw new OnboardError(
          `${host.file}: server "${key}" is already wrapped (leave it out of --servers${undo}); nothing was written.`,
        );
      skipped.push({ key, why: `already wrapped${undo}` });
      continue;
    }
    const why = notStdio(e);
    // a key the host does not read ("arg" for "args"; "header" for "headers" in an HTTP entry) or
    // a "type" it does not know ("htpp"): that entry is refused, the others wrapped. An HTTP entry
    // too, though wrap leaves it alone: its line would send the user to guard by hand an entry
    // the host does not read as written. (An entry the host cannot start is said as such.)
    const kind = why === null ? "stdio" : leftAsHttp(why) ? "http" : null;
    const unknown = kind === null ? null : unknownKeysWhy(host, key, e, kind);
    if (unknown !== null) {
      refused.push({ key, why: unknown });
      continue;
    }
    if (why !== null) {
      skipped.push({ key, why });
      continue;
    }
    const bad = badArgs(host, key, e);
    if (bad) throw bad;
    const label = chosenLabels?.get(key) ?? labelFor(key);
    const other = taken.get(label);
    // a record of this very entry (the host put a bare command back since) is replaced, not a clash
    if (other !== undefined && other.path !== `${host.file}\0${pathKey}` && !sameServer(other.entry, e)) {
      const suggestion = freeLabel(label, (l) => taken.has(l) || planned.has(l) || anothersHistory(l, e));
      throw new LabelClash(
        key,
        suggestion,
        label,
        other.where,
        `${host.file}: server "${key}" would take the label "${label}", already used by ${other.where} for another server (its command, args, cwd or env differ); give this one its own label with --label ${shellWord(`${key}=${suggestion}`)}; nothing was written.`,
      );
    }
    // No live wrap holds the label, but the store's history may: an unwrapped server's epochs,
    // catalog revisions and approvals stay filed under it. Another server's history is not
    // handed on without a word: the label from the key moves on to the next free one; one the
    // user chose with --label is kept, and said.
    let given = label;
    let history: RecordedEntry["labelHistory"];
    if ((other === undefined || other.path === `${host.file}\0${pathKey}`) && anothersHistory(label, e)) {
      const chosen = chosenLabels?.has(key) === true;
      if (!chosen) given = freeLabel(label, (l) => taken.has(l) || planned.has(l) || anothersHistory(l, e));
      labelHistory.push({ key, label: given, own: label, chosen });
      history = { own: label, chosen };
    }
    taken.set(given, { where: `"${key}" in ${host.file}`, entry: e, path: `${host.file}\0${pathKey}` });
    const wrapped = wrapEntry(e, given, launcher);
    replacements.push({ table: s.table, key, entry: wrapped });
    entries[pathKey] = {
      path: [...s.table, key],
      label: given,
      original: e,
      wrapped,
      // kept for doctor, which says it as long as the entry is wrapped
      ...(history !== undefined ? { labelHistory: history } : {}),
    };
  }
  const after = replacements.length > 0 ? replaceEntries(host, before, replacements) : before;
  // A file wrapped before keeps the text before its first wrap; the pair of texts still undoes
  // everything at once only when nothing changed the file between the two wraps.
  const record: WrapRecord | null =
    replacements.length === 0
      ? null
      : existing
        ? {
            ...existing,
            wrappedText: existing.wrappedText === before ? after : null,
            entries: Object.assign(entryMap<RecordedEntry>(), existing.entries, entries),
          }
        : { format: "portcullis-wrap/2", file: host.file, originalText: before, wrappedText: after, entries };
  return {
    plan: { host, before, after, wrapped: replacements.map((r) => r.key), skipped, refused, labelHistory },
    record,
  };
}

/** Every record, read to keep labels apart; a damaged one is refused naming the file being wrapped. */
function recordsFor(host: HostFile, stateDir: string): WrapRecord[] {
  try {
    return readRecords(stateDir);
  } catch (e) {
    if (e instanceof OnboardError) throw new OnboardError(`cannot wrap ${host.file}: ${e.message}`);
    throw e;
  }
}

/**
 * Wrap one host file: backup (of the file before its first wrap only: a second wrap of the same
 * file, from another project or for servers left out before, keeps it), record, atomic rewrite.
 */
export function wrapFile(host: HostFile, launcher: Launcher, options: WrapOptions = {}): WrapPlan {
  const { plan, record } = planWrap(host, launcher, options);
  if (record === null) return plan;
  assertWritable(host.file);
  const mode = statSync(host.file).mode & 0o777;
  const path = recordPath(launcher.stateDir, host.file);
  if (!existsSync(path)) writeAtomic(`${host.file}${BACKUP_SUFFIX}`, plan.before, mode);
  mkdirSync(recordsDir(launcher.stateDir), { recursive: true, mode: 0o700 });
  writeAtomic(path, `${JSON.stringify(record, null, 2)}\n`, 0o600);
  writeAtomic(host.file, plan.after, mode);
  return plan;
}

/** An entry unwrap could not restore, and what the user does about it. */
export interface Stuck {
  key: string;
  /** one sentence: what changed and what to do */
  todo: string;
}

export interface UnwrapResult {
  file: string;
  /** "exact": the original bytes are back; "entries": the file was edited since, only wrap's values were restored */
  how: "exact" | "entries";
  restored: string[];
  /** restored entries whose `run` options were added or changed since wrap: those options went with the wrap */
  runOptionsDropped: { key: string; options: string[] }[];
  /**
   * restored entries whose node or portcullis CLI path is not the one wrap wrote (portcullis
   * reinstalled elsewhere, node upgraded): `WAS → NOW` of each part that moved
   */
  launcherMoved: { key: string; moved: string[] }[];
  /** entries whose record was dropped with nothing to restore: gone from the file, or no longer running portcullis */
  dropped: { key: string; why: string }[];
  /** entries still wrapped but changed since: their record is kept */
  stuck: Stuck[];
  /** entries of the record outside this unwrap's reach (another project's, in ~/.claude.json) */
  elsewhere: string[];
}

/** Whether a recorded entry lies in one of the host's tables (from this project), or everywhere when `all`. */
function inReach(host: HostFile, e: RecordedEntry, all: boolean): boolean {
  if (all) return true;
  const table = e.path.slice(0, -1);
  return host.tables.some((t) => sameJson(t, table));
}

/**
 * Take portcullis away from one host file, as recorded when it was wrapped: every recorded entry
 * in the host's tables, or in the whole file when `all` (a FILE given by path).
 *
 * The original bytes come back when the file is exactly as wrap left it and every entry is
 * undone. Otherwise each entry on its own: when its command and args are still what wrap wrote,
 * those two are restored and whatever else the host changed in the entry (env, a comment) stays.
 * So are they when only `run`'s options before the '--' were edited (`--on-change restart`, as
 * the gateway's status line advises) and the server after it is exactly the recorded one: those
 * options go with the wrap, and are named. An entry still wrapped but with other command or args
 * keeps its record and is reported with what to do; one that is gone or no longer runs portcullis
 * has nothing to restore.
 */
export function unwrapFile(host: HostFile, stateDir: string, all = false): UnwrapResult {
  const path = recordPath(stateDir, host.file);
  if (!existsSync(path))
    throw new OnboardError(
      `${host.file} was not wrapped by portcullis (no record in ${recordsDir(stateDir)}); nothing was written.`,
    );
  if (!existsSync(host.file))
    throw new OnboardError(`${host.file} does not exist any more; nothing was written.`);
  const record = readRecord(path, host.file);
  const now = readHostText(host.file);
  assertWritable(host.file);
  const mode = statSync(host.file).mode & 0o777;
  const reach = Object.entries(record.entries).filter(([, e]) => inReach(host, e, all));
  const elsewhere = Object.values(record.entries)
    .filter((e) => !inReach(host, e, all))
    .map((e) => `${e.path.at(-1)} (${tableName(e.path.slice(0, -1))})`);
  const result: UnwrapResult = {
    file: host.file,
    how: "entries",
    restored: [],
    runOptionsDropped: [],
    launcherMoved: [],
    dropped: [],
    stuck: [],
    elsewhere,
  };
  if (reach.length === Object.keys(record.entries).length && now === record.wrappedText) {
    writeAtomic(host.file, record.originalText, mode);
    unlinkSync(path);
    return { ...result, how: "exact", restored: reach.map(([, e]) => e.path.at(-1)!) };
  }
  const back: ServerEntry[] = [];
  const keep = entryMap<RecordedEntry>();
  for (const [k, e] of Object.entries(record.entries)) if (!inReach(host, e, all)) keep[k] = e;
  for (const [k, e] of reach) {
    const key = e.path.at(-1)!;
    const table = e.path.slice(0, -1);
    const current = entryAt(host, now, table, key);
    // compared as JSON: a TOML table has no prototype, the record's copy has Object's
    const asWrapped = current !== undefined && sameJson(launchOf(current), launchOf(e.wrapped));
    // run's options edited before the '--', the recorded server after it
    const edited = current === undefined || asWrapped ? null : runOptionsEdited(current, e);
    if (current === undefined) result.dropped.push({ key, why: "no longer in the file" });
    else if (asWrapped || edited !== null) {
      const restored: Entry = { ...current, command: e.original.command, args: e.original.args };
      if (e.original.args === undefined) delete restored.args;
      back.push({ table, key, entry: restored });
      result.restored.push(key);
      if (edited !== null && edited.options.length > 0)
        result.runOptionsDropped.push({ key, options: edited.options });
      if (edited !== null && edited.launcher.length > 0)
        result.launcherMoved.push({ key, moved: edited.launcher });
    } else if (!isWrapped(current)) result.dropped.push({ key, why: "it no longer runs portcullis" });
    else {
      keep[k] = e;
      // The args to put back, as the dry run's diff shows them: a credential after its flag
      // (`--api-key VALUE`) or a generated-looking word is not printed (stderr reaches terminals'
      // scrollback and agents' transcripts); the backup and the record hold it, and are named.
      // (wrap takes only args that are a list of strings)
      const words = Array.isArray(e.original.args) ? e.original.args.map((w) => String(w)) : undefined;
      const shown = words === undefined ? undefined : redactArgv(words);
      const hidden = shown?.some((w, i) => w !== words![i]) === true;
      const args =
        e.original.args === undefined
          ? 'remove its "args"'
          : `set its "args" to ${JSON.stringify(shown ?? e.original.args)}`;
      const where = hidden
        ? `; each ${JSON.stringify(REDACTED)} stands for a word that reads as a credential, not printed here: copy it from ${host.file}${BACKUP_SUFFIX}, the file before its first wrap, or from the wrap record ${path}`
        : "";
      result.stuck.push({
        key,
        todo: `"${key}" (${tableName(table)}) still runs portcullis but ${changedParts(current, e).join(" and ")} changed since wrap, so unwrap cannot tell what to give back and kept its record: set its "command" to ${JSON.stringify(e.original.command)} and ${args} by hand (adding any argument you meant the server to get${where}), then run ${unwrapCommand(host.file, stateDir)} again to clear the record`,
      });
    }
  }
  if (back.length > 0) writeAtomic(host.file, replaceEntries(host, now, back, record.originalText), mode);
  if (Object.keys(keep).length === 0) unlinkSync(path);
  else
    writeAtomic(path, `${JSON.stringify({ ...record, wrappedText: null, entries: keep }, null, 2)}\n`, 0o600);
  return result;
}

/** The host files recorded as wrapped in this state directory. */
export function wrappedFiles(stateDir: string): string[] {
  return readRecords(stateDir).map((r) => r.file);
}
