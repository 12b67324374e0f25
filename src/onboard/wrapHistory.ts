// What the store remembers of a label: the server its latest epoch launched. A label that leaves
// no wrap record behind (unwrapped) still files its catalog revisions, epochs, approvals and egress
// history in the store, so wrap must not hand it to another server without a word: the review's
// "since the last approval" would compare two servers' catalogs as one's.
import { existsSync, realpathSync } from "node:fs";
import { join, resolve } from "node:path";
import Database from "better-sqlite3";
import { STORE_FILE } from "../store/stateDir.js";
import { sameJson } from "../util/canonical.js";
import { redactArgv } from "../util/redact.js";
import type { Entry } from "./document.js";

/** The server a label's latest epoch launched, as its execution record says. */
export interface LabelHistory {
  launchCommand: string[];
  workingDirectory: string;
}

/**
 * The server `label`'s latest epoch launched in `stateDir`'s store, or null when the store holds
 * none. The store is opened to read only: no migration and no pragma (wrap, a dry run too, writes
 * nothing to it, and makes none). Not SQLite's read-only mode: a read-only connection to a store
 * no gateway has open makes its -wal and -shm files and cannot remove them as it closes, where the
 * last connection to close removes them. A store that cannot be read is taken for one without
 * history, as before this check: the wrap records still keep two live servers apart.
 */
export function latestEpochServer(stateDir: string, label: string): LabelHistory | null {
  const path = join(stateDir, STORE_FILE);
  if (!existsSync(path)) return null;
  let db: Database.Database | null = null;
  try {
    db = new Database(path, { fileMustExist: true });
    const row = db
      .prepare(
        "SELECT record_json FROM epochs WHERE server_label = ? ORDER BY started_at DESC, rowid DESC LIMIT 1",
      )
      .get(label) as { record_json: string } | undefined;
    if (row === undefined) return null;
    const r = JSON.parse(row.record_json) as { launchCommand?: unknown; workingDirectory?: unknown };
    return {
      launchCommand: Array.isArray(r.launchCommand) ? r.launchCommand.map(String) : [],
      workingDirectory: typeof r.workingDirectory === "string" ? r.workingDirectory : "",
    };
  } catch {
    return null;
  } finally {
    db?.close();
  }
}

/** A directory as the gateway's process.cwd() gives it: its real path when it exists. */
function realDir(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return resolve(dir);
  }
}

/**
 * Whether the server a label's history holds is another one than `entry` starts: another
 * command or args (the gateway records them as the entry gives them, after '--', redacted), or another
 * working directory when the entry names one (`cwd`, resolved from `cwd` as doctor takes the
 * host's folder). An entry without a `cwd` runs wherever the host starts it, which differs from
 * project to project for the same server: not compared (as wrap's own records compare it).
 * Nor is the entry's `env`: the record holds only a digest of the server's whole environment,
 * the host's variables included, which differs from launch to launch for the same server, and the
 * entry's values (credentials, often) are kept in no store; the review names an environment
 * change among what changed since the last approval.
 */
export function historyOfAnother(history: LabelHistory, entry: Entry, cwd: string): boolean {
  const args = Array.isArray(entry.args) ? entry.args : [];
  const launch = [entry.command, ...args];
  // The gateway files its launch command as it may be shown: redacted (`--api-key [redacted]`;
  // src/util/redact/records.ts), never a secret's value. Compared with the entry's own words, the
  // same server with a secret in its args read as another. Compared as filed, two entries that
  // differ only in such a value (the same program, another account's key) are one server here.
  if (
    !sameJson(history.launchCommand, launch) &&
    !sameJson(history.launchCommand, redactArgv(launch.map(String)))
  )
    return true;
  if (typeof entry.cwd !== "string") return false;
  return realDir(resolve(cwd, entry.cwd)) !== history.workingDirectory;
}
