// keyring.json rewritten in place by a same-user writer so that a cache keyed on its stat would
// take it for the file already read: the same inode, the same size, its mtime put back with
// utimes (only the ctime, which no user can set, differs, and on a coarse clock not even that).
// What it would catch: a decision check that trusted keyring.json's keys from an earlier read
// because the file "did not change" (issue #11's grant path, session 49: the per-call check
// reads no keyring, and the check that does must read it every time).
import { closeSync, openSync, readFileSync, statSync, utimesSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { liveSessionGrants } from "../../src/approval/grants.js";
import { DecisionVerifier } from "../../src/approval/trust.js";
import { initKeyring } from "../../src/keyring/keyring.js";
import { keyringPath } from "../../src/keyring/keyringRead.js";
import type { Store } from "../../src/store/db.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { PASSPHRASE, sessionGranted, twoConnectionsPerTest } from "./helpers.js";

const A = "01JQ7R4S4S0QJ7GZP1S2AAAAAA";
/** A whole second (mtime restored exactly: utimes takes no nanoseconds from node). */
const MTIME = 1_700_000_000;

let dir: string;
let db: Store;
let other: Store;
twoConnectionsPerTest("portcullis-keyring-same-stat-", (s) => {
  ({ dir, db, other } = s);
});

/** Another keyring's text (other audit and approver keys), made by init in a directory of its own. */
async function anotherKeyring(): Promise<string> {
  const elsewhere = tempDir("portcullis-other-keyring-");
  try {
    await initKeyring(elsewhere, PASSPHRASE);
    return readFileSync(keyringPath(elsewhere), "utf8");
  } finally {
    removeDir(elsewhere);
  }
}

describe("keyring.json rewritten in place with its size and mtime kept", () => {
  it("is read again at the next decision check: the grant no longer verifies, nothing is trusted", async () => {
    const { run } = await sessionGranted(db, other, A);
    // the grant as a gateway reads it (its signature with it)
    const [grant] = liveSessionGrants(db, run.run, run.serverLabel);
    expect(grant).toBeDefined();
    const path = join(dir, "keyring.json");
    const replacement = await anotherKeyring();
    // the original padded (JSON allows trailing blanks) so that the replacement fits its size
    const original = readFileSync(path, "utf8");
    const size = Math.max(original.length, replacement.length) + 16;
    writeFileSync(path, original.padEnd(size, " "), { mode: 0o600 });
    utimesSync(path, MTIME, MTIME);
    const before = statSync(path, { bigint: true });

    const verifier = new DecisionVerifier(db, dir);
    expect(verifier.verifyGrant(grant!)).toEqual({ ok: true });
    expect(verifier.trusted().ok).toBe(true);

    // the attack: the same inode written over, to the same size, its mtime put back
    const fd = openSync(path, "r+");
    try {
      writeSync(fd, replacement.padEnd(size, " "), 0, "utf8");
    } finally {
      closeSync(fd);
    }
    utimesSync(path, MTIME, MTIME);
    const after = statSync(path, { bigint: true });
    expect([after.ino, after.size, after.mtimeNs, after.mode]).toEqual([
      before.ino,
      before.size,
      before.mtimeNs,
      before.mode,
    ]);
    expect(readFileSync(path, "utf8")).not.toBe(original.padEnd(size, " "));

    const v = verifier.verifyGrant(grant!);
    expect(v.ok).toBe(false);
    expect(!v.ok && v.why).toMatch(
      /is not the one pinned in the audit chain \(keyring\.json was replaced or edited\)/,
    );
    expect(verifier.trusted()).toMatchObject({ ok: false, mismatch: true });
  });
});
