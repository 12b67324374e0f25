import {
  accessSync,
  chmodSync,
  closeSync,
  constants,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { stateDirPath } from "../store/stateDir.js";
import { sameJson, sha256Tag } from "../util/canonical.js";
import { type Entry, entryMap, OnboardError, readServers, replaceEntries } from "./document.js";
import type { HostFile } from "./hosts.js";

/** What the gateway needs to start from a host with a bare environment (no PATH, another cwd). */
export interface Launcher {
  /** absolute path of node */
  node: string;
  /** absolute path of the built CLI (dist/cli/main.js) */
  cli: string;
  stateDir: string;
}

export interface WrapRecord {
  format: "portcullis-wrap/1";
  file: string;
  originalText: string;
  wrappedText: string;
  entries: Record<string, { label: string; original: Entry; wrapped: Entry }>;
}

export interface WrapPlan {
  host: HostFile;
  before: string;
  after: string;
  wrapped: string[];
  skipped: { key: string; why: string }[];
}

const BACKUP_SUFFIX = ".portcullis-backup";

/**
 * The entries wrap puts behind portcullis: a command and no URL. An HTTP entry is left alone
 * (the user writes in a 'run --url' entry by hand); doctor asks this same question.
 */
export function isStdio(e: Entry): boolean {
  return typeof e.command === "string" && e.url === undefined && (e.type === undefined || e.type === "stdio");
}

/** An entry that already starts portcullis, by any of the ways wrap or a human would write it. */
export function isWrapped(e: Entry): boolean {
  const args = Array.isArray(e.args) ? e.args : [];
  const cmd = typeof e.command === "string" ? basename(e.command) : "";
  if (/^portcullis(\.cmd|\.exe)?$/.test(cmd)) return true;
  return typeof args[0] === "string" && /[\\/]cli[\\/]main\.js$/.test(args[0]) && args[1] === "run";
}

/** A label from an entry's key: what the audit log and the catalog history file it under. */
export function labelFor(key: string): string {
  return key.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^-+|-+$/g, "") || "server";
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

/** Why a record's text is not a wrap record, or null when it is one. */
function recordDefect(text: string): string | null {
  let r: unknown;
  try {
    r = JSON.parse(text);
  } catch {
    return "it is not JSON";
  }
  const isObj = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isObj(r) || r.format !== "portcullis-wrap/1") return "it is not a portcullis-wrap/1 record";
  if (typeof r.file !== "string" || typeof r.originalText !== "string" || typeof r.wrappedText !== "string")
    return "its file or texts are missing";
  if (!isObj(r.entries)) return "its entries are missing";
  for (const v of Object.values(r.entries))
    if (!isObj(v) || typeof v.label !== "string" || !isObj(v.original) || !isObj(v.wrapped))
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
  const text = readFileSync(path, "utf8");
  const why = recordDefect(text);
  if (why !== null) throw damagedRecord(path, why, file);
  return JSON.parse(text) as WrapRecord;
}

export function readRecords(stateDir: string): WrapRecord[] {
  const dir = recordsDir(stateDir);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => n.endsWith(".json"))
    .map((n) => readRecord(join(dir, n)));
}

function assertWritable(file: string): void {
  const mode = statSync(file).mode;
  let writable = (mode & 0o222) !== 0;
  try {
    accessSync(file, constants.W_OK);
  } catch {
    writable = false;
  }
  if (!writable) throw new OnboardError(`${file} is read-only; nothing was written.`);
}

/** Write beside the file, fsync, rename over it: a reader sees the old bytes or the new, never half. */
export function writeAtomic(path: string, text: string, mode?: number): void {
  // A configuration kept as a symlink (dotfile managers) stays one: the file it points to is replaced.
  const file = existsSync(path) ? realpathSync(path) : path;
  const tmp = join(dirname(file), `.${basename(file)}.portcullis-${process.pid}.tmp`);
  const fd = openSync(tmp, "w", mode ?? 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  if (mode !== undefined) chmodSync(tmp, mode);
  renameSync(tmp, file);
}

function wrapEntry(e: Entry, label: string, l: Launcher): Entry {
  const args = Array.isArray(e.args) ? e.args.map(String) : [];
  return {
    ...e,
    command: l.node,
    args: [l.cli, "run", "--state-dir", l.stateDir, "--label", label, "--", String(e.command), ...args],
  };
}

/** A path as one shell word: as it is when nothing in it needs quoting, else in single quotes. */
export function shellWord(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`;
}

/**
 * The unwrap that undoes this file's wrap, as a command to paste: it names the file itself
 * (a bare 'portcullis unwrap' means claude-code, and a host name can cover several files) and the
 * state directory when it is not the one unwrap would find by itself (the record lives there).
 */
export function unwrapCommand(file: string, stateDir: string): string {
  const dir = stateDir === stateDirPath() ? "" : ` --state-dir ${shellWord(stateDir)}`;
  return `portcullis unwrap ${shellWord(file)}${dir}`;
}

/** What wrap would do to one host file; throws OnboardError (nothing written) on bad input. */
export function planWrap(
  host: HostFile,
  launcher: Launcher,
  only?: string[],
): { plan: WrapPlan; record: WrapRecord } {
  if (!existsSync(host.file)) throw new OnboardError(`${host.file} does not exist; nothing was written.`);
  const before = readFileSync(host.file, "utf8");
  const servers = readServers(host, before);
  for (const k of only ?? []) {
    // own keys only: "constructor" or "toString" are not servers of the file
    if (!Object.hasOwn(servers, k))
      throw new OnboardError(`${host.file} has no server "${k}" (--servers); nothing was written.`);
  }
  const existing = recordPath(launcher.stateDir, host.file);
  if (existsSync(existing)) {
    readRecord(existing, host.file); // a damaged one: say so, not "run unwrap" (which cannot)
    throw new OnboardError(
      `${host.file} is already wrapped (undo that first: ${unwrapCommand(host.file, launcher.stateDir)}); nothing was written.`,
    );
  }
  const chosen = Object.keys(servers).filter((k) => !only || only.includes(k));
  const skipped: WrapPlan["skipped"] = [];
  // keyed by the file's own keys, "__proto__" included: maps without a prototype
  const replacements = entryMap<Entry>();
  const entries: WrapRecord["entries"] = entryMap();
  const labels = new Map<string, string>();
  const taken = new Map<string, string>();
  for (const r of recordsFor(host, launcher.stateDir))
    for (const [k, v] of Object.entries(r.entries)) taken.set(v.label, `${r.file} (${k})`);
  for (const key of chosen) {
    const e = servers[key]!;
    if (isWrapped(e)) {
      if (only)
        throw new OnboardError(`${host.file}: server "${key}" is already wrapped; nothing was written.`);
      skipped.push({ key, why: "already wrapped" });
      continue;
    }
    if (!isStdio(e)) {
      skipped.push({ key, why: "not a stdio server (HTTP entries are left alone)" });
      continue;
    }
    const label = labelFor(key);
    const other = labels.get(label) ?? taken.get(label);
    if (other !== undefined)
      throw new OnboardError(
        `${host.file}: server "${key}" would take the label "${label}", already used by ${other}; nothing was written.`,
      );
    labels.set(label, `"${key}" in ${host.file}`);
    replacements[key] = wrapEntry(e, label, launcher);
    entries[key] = { label, original: e, wrapped: replacements[key]! };
  }
  const after = Object.keys(replacements).length > 0 ? replaceEntries(host, before, replacements) : before;
  return {
    plan: { host, before, after, wrapped: Object.keys(replacements), skipped },
    record: {
      format: "portcullis-wrap/1",
      file: host.file,
      originalText: before,
      wrappedText: after,
      entries,
    },
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

/** Wrap one host file: backup, record, atomic rewrite. */
export function wrapFile(host: HostFile, launcher: Launcher, only?: string[]): WrapPlan {
  const { plan, record } = planWrap(host, launcher, only);
  if (plan.wrapped.length === 0) return plan;
  assertWritable(host.file);
  const mode = statSync(host.file).mode & 0o777;
  writeAtomic(`${host.file}${BACKUP_SUFFIX}`, plan.before, mode);
  mkdirSync(recordsDir(launcher.stateDir), { recursive: true, mode: 0o700 });
  writeAtomic(recordPath(launcher.stateDir, host.file), `${JSON.stringify(record, null, 2)}\n`, 0o600);
  writeAtomic(host.file, plan.after, mode);
  return plan;
}

export interface UnwrapResult {
  file: string;
  /** "exact": the original bytes are back; "entries": the file was edited since, only wrap's entries were restored */
  how: "exact" | "entries";
  restored: string[];
  leftAlone: string[];
}

/** Take portcullis away from one host file, as recorded when it was wrapped. */
export function unwrapFile(host: HostFile, stateDir: string): UnwrapResult {
  const path = recordPath(stateDir, host.file);
  if (!existsSync(path))
    throw new OnboardError(
      `${host.file} was not wrapped by portcullis (no record in ${recordsDir(stateDir)}); nothing was written.`,
    );
  if (!existsSync(host.file))
    throw new OnboardError(`${host.file} does not exist any more; nothing was written.`);
  const record = readRecord(path, host.file);
  const now = readFileSync(host.file, "utf8");
  assertWritable(host.file);
  const mode = statSync(host.file).mode & 0o777;
  if (now === record.wrappedText) {
    writeAtomic(host.file, record.originalText, mode);
    unlinkSync(path);
    return { file: host.file, how: "exact", restored: Object.keys(record.entries), leftAlone: [] };
  }
  const servers = readServers(host, now);
  const back = entryMap<Entry>();
  const leftAlone: string[] = [];
  for (const [k, v] of Object.entries(record.entries)) {
    // compared as JSON: a TOML table has no prototype, the record's copy has Object's
    if (servers[k] !== undefined && sameJson(servers[k], v.wrapped)) back[k] = v.original;
    else leftAlone.push(k);
  }
  if (Object.keys(back).length > 0)
    writeAtomic(host.file, replaceEntries(host, now, back, record.originalText), mode);
  unlinkSync(path);
  return { file: host.file, how: "entries", restored: Object.keys(back), leftAlone };
}

/** The host files recorded as wrapped in this state directory. */
export function wrappedFiles(stateDir: string): string[] {
  return readRecords(stateDir).map((r) => r.file);
}
