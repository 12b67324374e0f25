// `portcullis passphrase` under a file size limit (`ulimit -f`, set by the shell that starts it; no
// privilege needed) smaller than keyring.json, while another process has the store open (a running
// gateway does; here a plain SQLite connection, so the store's -shm and -wal already exist and the
// command's own store needs no byte past the limit to open).
//
// One write(2) past the limit writes the part below it and returns its length (Node ignores
// SIGXFSZ); only the next write fails with EFBIG. A rewrite of keyring.json that took one write's
// length for the whole renamed the cut file over keyring.json and said "Passphrase changed" (exit
// 0): a keyring neither passphrase opens, and every key, the vault's secrets and the audit chain's
// readability with it, gone. What must hold: the command exits 2 naming the limit and saying
// nothing was changed, keyring.json is byte for byte what it was (the current passphrase opens
// it), no temporary file is left, and the change succeeds once the limit is lifted.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { WrongPassphraseError } from "../../src/keyring/keyringErrors.js";
import { exitWithOutput } from "../helpers/exitWithOutput.js";
import { removeDir } from "../helpers/files.js";
import { hostEnv } from "../helpers/gateway.js";
import { changeByCli, passphraseFile, withPassphrase } from "../helpers/passphraseChange.js";
import { CLI, NODE, REPO } from "../helpers/paths.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";

const NEXT = "a new passphrase for the limited change";

const OPEN_STORE = `
const Database = require(process.argv[1]);
const db = new Database(process.argv[2]);
db.pragma("journal_mode = WAL");
db.prepare("SELECT count(*) FROM sqlite_master").get();
process.stdout.write("open\\n");
process.stdin.resume();
process.stdin.on("end", () => { db.close(); process.exit(0); });
`;

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** A process with the store open (its -shm and -wal made), until the test ends. */
async function storeKeptOpen(stateDir: string): Promise<void> {
  const child: ChildProcess = spawn(
    NODE,
    ["-e", OPEN_STORE, join(REPO, "node_modules", "better-sqlite3"), join(stateDir, "portcullis.db")],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  // its stdout read to the end, not only its exit: an exit seen before its "open" line was read
  // would be taken for a holder that never opened the store
  const exited = exitWithOutput(child, [child.stdout!]);
  cleanup.push(async () => {
    child.stdin?.end();
    await exited;
  });
  await new Promise<void>((resolve, reject) => {
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      out += d;
      if (out.includes("open\n")) resolve();
    });
    void exited.then(({ code }) => reject(new Error(`the store holder exited (${code})`)));
  });
}

async function opensWith(stateDir: string, candidates: string[]): Promise<string[]> {
  const opened: string[] = [];
  for (const p of candidates) {
    try {
      (await unlockKeyring(stateDir, p)).dataKey.fill(0);
      opened.push(p);
    } catch (e) {
      if (!(e instanceof WrongPassphraseError)) throw e;
    }
  }
  return opened;
}

describe("portcullis passphrase under a file size limit below keyring.json's size", () => {
  it("exits 2 naming the limit; keyring.json is left as it was, the current passphrase opens it, no temporary file", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const keyring = join(stateDir, "keyring.json");
    const was = readFileSync(keyring, "utf8");
    // one 512-byte block: the first write of the new keyring (about 1 KiB) is cut at 512 bytes
    expect(Buffer.byteLength(was)).toBeGreaterThan(512);
    await storeKeptOpen(stateDir);

    const r = spawnSync("sh", ["-c", 'ulimit -f 1 && exec "$@"', "sh", NODE, CLI, "passphrase"], {
      env: hostEnv({
        PORTCULLIS_HOME: stateDir,
        ...withPassphrase(TEST_PASSPHRASE),
        PORTCULLIS_NEW_PASSPHRASE_FILE: passphraseFile(NEXT),
      }),
      encoding: "utf8",
    });
    expect(r.stdout).not.toContain("Passphrase changed");
    expect(r.stderr).toMatch(/file size limit \(ulimit -f: 512 bytes\)/);
    expect(r.stderr).toContain("nothing was changed");
    expect(r.status, r.stderr).toBe(2);

    expect(readFileSync(keyring, "utf8")).toBe(was);
    expect(await opensWith(stateDir, [TEST_PASSPHRASE, NEXT])).toEqual([TEST_PASSPHRASE]);
    expect(readdirSync(stateDir).filter((n) => n.endsWith(".tmp"))).toEqual([]);

    // without the limit the same change is made
    const again = await changeByCli(stateDir, TEST_PASSPHRASE, NEXT);
    expect(again.code, again.stderr).toBe(0);
    expect(await opensWith(stateDir, [TEST_PASSPHRASE, NEXT])).toEqual([NEXT]);
  });
});
