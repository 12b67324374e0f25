// A 2026-07-28 client cancels its subscriptions/listen while the guard still decides it, then opens
// a new listen under the same id (its id is free once the first is cancelled). The first one's
// decision ends only later (here: the approval request it writes waits for a store another process
// keeps locked), and that late end must not touch the second listen. Before, the late end closed
// "the listen under id 7" in the gateway's session (ClientSession.listenClosed, by id): the second
// listen stayed open at the server but no longer got the gateway's notifications/tools/list_changed
// (the only way a modern client hears of a catalog change through the gateway). And a listen
// refused server_unavailable (sent while no process was up) stayed in the session as open: the
// gateway's list_changed went out under its id. Real gateway, raw client, the v2-SDK fixture
// modern.mjs.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents, decideByCli, nextStoredRequest, pending } from "../helpers/approvals.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { holdStoreLock } from "../helpers/lock.js";
import { modernMeta, subscriptionOf } from "../helpers/modernMeta.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { serving } from "../helpers/serving.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const META = modernMeta({}, { name: "listen-id-reused-test", version: "1.0.0" });
const A = "test://a";
const ECHO = {
  name: "echo",
  description: "Echo the text back.",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  annotations: { readOnlyHint: true },
};
const ADDED = {
  name: "added_later",
  description: "A tool the server adds while the client listens.",
  inputSchema: { type: "object", properties: {} },
  annotations: { readOnlyHint: true },
};

/** A gateway in front of modern.mjs serving resource A, each resource subscription asked of a human. */
function gateway(
  resources: "per-call" | "session" = "per-call",
  extraEnv: Record<string, string> = {},
): { gw: RawGateway; catalog: string } {
  const dir = tempDir();
  const catalog = join(dir, "catalog.json");
  writeFileSync(catalog, JSON.stringify([ECHO]));
  writeFileSync(
    join(dir, "portcullis.json"),
    JSON.stringify({
      servers: {
        modern: {
          command: NODE,
          args: [FIXTURES.modern],
          env: { FIXTURE_RESOURCES: A, FIXTURE_CATALOG: catalog },
          approval: { default: "none", resources },
        },
      },
    }),
  );
  // the store's patience long enough that the locked store never faults the decision here
  const gw = rawGateway({
    args: ["modern"],
    cwd: dir,
    env: {
      PORTCULLIS_BUSY_TIMEOUT_MS: "100",
      PORTCULLIS_BUSY_PATIENCE_MS: "120000",
      PORTCULLIS_RESPAWN_BACKOFF_MS: "20",
      ...extraEnv,
    },
  });
  cleanup.push(
    () => gw.close(),
    () => removeDir(dir),
  );
  return { gw, catalog };
}

/** The messages of `method` the client got on its listen 7. */
function on7(gw: RawGateway, method: string): WireMessage[] {
  return gw.messages().filter((m) => m.method === method && subscriptionOf(m) === 7);
}

describe("a listen id the client reuses after cancelling the listen", () => {
  it("the first listen's decision, ending after the second listen under its id is open, leaves the second open: it gets the gateway's list_changed, once per change", async () => {
    const { gw, catalog } = gateway();
    await gw.request("tools/list", { _meta: META }, 30_000);
    const lock = await holdStoreLock(gw.stateDir);
    cleanup.push(() => lock.release());
    // listen 7 asks for A: a human is to approve it, and its approval request waits for the store
    gw.send({
      jsonrpc: "2.0",
      id: 7,
      method: "subscriptions/listen",
      params: { notifications: { toolsListChanged: true, resourceSubscriptions: [A] }, _meta: META },
    });
    await waitFor(
      () =>
        gw.stderr().includes(`the approval request for "resources/subscribe ${A}" waits for it`) || undefined,
      20_000,
      "listen 7's approval request waiting for the store",
    );
    // the client gives up on it, and listens again under the same id (tool-list changes only)
    gw.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7, _meta: META } });
    gw.send({
      jsonrpc: "2.0",
      id: 7,
      method: "subscriptions/listen",
      params: { notifications: { toolsListChanged: true }, _meta: META },
    });
    const ack = await gw.next(
      (m) => m.method === "notifications/subscriptions/acknowledged" && subscriptionOf(m) === 7,
      20_000,
    );
    expect((ack.params as { notifications: unknown }).notifications).toEqual({ toolsListChanged: true });
    // the store free: the first listen's decision goes on, finds itself cancelled and ends
    await lock.release();
    const asked = await nextStoredRequest(gw.stateDir);
    expect(asked.tool).toBe(`resources/subscribe ${A}`);
    await waitFor(
      () => gw.stderr().includes(`approval request ${asked.request} stays pending for a retry`) || undefined,
      20_000,
      "the cancelled listen's decision ended",
    );

    // the server's catalog changes: the client's open listen 7 is told
    writeFileSync(catalog, JSON.stringify([ECHO, ADDED]));
    const changed = await gw.next(
      (m) => m.method === "notifications/tools/list_changed" && subscriptionOf(m) === 7,
      20_000,
    );
    expect(changed).toBeDefined();
    const listed = await gw.request("tools/list", { _meta: META }, 30_000);
    expect((listed.result as { tools: { name: string }[] }).tools.map((t) => t.name)).toContain(
      "added_later",
    );
    expect(on7(gw, "notifications/tools/list_changed")).toHaveLength(1);
    // neither listen was answered: the first was cancelled, the second is open
    expect(gw.messages().filter((m) => m.id === 7 && m.method === undefined)).toEqual([]);

    // recorded: a human was asked for the first listen's A, nothing of it was forwarded; the second
    // asked for no resource (nothing to decide, nothing recorded)
    const events = await auditEvents(gw.stateDir);
    expect(events.filter((e) => e.type === "approval_requested")).toHaveLength(1);
    expect(
      events.filter((e) => e.type === "request_forwarded"),
      JSON.stringify(events),
    ).toEqual([]);
    // approved now, the request of the cancelled listen opens nothing
    await decideByCli(gw.stateDir, "approve", asked.request);
    expect((await pending(gw.stateDir)).map((p) => p.request)).not.toContain(asked.request);
    expect(on7(gw, "notifications/subscriptions/acknowledged")).toHaveLength(1);
    expect(gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 120_000);

  it("a listen cancelled while its re-open on a new process is decided is over at once: a new listen under its id, open before that decision ends, stays open and is told of each change once", async () => {
    // Under "session", a uri approved for one call only leaves no grant: the re-open asks a human,
    // and the approval request waits for the store another process keeps locked.
    const { gw, catalog } = gateway("session");
    await gw.request("tools/list", { _meta: META }, 30_000);
    gw.send({
      jsonrpc: "2.0",
      id: 7,
      method: "subscriptions/listen",
      params: { notifications: { toolsListChanged: true, resourceSubscriptions: [A] }, _meta: META },
    });
    const seen = new Set<string>();
    const first = await nextStoredRequest(gw.stateDir, seen);
    await decideByCli(gw.stateDir, "approve", first.request, "--for", "call");
    await waitFor(
      () => on7(gw, "notifications/subscriptions/acknowledged")[0],
      20_000,
      "the acknowledgement",
    );

    const lock = await holdStoreLock(gw.stateDir);
    cleanup.push(() => lock.release());
    const one = serving(gw);
    process.kill(one.pid, "SIGKILL");
    await waitFor(
      () =>
        gw.stderr().includes(`the approval request for "resources/subscribe ${A}" waits for it`) || undefined,
      30_000,
      "the re-open's approval request waiting for the store",
    );
    gw.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7, _meta: META } });
    gw.send({
      jsonrpc: "2.0",
      id: 7,
      method: "subscriptions/listen",
      params: { notifications: { toolsListChanged: true }, _meta: META },
    });
    await waitFor(
      () => on7(gw, "notifications/subscriptions/acknowledged")[1],
      20_000,
      "the new listen's acknowledgement",
    );
    await lock.release();
    const again = await nextStoredRequest(gw.stateDir, seen);
    await waitFor(
      () => gw.stderr().includes(`approval request ${again.request} stays pending for a retry`) || undefined,
      20_000,
      "the cancelled re-open's decision ended",
    );

    writeFileSync(catalog, JSON.stringify([ECHO, ADDED]));
    await gw.next((m) => m.method === "notifications/tools/list_changed" && subscriptionOf(m) === 7, 20_000);
    const listed = await gw.request("tools/list", { _meta: META }, 30_000);
    expect((listed.result as { tools: { name: string }[] }).tools.map((t) => t.name)).toContain(
      "added_later",
    );
    expect(on7(gw, "notifications/tools/list_changed")).toHaveLength(1);
    expect(gw.messages().filter((m) => m.id === 7 && m.method === undefined)).toEqual([]);
    // the re-open was never sent: one listen forwarded with A, on the first process
    const events = await auditEvents(gw.stateDir);
    expect(
      events.filter((e) => e.type === "request_forwarded").map((e) => e.epoch),
      JSON.stringify(events),
    ).toEqual([one.epoch]);
    expect(gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 150_000);

  it("a listen refused server_unavailable (sent while no server process is up) is no listen of the client's: the gateway's list_changed never goes out under its id", async () => {
    const { gw, catalog } = gateway("per-call", { PORTCULLIS_RESPAWN_BACKOFF_MS: "1500" });
    await gw.request("tools/list", { _meta: META }, 30_000);
    const one = serving(gw);
    process.kill(one.pid, "SIGKILL");
    await waitFor(() => /respawn|exited|killed/i.test(gw.stderr()) || undefined, 20_000, "the crash seen");
    const refused = await gw.request(
      "subscriptions/listen",
      { notifications: { toolsListChanged: true }, _meta: META },
      20_000,
    );
    expect(refused.error?.data, JSON.stringify(refused)).toMatchObject({ error: "server_unavailable" });
    await waitFor(() => serving(gw).epoch !== one.epoch || undefined, 20_000, "the next epoch");
    await gw.request("tools/list", { _meta: META }, 30_000);
    gw.send({
      jsonrpc: "2.0",
      id: 7,
      method: "subscriptions/listen",
      params: { notifications: { toolsListChanged: true }, _meta: META },
    });
    await waitFor(
      () => on7(gw, "notifications/subscriptions/acknowledged")[0],
      20_000,
      "the acknowledgement",
    );
    writeFileSync(catalog, JSON.stringify([ECHO, ADDED]));
    await gw.next((m) => m.method === "notifications/tools/list_changed" && subscriptionOf(m) === 7, 20_000);
    // (sent together, at the one change: none under the refused listen's id)
    const changed = gw.messages().filter((m) => m.method === "notifications/tools/list_changed");
    expect(changed.map(subscriptionOf)).toEqual([7]);
  }, 90_000);
});
