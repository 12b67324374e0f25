// One HTTP session of `run --listen` ends while another program holds the store's write lock (a
// database browser inside a transaction, an sqlite3 shell inside BEGIN). better-sqlite3 is
// synchronous: the ending session's last writes (its run's end, what the audit sink still holds)
// held the event loop for the whole busy timeout, and every other session with it. They must wait
// for the lock without holding the loop: the other sessions are answered meanwhile, and the ended
// session's run is recorded once the lock goes. Real gateway, real server, a real lock holder.
import { afterEach, describe, expect, it } from "vitest";
import { openExistingStore } from "../../src/store/db.js";
import { verifiedAuditEvents } from "../helpers/approvals.js";
import { wholeLines } from "../helpers/completeLines.js";
import { alive, waitFor } from "../helpers/files.js";
import { holdStoreLock } from "../helpers/lock.js";
import { fixtureCommand } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";
import { type Listener, startListener } from "./listen.js";
import { messagesOf, openSession, raw } from "./raw.js";

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const post = (l: Listener, session: string, body: Record<string, unknown>) =>
  raw(l, {
    headers: l.headers({ "mcp-session-id": session }),
    body: JSON.stringify({ jsonrpc: "2.0", ...body }),
  });

const echo = (id: number, message: string) => ({
  id,
  method: "tools/call",
  params: { name: "echo", arguments: { message } },
});

/** The agent runs in the store, oldest first: which have ended. */
function runs(stateDir: string): { run: string; ended_at: string | null }[] {
  const db = openExistingStore(stateDir);
  try {
    return db.prepare("SELECT run, ended_at FROM runs ORDER BY started_at, run").all() as {
      run: string;
      ended_at: string | null;
    }[];
  } finally {
    db.close();
  }
}

/** Two sessions, each with a call answered (so each has its agent run), and the store's lock held. */
async function twoSessionsThenLock(busyTimeoutMs: string) {
  // a state directory of the test's own: the listener's close leaves it to be read after
  const stateDir = newStateDir();
  const l = await startListener(fixtureCommand("echo"), {
    stateDir,
    args: ["--approval", "none"],
    env: { PORTCULLIS_BUSY_TIMEOUT_MS: busyTimeoutMs },
  });
  cleanup.push(() => l.close());
  const call = async (session: string, id: number) => {
    const r = await post(l, session, echo(id, `before ${id}`));
    expect(r.status, r.body).toBe(200);
    expect(r.body).toContain(`Echo: before ${id}`);
  };
  const a = await openSession(l);
  await call(a, 1);
  // session A's server, the only one serving yet
  // waited for in a line written whole: stderr is read at its own pace, and a chunk can end inside the pid
  const serverOfA = Number(
    (
      await waitFor(
        () => /serving .*: pid=(\d+)/.exec(wholeLines(l.stderr())) ?? undefined,
        20_000,
        "A's server",
      )
    )[1],
  );
  expect(serverOfA).toBeGreaterThan(0);
  const b = await openSession(l);
  await call(b, 2);
  expect(runs(l.stateDir).filter((r) => r.ended_at === null)).toHaveLength(2);
  const lock = await holdStoreLock(l.stateDir);
  let held = true;
  cleanup.push(async () => {
    if (held) await lock.release();
  });
  const release = async () => {
    held = false;
    await lock.release();
  };
  /**
   * Session A ends (DELETE) and its server has exited: its last writes are next. The DELETE is
   * answered once the session has ended, its run's end written: after the lock goes.
   */
  const endA = async () => {
    const deleted = raw(l, { method: "DELETE", headers: l.headers({ "mcp-session-id": a }) });
    await waitFor(() => !alive(serverOfA) || undefined, 20_000, "session A's server exited");
    // the writes follow the server's exit at once; a moment more so that they have begun
    await new Promise((resolve) => setTimeout(resolve, 300));
    // wrapped: an async function's returned promise would be waited for by its caller
    return { deleted };
  };
  return { l, b, endA, release };
}

describe("an HTTP session ending while another program holds the store's lock", () => {
  it("the other sessions are answered meanwhile, and the ended run is recorded once the lock goes", async () => {
    // a busy timeout of ten minutes: a write that waited for the lock inside its statement would
    // hold the gateway's loop for the whole test
    const { l, b, endA, release } = await twoSessionsThenLock("600000");
    const { deleted } = await endA();
    for (let i = 0; i < 3; i++) {
      const pong = await post(l, b, { id: 10 + i, method: "ping" });
      expect(pong.status, pong.body).toBe(200);
      expect(messagesOf(pong.body)[0]).toMatchObject({ id: 10 + i, result: {} });
    }
    // still held: nothing of session A's end could be written yet
    expect(runs(l.stateDir).filter((r) => r.ended_at === null)).toHaveLength(2);
    await release();
    expect((await deleted).status).toBe(200);
    await waitFor(
      () => runs(l.stateDir).filter((r) => r.ended_at !== null).length === 1 || undefined,
      20_000,
      "session A's run ended in the store",
    );
    // the other session goes on, guarded and audited
    const after = await post(l, b, echo(20, "after"));
    expect(after.body).toContain("Echo: after");
    expect(l.stderr()).not.toMatch(/could not record|cannot record|SqliteError/);
    await l.close();
    const events = await verifiedAuditEvents(l.stateDir);
    const started = events.filter((e) => e.type === "run_started").map((e) => e.run);
    const ended = events.filter((e) => e.type === "run_ended").map((e) => e.run);
    expect(started).toHaveLength(2);
    // A's end recorded once, while the gateway ran; B's at the gateway's end
    expect(ended).toHaveLength(2);
    expect(new Set(ended)).toEqual(new Set(started));
  }, 90_000);

  it("held past the busy timeout: the session's end is given up without holding the others, said once, and the run closed as gone later", async () => {
    const { l, b, endA, release } = await twoSessionsThenLock("1500");
    const { deleted } = await endA();
    for (let i = 0; i < 3; i++) {
      const pong = await post(l, b, { id: 10 + i, method: "ping" });
      expect(messagesOf(pong.body)[0]).toMatchObject({ id: 10 + i, result: {} });
    }
    expect((await deleted).status).toBe(200);
    // given up: said, never a stack trace, the gateway serving on
    await waitFor(
      () =>
        /could not record the end of agent run|stayed locked by another process/.test(l.stderr()) ||
        undefined,
      30_000,
      "the end given up",
    );
    expect(l.stderr()).not.toMatch(/SqliteError|at .*\.js:\d+/);
    await release();
    const after = await post(l, b, echo(20, "after"));
    expect(after.body).toContain("Echo: after");
    await l.close();
    // A's run, left open while its gateway lived, is ended by the next gateway's start, as after
    // a crash (B's was ended at the listener's end); the chain verifies
    expect(runs(l.stateDir).filter((r) => r.ended_at === null)).toHaveLength(1);
    const next = rawGateway({
      args: ["--label", "http-test", "--approval", "none", "--", ...fixtureCommand("echo")],
      stateDir: l.stateDir,
    });
    cleanup.push(() => next.close());
    await waitFor(
      () => /ended 1 agent run\(s\)/.test(next.stderr()) || undefined,
      30_000,
      "the next start's recovery",
    );
    next.closeStdin();
    expect(await next.exited).toMatchObject({ code: 0 });
    const events = await verifiedAuditEvents(l.stateDir);
    const started = events.filter((e) => e.type === "run_started").map((e) => e.run);
    const ends = events.filter((e) => e.type === "run_ended");
    expect(started).toHaveLength(2);
    expect(ends).toHaveLength(2);
    expect(new Set(ends.map((e) => e.run))).toEqual(new Set(started));
    expect(ends.filter((e) => e.reason === "gateway_gone")).toHaveLength(1);
  }, 90_000);
});
