import type { KeyObject } from "node:crypto";
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { userInfo } from "node:os";
import { AuditLog, openRecords } from "../audit/log.js";
import { KeyringError } from "../keyring/keyringErrors.js";
import { keyringPath } from "../keyring/keyringRead.js";
import { keyringWrapping } from "../keyring/passphraseChange.js";
import { underRewriteLock } from "../keyring/rewriteLock.js";
import type { Store } from "../store/db.js";
import { fileProblem } from "../util/errno.js";

/**
 * A passphrase change that no `passphrase_changed` record covers. `portcullis passphrase` renames
 * its new keyring.json into place before it can record the change (a record of a change not made
 * would be false): killed between the two, or finding the store unwritable then, it left a change
 * the chain did not show. So, under the keyring's rewrite lock and before its rename, it writes a
 * mark beside keyring.json naming the new wrapping (its fingerprint, src/keyring/passphraseChange.ts
 * wrappingFingerprint), and removes it once the record is written. The next command that opens
 * the keyring with the passphrase and the store (recordLateChange: approve, deny, the audit's
 * reading commands, passphrase, unlock, vault set and rm, the console's login) finds a mark left
 * behind and, when the
 * keyring's wrapping is the one it names and no `passphrase_changed` after the mark's head names
 * it, writes the record late (`late: true`, who noticed it, who changed it). docs/audit-format.md.
 */
export const CHANGE_MARK_SUFFIX = ".change-unrecorded";

/** What the mark says of the change (nothing secret: a fingerprint, a seq, who, when). */
export interface ChangeMark {
  /** the new wrapping's fingerprint */
  wrapping: string;
  /** the chain's head when the change was made: its record, if any, is after it */
  headSeq: number;
  /** who changes it (the record's `by`) */
  by: string;
  /** when (ISO) */
  at: string;
}

export function markPath(stateDir: string): string {
  return `${keyringPath(stateDir)}${CHANGE_MARK_SUFFIX}`;
}

/**
 * Writes the mark (0600, fsynced: a rename that reached the disk has its mark there too, the
 * directory's fsync after the rename covering both). A mark that cannot be written stops the
 * change before its rename: nothing is changed (the command says so).
 */
export function markChangeUnrecorded(stateDir: string, mark: ChangeMark): void {
  const path = markPath(stateDir);
  try {
    const fd = openSync(path, "w", 0o600);
    try {
      writeSync(fd, JSON.stringify(mark));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    rmSync(path, { force: true });
    throw new KeyringError(
      `cannot write ${path} (the mark of a change not yet recorded): ${fileProblem((e as NodeJS.ErrnoException).code)}`,
    );
  }
}

/**
 * Removes the mark: the change is recorded (or was never made). Best effort: a mark that stays
 * names a change the next command finds recorded already, and removes then.
 */
export function clearChangeMark(stateDir: string): void {
  try {
    rmSync(markPath(stateDir), { force: true });
  } catch {
    // left for the next command (recordedAfter)
  }
}

/** The mark, null when there is none, "unreadable" when it is not one (killed while writing it). */
export function readChangeMark(stateDir: string): ChangeMark | null | "unreadable" {
  let text: string;
  try {
    text = readFileSync(markPath(stateDir), "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    return "unreadable";
  }
  try {
    const m = JSON.parse(text) as Partial<ChangeMark>;
    if (
      typeof m.wrapping === "string" &&
      Number.isSafeInteger(m.headSeq) &&
      typeof m.by === "string" &&
      typeof m.at === "string"
    )
      return m as ChangeMark;
  } catch {
    // half-written
  }
  return "unreadable";
}

/** `passphrase_changed`'s fields (docs/audit-format.md): never a passphrase, never the salt. */
export function passphraseChangedEvent(
  c: {
    keyId: string;
    approverKeyId: string | null;
    kdf: { N: number; r: number; p: number };
    wrapping: string;
  },
  by: string,
) {
  return {
    type: "passphrase_changed" as const,
    keyId: c.keyId,
    approverKeyId: c.approverKeyId,
    kdf: { alg: "scrypt", N: c.kdf.N, r: c.kdf.r, p: c.kdf.p },
    wrapping: c.wrapping,
    by,
  };
}

/** `USER via 'portcullis CMD' (pid N)`: this process, as a record's `by` says who. */
export function thisCommand(command = process.argv[2] ?? "portcullis"): string {
  let user = "unknown user"; // no passwd entry
  try {
    user = userInfo().username;
  } catch {}
  return `${user} via 'portcullis ${command}' (pid ${process.pid})`;
}

/** `"type":"passphrase_changed"` as a record's clear header spells it, in hex. */
const CHANGE_TYPE_HEX = Buffer.from('"type":"passphrase_changed"', "latin1").toString("hex");

/**
 * For a command that opened the keyring with the passphrase (its audit private key): records late
 * a change a killed or unrecorded `portcullis passphrase` left (see the header); the record's seq,
 * or null when there was nothing to record. Costs one look for the mark when there is none. Never
 * fails the command: a record that cannot be written now is said (`notice`), and the mark stays
 * for the next command.
 */
export async function recordLateChange(
  db: Store,
  stateDir: string,
  auditPrivateKey: KeyObject,
  notice: (line: string) => void,
): Promise<number | null> {
  if (!existsSync(markPath(stateDir))) return null;
  try {
    // under the rewrite lock: no change is between its mark and its record meanwhile
    return await underRewriteLock(stateDir, () => {
      const mark = readChangeMark(stateDir);
      if (mark === null) return null; // another command recorded it meanwhile
      const now = keyringWrapping(stateDir);
      // a change killed before its rename (not made), or one another change replaced since
      if (mark === "unreadable" || now === null || now.wrapping !== mark.wrapping) {
        clearChangeMark(stateDir);
        return null;
      }
      // killed after its record, before removing the mark: recorded already
      if (recordedAfter(db, auditPrivateKey, mark.headSeq, mark.wrapping)) {
        clearChangeMark(stateDir);
        return null;
      }
      const log = AuditLog.open(db, stateDir);
      let seq: number;
      try {
        seq = log.append({
          ...passphraseChangedEvent(now, mark.by),
          late: true,
          changedAt: mark.at,
          recordedBy: thisCommand(),
        }).seq;
      } finally {
        log.close();
      }
      clearChangeMark(stateDir);
      notice(
        `the keyring's passphrase was changed by ${mark.by} at ${mark.at}, and that change was not in the audit chain (its command was killed before recording it, or could not write the store then): recorded now, late (passphrase_changed, record ${seq})`,
      );
      return seq;
    });
  } catch (e) {
    notice(
      `the keyring's passphrase was changed without a record in the audit chain, and it could not be recorded now: ${(e as Error).message}; the next command that takes the passphrase tries again`,
    );
    return null;
  }
}

/** Whether a `passphrase_changed` after `headSeq` names `wrapping` (a record that does not open is none). */
function recordedAfter(db: Store, auditPrivateKey: KeyObject, headSeq: number, wrapping: string): boolean {
  const records = db
    .prepare(
      `SELECT record FROM audit_records WHERE seq > ? AND instr(substr(record, 1, 512), X'${CHANGE_TYPE_HEX}') > 0 ORDER BY seq`,
    )
    .pluck()
    .all(headSeq) as Buffer[];
  for (const record of records) {
    try {
      for (const r of openRecords(db, auditPrivateKey, [record]))
        if ((r.event as { wrapping?: unknown }).wrapping === wrapping) return true;
    } catch {
      // sealed to another key, or does not authenticate: it records nothing
    }
  }
  return false;
}
