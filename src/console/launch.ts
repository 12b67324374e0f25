/**
 * Starting the console of a state directory: at most one per state directory (a lock file held
 * for the console's life), started on demand by a gateway that needs a human decision.
 */
import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync, rmSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { processStartTime } from "../identity/proc.js";
import { type ConsoleAddress, humanLink, readConsoleAddress, requestPageUrl } from "./address.js";

/**
 * Set to "1" and a gateway never starts the console on demand (headless machines, CI, the test
 * suite); `portcullis console` still starts it, and a running one is still used.
 */
export const NO_CONSOLE_ENV = "PORTCULLIS_NO_CONSOLE";

export function consoleLockPath(stateDir: string): string {
  return join(stateDir, "console.lock");
}

/**
 * Takes the state directory's console lock (O_EXCL), removing a lock whose owner is gone.
 * Returns the release, or null when a live console process holds it.
 */
export function takeConsoleLock(stateDir: string): (() => void) | null {
  const path = consoleLockPath(stateDir);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      writeSync(fd, JSON.stringify({ pid: process.pid, startTime: processStartTime(process.pid) }));
      closeSync(fd);
      return () => {
        try {
          const owner = JSON.parse(readFileSync(path, "utf8")) as { pid?: unknown };
          if (owner.pid === process.pid) rmSync(path, { force: true });
        } catch {
          /* already gone */
        }
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    if (lockOwnerAlive(path)) return null;
    rmSync(path, { force: true });
  }
  return null;
}

function lockOwnerAlive(path: string): boolean {
  let owner: { pid?: unknown; startTime?: unknown };
  try {
    owner = JSON.parse(readFileSync(path, "utf8")) as typeof owner;
  } catch {
    // Being written this very moment, or garbage (a console killed between creating the lock and
    // writing its owner, a disk full as it wrote): live while younger than a breath, stale after.
    // Taken as live whatever its age, it stopped every later console for good.
    return youngerThan(path, UNREADABLE_LOCK_MS);
  }
  if (typeof owner.pid !== "number" || !Number.isInteger(owner.pid) || owner.pid <= 0) return false;
  const alive = processStartTime(owner.pid);
  return alive !== null && (typeof owner.startTime !== "string" || owner.startTime === alive);
}

/** How long an unreadable console.lock is taken for one being written. */
const UNREADABLE_LOCK_MS = 5_000;

function youngerThan(path: string, ms: number): boolean {
  try {
    return Date.now() - statSync(path).mtimeMs < ms;
  } catch {
    return false; // gone: nothing holds it
  }
}

/** Waits (bounded) for the state directory's console to publish its address. */
export async function waitForConsole(stateDir: string, ms: number): Promise<ConsoleAddress | null> {
  const deadline = Date.now() + ms;
  for (;;) {
    const live = readConsoleAddress(stateDir);
    if (live) return live;
    if (Date.now() >= deadline) return null;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The console of `stateDir`: the live one, or one started now (`portcullis console --no-open`,
 * detached, outliving the caller) whose address is waited for, at most `waitMs`. null when it
 * could not be started; the caller goes on without it.
 */
export async function ensureConsole(stateDir: string, waitMs = 10_000): Promise<ConsoleAddress | null> {
  const live = readConsoleAddress(stateDir);
  if (live) return live;
  const main = fileURLToPath(new URL("../cli/main.cjs", import.meta.url));
  const log = openSync(join(stateDir, "console.log"), "a", 0o600);
  try {
    const child = spawn(
      process.execPath,
      [main, "console", "--no-open", "--on-demand", "--state-dir", stateDir],
      { detached: true, stdio: ["ignore", "ignore", log], cwd: process.cwd() },
    );
    child.on("error", () => {});
    child.unref();
  } finally {
    closeSync(log);
  }
  return waitForConsole(stateDir, waitMs);
}

/**
 * For a gateway that just asked for a decision: make sure the console runs, then say where the
 * request can be decided. Never throws and never delays the call; a failure is one log line.
 */
export function consoleOnDemand(
  stateDir: string,
  requestId: string,
  log: { info(m: string): void; warn(m: string): void; own?(m: string): void },
): void {
  if (process.env[NO_CONSOLE_ENV] === "1") return;
  ensureConsole(stateDir).then(
    (address) => {
      // This line is for the human (a gateway's stderr): the link carries the ticket.
      if (address) {
        const page = humanLink(address, requestPageUrl("", requestId));
        // made here whole (the request id, the console's address and ticket): not redacted
        const line = `review and decide it in the console: ${page}`;
        if (log.own) log.own(line);
        else log.info(line);
      } else log.warn(`the console did not start (see ${join(stateDir, "console.log")})`);
    },
    (e: unknown) => log.warn(`the console could not be started: ${(e as Error)?.message ?? String(e)}`),
  );
}

/** Opens `url` in the desktop's browser (xdg-open, or open on macOS); silently skipped when absent. */
export function openBrowser(url: string): void {
  const opener = process.platform === "darwin" ? "open" : "xdg-open";
  try {
    const child = spawn(opener, [url], { detached: true, stdio: "ignore" });
    child.on("error", () => {});
    child.unref();
  } catch {
    /* no opener: the URL was printed */
  }
}
