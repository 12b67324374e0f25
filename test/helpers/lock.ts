// Another process holding the store's write lock, as a database browser with an unsaved edit or an
// sqlite3 shell inside BEGIN IMMEDIATE would: a real process with its own SQLite connection, so
// every portcullis process sees SQLITE_BUSY once its busy timeout runs out.
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { exitWithOutput } from "./exitWithOutput.js";
import { NODE, REPO } from "./paths.js";

const HOLDER = `
const Database = require(process.argv[1]);
const db = new Database(process.argv[2]);
db.pragma("busy_timeout = 10000");
db.exec("BEGIN IMMEDIATE");
process.stdout.write("held\\n");
const done = () => { db.exec("COMMIT"); db.close(); process.exit(0); };
process.stdin.resume();
process.stdin.on("end", done);
if (Number(process.argv[3]) > 0) setTimeout(done, Number(process.argv[3]));
`;

export interface HeldLock {
  /** the holder's process id */
  pid: number;
  /** commits and closes the holder's connection; resolves once its process has exited */
  release(): Promise<void>;
}

/**
 * Takes the write lock of `stateDir`'s store in another process; resolves once it is held. It is
 * held until release(), or for `forMs` (for a process whose start the test cannot watch).
 */
export async function holdStoreLock(stateDir: string, forMs = 0): Promise<HeldLock> {
  const child: ChildProcess = spawn(
    NODE,
    [
      "-e",
      HOLDER,
      join(REPO, "node_modules", "better-sqlite3"),
      join(stateDir, "portcullis.db"),
      String(forMs),
    ],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  // its stdout read to the end, not only its exit: a holder for `forMs` can exit before its
  // "held" line is read, and that is no failure to hold the lock
  const exited = exitWithOutput(child, [child.stdout!]);
  await new Promise<void>((resolve, reject) => {
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      out += d;
      if (out.includes("held\n")) resolve();
    });
    void exited.then(({ code }) =>
      reject(new Error(`the lock holder exited (${code}) before holding the lock`)),
    );
  });
  return {
    pid: child.pid!,
    release: async () => {
      child.stdin?.end();
      await exited;
    },
  };
}
