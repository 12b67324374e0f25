// A modern-era `run --listen` session whose end is begun by the idle timeout while one of its
// calls is still being decided: another process holds the store's write lock, so the call's intent
// record waits for it, and the client closes the call's stream (its cancellation in this era).
// Every step waits for its event, none for a time: a listen the server keeps open holds the
// session from the idle timeout until the call is in (a process taking the lock can take longer
// than the timeout on a loaded machine). For test/http/request-during-session-end.test.ts and
// decision-after-session-end.test.ts.
import { expect } from "vitest";
import { waitFor } from "../helpers/files.js";
import { holdStoreLock } from "../helpers/lock.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type Listener, startListener } from "./listen.js";
import { Connection, modernRequester } from "./pipeline.js";

export const IDLE_MS = 1_000;

/**
 * The front (the modern fixture, `--approval none`, idle timeout IDLE_MS, `env` beside the test's
 * own), its client listed (request id 1), and the session's end begun with the call (request id
 * 2, echo) still being decided. `client`: a connection of the client's still open; `serverPid`:
 * the session's server; `release`: lets the lock go. Teardown on `cleanup`.
 */
export async function endWithStalledCall(
  client: string,
  env: Record<string, string>,
  cleanup: (() => Promise<void> | void)[],
): Promise<{
  l: Listener;
  client: Connection;
  request: ReturnType<typeof modernRequester>;
  serverPid: number;
  release: () => Promise<void>;
}> {
  const request = modernRequester(client);
  const l = await startListener([NODE, FIXTURES.modern], {
    args: ["--approval", "none", "--listen-idle-timeout", String(IDLE_MS)],
    env: {
      PORTCULLIS_BUSY_TIMEOUT_MS: "600000",
      PORTCULLIS_STORE_CHECK_MS: "600000",
      PORTCULLIS_DEBUG: "1",
      ...env,
    },
  });
  cleanup.push(() => l.close());
  const failing = (e: unknown) => {
    throw new Error(`${(e as Error).message}\n--- the front's stderr ---\n${l.stderr()}`);
  };
  // every connection open (and the client known from its first) before another process starts
  const [own, caller, keeper] = await Promise.all([
    Connection.open(l),
    Connection.open(l),
    Connection.open(l),
  ]);
  cleanup.push(() => {
    for (const c of [own, caller, keeper]) c.close();
  });
  const listed = await own.post(request(1, "tools/list"));
  expect(listed.status, listed.body).toBe(200);
  const serverPid = Number(/serving .*?: pid=(\d+)/.exec(l.stderr())?.[1]);
  expect(serverPid).toBeGreaterThan(0);
  // an open listen: the session is not idle until the test closes it
  void keeper
    .post(request(9, "subscriptions/listen", { notifications: { toolsListChanged: true } }))
    .catch(() => {});
  await waitFor(
    () => /← client .*subscriptions\/listen/.test(l.stderr()) || null,
    20_000,
    "the listen, read",
  ).catch(failing);

  const lock = await holdStoreLock(l.stateDir);
  let held = true;
  const release = async () => {
    if (held) await lock.release();
    held = false;
  };
  cleanup.push(release);
  // the call's intent waits for the lock; the client gives up on it (closes its stream)
  void caller
    .post(request(2, "tools/call", { name: "echo", arguments: { text: "stalled" } }))
    .catch(() => {});
  await waitFor(
    () => /is locked by another process: the audit records/.test(l.stderr()) || null,
    20_000,
    "the call's intent to meet the lock",
  ).catch(failing);
  caller.close();
  keeper.close();
  // nothing open: the idle timeout begins the session's end, which waits for the stalled decision
  await waitFor(
    () => new RegExp(`idle for ${IDLE_MS} ms: ended`).test(l.stderr()) || null,
    20_000,
    "the idle end to begin",
  ).catch(failing);
  return { l, client: own, request, serverPid, release };
}
