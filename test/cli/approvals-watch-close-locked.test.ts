// `approvals --watch` closes what a dead gateway left pending before each read, best effort: while
// another process holds the store's write lock past the busy timeout (a database browser with an
// unsaved edit), the close fails, and the watch says so in one line (the store's sentence, the
// request left pending, the fix: test/cli/approvals-close-locked.test.ts). Under --watch that
// line is said once while nothing it says changes, not at every tick of the watch; and once the
// lock is let go the watch closes the request by itself and says so (`{"change":"closed",
// "state":"expired"}`), though nothing in the store changed to wake it. Real processes: a gateway
// SIGKILLed with a request pending, a lock holder with its own SQLite connection, the watch (the
// kit test/helpers/unwritableStoreWatch.ts shares with the read-only and full-disk watches).
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { abandonedRequest } from "../helpers/abandonedRequest.js";
import { removeDir, waitFor } from "../helpers/files.js";
import { holdStoreLock } from "../helpers/lock.js";
import { newStateDir } from "../helpers/state.js";
import { runAtTerminal } from "../helpers/terminal.js";
import {
  COULD_NOT_CLOSE,
  closedOnceWritable,
  listedButNotClosed,
  stillSaidOnce,
  watchStore,
} from "../helpers/unwritableStoreWatch.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const SAID = COULD_NOT_CLOSE;

/** The watch, its sweep waiting for the lock `busyTimeoutMs` before it gives up (10 s by default). */
const watch = (stateDir: string, busyTimeoutMs = 300) =>
  watchStore(stateDir, cleanup, { env: { PORTCULLIS_BUSY_TIMEOUT_MS: String(busyTimeoutMs) } });

it("--watch: the could-not-close line said once while the lock holds; the lock let go, the request is closed and the watch says so", async () => {
  const stateDir = newStateDir();
  cleanup.push(() => removeDir(stateDir));
  const request = await abandonedRequest(stateDir, cleanup);
  const lock = await holdStoreLock(stateDir);
  let held = true;
  cleanup.push(() => (held ? lock.release() : undefined));

  const w = watch(stateDir);
  await listedButNotClosed(w, request, SAID);
  const db = join(stateDir, "portcullis.db");
  expect(w.err()).toContain(
    `portcullis approvals: ${SAID}: the store ${db} is locked by another process, and stayed locked while this one waited; 1 approval request that can no longer be decided`,
  );
  // several ticks of the watch (one every 500 ms, each trying the close again for 300 ms) with the
  // lock still held and nothing else changing: the line is not said again, nothing is closed
  await stillSaidOnce(w, SAID, 4000);

  // the lock let go (no write of its own: nothing in the store changes to wake the watch): the
  // request closed in the list and on stderr, where the warning was said, that it no longer holds
  await lock.release();
  held = false;
  await closedOnceWritable(w, request, SAID);
});

it("--watch at a terminal: the could-not-close line is said after the screen is cleared for the list, not wiped by it", async () => {
  const stateDir = newStateDir();
  cleanup.push(() => removeDir(stateDir));
  const request = await abandonedRequest(stateDir, cleanup);
  const lock = await holdStoreLock(stateDir);
  cleanup.push(() => lock.release());
  // watched until the terminal's time is up (then killed): what the screen shows is after the last clear
  const r = await runAtTerminal(["approvals", "--watch", "--state-dir", stateDir], [], {
    env: { PORTCULLIS_BUSY_TIMEOUT_MS: "300" },
    timeoutS: 4,
  });
  const clear = "\u001b[2J\u001b[H";
  expect(r.output).toContain(clear);
  const screen = r.output.slice(r.output.lastIndexOf(clear));
  expect(screen).toContain(`approval request ${request}  pending`);
  // was: said once before the first frame, whose clearing took it off the screen
  expect(screen.split(SAID), r.output).toHaveLength(2);
  expect(screen).toContain(
    `${SAID}: the store ${join(stateDir, "portcullis.db")} is locked by another process`,
  );
});

it("--watch started under a held lock: the close is tried once before the first list, which shows the request pending while the lock is still held", async () => {
  const stateDir = newStateDir();
  cleanup.push(() => removeDir(stateDir));
  const request = await abandonedRequest(stateDir, cleanup);
  const lock = await holdStoreLock(stateDir);
  let held = true;
  cleanup.push(() => (held ? lock.release() : undefined));

  // A busy timeout long beside the few milliseconds this test takes to let the lock go once the
  // watch said it could not close. The watch swept once before its loop and again at its first
  // tick: the lock let go during that second wait, the second sweep closed the request, and the
  // first thing the watch showed was a list without it (no "pending" line at all), after two
  // busy timeouts. Swept once, the list is read right after the could-not-close line, the lock
  // still held: the request is shown pending, then closed at a later tick.
  const w = watch(stateDir, 3000);
  await waitFor(() => w.err().includes(SAID), 20_000, "the could-not-close line");
  await lock.release();
  held = false;
  // said by both (the close done at last), before the list that follows it: the watch is then
  // ended and what it printed read whole
  await waitFor(() => w.err().includes("could be written again"), 20_000, "the closed-after-all line");
  w.child.kill("SIGINT");
  expect(await w.exited).toBe(0);
  const changes = w
    .lines()
    .map((l) => [l.change, l.change === "pending" ? (l.request as { request: string }).request : l.request]);
  expect(changes).toEqual([
    ["pending", request],
    ["closed", request],
  ]);
  expect(w.lines().find((l) => l.change === "closed")).toMatchObject({ state: "expired" });
  expect(w.err().split(SAID)).toHaveLength(2);
});
