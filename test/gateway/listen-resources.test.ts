// A 2026-07-28 client's resource subscriptions (subscriptions/listen with resourceSubscriptions):
// decided by the guard uri by uri, as a resources/subscribe of each would be, recorded before the
// listen is sent, and decided again when the listen is re-opened on a new server process. Before,
// the listen was relayed as written: a resource the guard would refuse to subscribe to (or that a
// human was to approve) was subscribed to unasked and unrecorded, on every process. Real gateway,
// raw client, the v2-SDK fixture modern.mjs with FIXTURE_RESOURCES (its `touch` tool sends
// notifications/resources/updated to each listen that names the uri). The requests a case waits
// for are read in the test process (nextStoredRequest): the listing is not the subject here (the
// case that shows it runs `portcullis approvals`), and it cost a process per wait.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents, decideByCli, nextStoredRequest, pending } from "../helpers/approvals.js";
import { waitForAuditEvents } from "../helpers/auditWait.js";
import { completeLines } from "../helpers/completeLines.js";
import { removeDir, sleep, tempDir, waitFor } from "../helpers/files.js";
import { runCli, type WireMessage } from "../helpers/gateway.js";
import { lenientListenGateway } from "../helpers/lenientListens.js";
import { holdStoreLock } from "../helpers/lock.js";
import { modernMeta } from "../helpers/modernMeta.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { serving } from "../helpers/serving.js";
import { teardownOf } from "../helpers/teardown.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const META = modernMeta({}, { name: "listen-resources-test", version: "1.0.0" });
const SUB = "io.modelcontextprotocol/subscriptionId";
const A = "test://a";
const B = "test://b";

/**
 * A gateway in front of modern.mjs serving resources A and B, with `approval` for resources (and
 * `tools` for calls); closed by `teardown` (the file's list, emptied after each case, unless a
 * case running beside another gives its own).
 */
function gateway(
  resources: "none" | "session" | "per-call",
  env: Record<string, string> = {},
  tools: "none" | "session" = "none",
  teardown: (() => Promise<void> | void)[] = cleanup,
): RawGateway {
  const dir = tempDir();
  writeFileSync(
    join(dir, "portcullis.json"),
    JSON.stringify({
      servers: {
        modern: {
          command: NODE,
          args: [FIXTURES.modern],
          env: { FIXTURE_RESOURCES: `${A},${B}` },
          approval: { default: tools, resources },
        },
      },
    }),
  );
  const gw = rawGateway({ args: ["modern"], cwd: dir, env: { PORTCULLIS_RESPAWN_BACKOFF_MS: "20", ...env } });
  teardown.push(
    () => gw.close(),
    () => removeDir(dir),
  );
  return gw;
}

/** A gateway in front of lenient.mjs (every method it gets logged), listens kept open, resources per-call. */
function lenientGateway(env: Record<string, string> = {}): { gw: RawGateway; methods: string } {
  return lenientListenGateway(cleanup, { env });
}

/** The subscriptions/listen requests lenient.mjs got (the gateway's own among them). */
function listensAt(methods: string): { method: string; params: { notifications?: unknown } }[] {
  if (!existsSync(methods)) return [];
  return completeLines(readFileSync(methods, "utf8"))
    .map((l) => JSON.parse(l) as { method: string; params: { notifications?: unknown } })
    .filter((m) => m.method === "subscriptions/listen");
}

/** A modern request (the envelope in its params). */
function request(gw: RawGateway, method: string, params: Record<string, unknown> = {}): Promise<WireMessage> {
  return gw.request(method, { ...params, _meta: META }, 30_000);
}

/** Lists, then calls `touch` for `uri`: its answer (the server sent its updates before it). */
async function touch(gw: RawGateway, uri: string): Promise<WireMessage> {
  for (let i = 0; i < 20; i++) {
    await request(gw, "tools/list");
    const answer = await request(gw, "tools/call", { name: "touch", arguments: { uri } });
    if ((answer.error?.data as { error?: string } | undefined)?.error !== "catalog_stale") return answer;
  }
  throw new Error("touch kept being refused catalog_stale");
}

/** The notifications/resources/updated of `uri` the client got on its listen `id`. */
function updates(gw: RawGateway, uri: string, id: string): WireMessage[] {
  return gw.messages().filter((m) => {
    const p = m.params as { uri?: unknown; _meta?: Record<string, unknown> } | undefined;
    return m.method === "notifications/resources/updated" && p?.uri === uri && p?._meta?.[SUB] === id;
  });
}

/** A listen for `uris`, and for tool-list changes too unless `tools` is false. */
function listen(gw: RawGateway, id: string, uris: string[], tools = true): void {
  gw.send({
    jsonrpc: "2.0",
    id,
    method: "subscriptions/listen",
    params: {
      notifications: { ...(tools ? { toolsListChanged: true } : {}), resourceSubscriptions: uris },
      _meta: META,
    },
  });
}

const REFUSED = "portcullis/refusedSubscriptions";

/** What an acknowledgement says: the filter the server honours, and the uris the gateway refused. */
function acked(ack: WireMessage): { honoured: Record<string, unknown>; refused: unknown } {
  const p = ack.params as { notifications: Record<string, unknown>; _meta: Record<string, unknown> };
  return { honoured: p.notifications, refused: p._meta[REFUSED] };
}

/** The acknowledgements of the listen `id` the client got so far. */
function acks(gw: RawGateway, id: string): WireMessage[] {
  return gw
    .messages()
    .filter(
      (m) =>
        m.method === "notifications/subscriptions/acknowledged" &&
        (m.params as { _meta?: Record<string, unknown> })?._meta?.[SUB] === id,
    );
}

describe("a modern listen's resource subscriptions go through the guard", () => {
  it("each uri is recorded before the listen is sent, and ended by its acknowledgement; re-opened on the next process, decided and recorded against its epoch", async () => {
    const gw = gateway("none");
    await request(gw, "tools/list");
    listen(gw, "listen:0", [A]);
    await waitFor(() => acks(gw, "listen:0")[0], 20_000, "the acknowledgement");
    const first = serving(gw);
    const events = await auditEvents(gw.stateDir);
    const forwarded = events.filter((e) => e.type === "request_forwarded");
    expect(forwarded, JSON.stringify(events)).toMatchObject([
      { method: "subscriptions/listen", epoch: first.epoch, requestId: "listen:0" },
    ]);
    const ended = await waitFor(
      async () => (await auditEvents(gw.stateDir)).find((e) => e.type === "tool_result"),
      10_000,
      "the listen's resource subscription ended",
    );
    expect(ended).toMatchObject({
      method: "subscriptions/listen",
      outcome: "ok",
      callKey: forwarded[0]!.callKey,
    });
    expect((await touch(gw, A)).result).toBeDefined();
    expect(updates(gw, A, "listen:0")).toHaveLength(1);

    // the process dies: the listen is decided again for the next one, then re-opened there
    process.kill(first.pid, "SIGKILL");
    await waitFor(() => serving(gw).epoch !== first.epoch || undefined, 20_000, "the next epoch");
    const next = serving(gw);
    await waitFor(() => acks(gw, "listen:0")[1], 20_000, "the re-opened listen's acknowledgement");
    const again = (await auditEvents(gw.stateDir)).filter(
      (e) => e.type === "request_forwarded" && e.method === "subscriptions/listen",
    );
    expect(again.map((e) => e.epoch)).toEqual([first.epoch, next.epoch]);
    expect((await touch(gw, A)).result).toBeDefined();
    expect(updates(gw, A, "listen:0")).toHaveLength(2);
    // the listen is never answered while it is open
    expect(gw.messages().filter((m) => m.id === "listen:0")).toEqual([]);
    expect(gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 90_000);

  it("a uri a human denies is taken out of the listen, which goes on with the rest: the server never gets that uri, and the acknowledgement names it with its refusal; a listen left with nothing is answered with the refusal", async () => {
    const gw = gateway("per-call");
    await request(gw, "tools/list");
    listen(gw, "listen:0", [A, B]);
    const seen = new Set<string>();
    const askedA = await nextStoredRequest(gw.stateDir, seen);
    expect(askedA.tool).toBe(`resources/subscribe ${A}`);
    // the human is shown what the client sent, under the name its grant carries
    const shown = await runCli(["approvals", "--state-dir", gw.stateDir]);
    expect(shown.stdout).toContain(`tool       "resources/subscribe ${A}" on modern`);
    expect(shown.stdout).toContain(
      `Not a tool: the MCP request subscriptions/listen (2026-07-28), asking for updates of ${A}`,
    );
    // the gateway's own words about the request, never passed off as the server's
    expect(shown.stdout).not.toContain("the server says");
    const full = await runCli(["approvals", "--verbose", "--state-dir", gw.stateDir]);
    expect(full.stdout).toContain(`(asked as subscriptions/listen for ${A})`);
    expect(full.stdout).toContain("    Not a tool: the MCP request subscriptions/listen (2026-07-28)");
    expect(full.stdout).not.toContain("the server says");
    // and the gateway's own line on stderr says so too
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => gw.stderr().includes("(asked as subscriptions/listen) (per-call)"),
      20_000,
      "the gateway's line on the approval asked",
    );
    expect(gw.stderr()).toContain(
      `approval needed for "resources/subscribe ${A}" (asked as subscriptions/listen) (per-call)`,
    );
    seen.add(askedA.request);
    await decideByCli(gw.stateDir, "approve", askedA.request);
    const askedB = await nextStoredRequest(gw.stateDir, seen);
    seen.add(askedB.request);
    expect(askedB.tool).toBe(`resources/subscribe ${B}`);
    await decideByCli(gw.stateDir, "deny", askedB.request);
    const ack = await waitFor(() => acks(gw, "listen:0")[0], 20_000, "the acknowledgement");
    const { honoured, refused } = acked(ack);
    expect(honoured).toEqual({ toolsListChanged: true, resourceSubscriptions: [A] });
    expect(refused).toMatchObject([{ uri: B, error: { code: -32057, data: { error: "approval_denied" } } }]);
    // the listen stays open: never answered
    expect(gw.messages().filter((m) => m.id === "listen:0")).toEqual([]);

    // B's refusal is committed with the audit's next group, after the listen went on: waited for
    const events = await waitForAuditEvents(
      gw.stateDir,
      (all) => all.some((e) => e.type === "authorization_denied" && e.tool === `resources/subscribe ${B}`),
      "B's authorization_denied",
    );
    expect(
      events.find((e) => e.type === "authorization_denied"),
      JSON.stringify(events),
    ).toMatchObject({
      tool: `resources/subscribe ${B}`,
      reason: "approval_denied",
    });
    expect(events.filter((e) => e.type === "request_forwarded")).toHaveLength(1);
    expect(events.filter((e) => e.type === "call_interrupted")).toEqual([]);
    // the server holds A for the client's listen, and not B
    expect((await touch(gw, A)).result).toBeDefined();
    expect(updates(gw, A, "listen:0")).toHaveLength(1);
    expect((await touch(gw, B)).result).toBeDefined();
    await sleep(200);
    expect(updates(gw, B, "listen:0")).toEqual([]);

    // a listen whose only part is refused has nothing left to open: answered with the refusal
    listen(gw, "listen:1", [B], false);
    const askedAgain = await nextStoredRequest(gw.stateDir, seen);
    await decideByCli(gw.stateDir, "deny", askedAgain.request);
    const answer = await gw.next((m) => m.id === "listen:1", 20_000);
    expect(answer.error?.data, JSON.stringify(answer)).toMatchObject({ error: "approval_denied" });
    expect(acks(gw, "listen:1")).toEqual([]);
    expect(gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 90_000);

  it('under approval.resources "session", the re-open on a new process refuses the uri (the old epoch\'s grant is stale): the listen is re-opened without it, its acknowledgement says why, and the client is told the resource changed', async () => {
    const gw = gateway("session");
    await request(gw, "tools/list");
    listen(gw, "listen:0", [A]);
    const asked = await nextStoredRequest(gw.stateDir);
    expect(asked.tool).toBe(`resources/subscribe ${A}`);
    await decideByCli(gw.stateDir, "approve", asked.request);
    await waitFor(() => acks(gw, "listen:0")[0], 20_000, "the acknowledgement");
    // the grant a listen's uri got covers a resources/subscribe of it: one approval for both forms
    const subscribed = await request(gw, "resources/subscribe", { uri: A });
    expect(subscribed.error?.data, JSON.stringify(subscribed)).not.toMatchObject({
      error: "authorization_required",
    });
    expect(await pending(gw.stateDir)).toEqual([]);
    const granted = (await auditEvents(gw.stateDir)).filter((e) => e.type === "request_forwarded");
    expect(granted.map((e) => e.method)).toEqual(["subscriptions/listen", "resources/subscribe"]);
    expect(granted[1]!.grant).toBe(granted[0]!.grant);

    const first = serving(gw);
    process.kill(first.pid, "SIGKILL");
    await waitFor(() => serving(gw).epoch !== first.epoch || undefined, 20_000, "the next epoch");
    const next = serving(gw);
    const ack = await waitFor(
      () => acks(gw, "listen:0")[1],
      20_000,
      "the re-opened listen's acknowledgement",
    );
    const { honoured, refused } = acked(ack);
    expect(honoured).toEqual({ toolsListChanged: true });
    expect(refused).toMatchObject([
      { uri: A, error: { code: -32051, data: { error: "authorization_stale" } } },
    ]);
    // told once that A may have changed (its updates stop), by the gateway
    expect(updates(gw, A, "listen:0")).toHaveLength(1);
    // A's refusal is committed with the audit's next group, after the re-open went on: waited for
    const events = await waitForAuditEvents(
      gw.stateDir,
      (all) => all.some((e) => e.type === "authorization_denied" && e.epoch === next.epoch),
      "A's authorization_denied under the next epoch",
    );
    expect(
      events.find((e) => e.type === "authorization_denied" && e.epoch === next.epoch),
      JSON.stringify(events),
    ).toMatchObject({ tool: `resources/subscribe ${A}`, reason: "authorization_stale" });
    expect(
      events
        .filter((e) => e.type === "request_forwarded" && e.method === "subscriptions/listen")
        .map((e) => e.epoch),
    ).toEqual([first.epoch]);
    // the new process holds the listen without A
    expect((await touch(gw, A)).result).toBeDefined();
    await sleep(200);
    expect(updates(gw, A, "listen:0")).toHaveLength(1);
    expect(gw.messages().filter((m) => m.id === "listen:0")).toEqual([]);
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => /was re-opened on the new server process without its subscription to/.test(gw.stderr()),
      20_000,
      "the gateway's line on the listen re-opened",
    );
    expect(gw.stderr()).toMatch(
      /subscriptions\/listen .* was re-opened on the new server process without its subscription to/,
    );
  }, 90_000);

  it('under approval.resources "per-call" no human is asked to re-open its uris on a new process: a listen with nothing else is answered epoch_transition, one that also listens to tools goes on without them', async () => {
    const gw = gateway("per-call");
    await request(gw, "tools/list");
    listen(gw, "listen:0", [A]);
    const seen = new Set<string>();
    const asked = await nextStoredRequest(gw.stateDir, seen);
    seen.add(asked.request);
    await decideByCli(gw.stateDir, "approve", asked.request);
    await waitFor(() => acks(gw, "listen:0")[0], 20_000, "the acknowledgement");
    listen(gw, "listen:1", [A], false);
    const again = await nextStoredRequest(gw.stateDir, seen);
    await decideByCli(gw.stateDir, "approve", again.request);
    await waitFor(() => acks(gw, "listen:1")[0], 20_000, "the second acknowledgement");

    const first = serving(gw);
    process.kill(first.pid, "SIGKILL");
    await waitFor(() => serving(gw).epoch !== first.epoch || undefined, 20_000, "the next epoch");
    const answer = await gw.next((m) => m.id === "listen:1", 20_000);
    expect(answer.error?.data, JSON.stringify(answer)).toMatchObject({
      error: "epoch_transition",
      requestEpoch: first.epoch,
      currentEpoch: serving(gw).epoch,
    });
    const ack = await waitFor(
      () => acks(gw, "listen:0")[1],
      20_000,
      "the re-opened listen's acknowledgement",
    );
    expect(acked(ack).honoured).toEqual({ toolsListChanged: true });
    expect(acked(ack).refused).toMatchObject([{ uri: A, error: { data: { error: "epoch_transition" } } }]);
    expect(await pending(gw.stateDir)).toEqual([]);
    const events = await auditEvents(gw.stateDir);
    expect(events.filter((e) => e.type === "approval_requested")).toHaveLength(2);
    expect(events.filter((e) => e.type === "request_forwarded")).toHaveLength(2);
    expect(acks(gw, "listen:1")).toHaveLength(1);
    expect(gw.messages().filter((m) => m.id === "listen:0")).toEqual([]);
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => /with its resource subscriptions: approval.resources is "per-call"/.test(gw.stderr()),
      20_000,
      "the gateway's line on the listen not re-opened",
    );
    expect(gw.stderr()).toMatch(
      /was not re-opened on the new server process with its resource subscriptions: approval.resources is "per-call"/,
    );
  }, 90_000);

  it("one the client cancels while a human decides is never sent; a resourceSubscriptions that is not a list of strings, and a look-alike of the method, are refused by the gateway", async () => {
    const gw = gateway("per-call");
    await request(gw, "tools/list");
    listen(gw, "listen:0", [A]);
    const asked = await nextStoredRequest(gw.stateDir);
    gw.send({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: "listen:0", _meta: META },
    });
    // (answered by the gateway itself: the cancellation before it was read)
    const bad = await request(gw, "subscriptions/listen", { notifications: { resourceSubscriptions: A } });
    expect(bad.error).toMatchObject({ code: -32602 });
    expect(bad.error?.message).toMatch(
      /^subscriptions\/listen: notifications.resourceSubscriptions must be a list/,
    );
    const alike = await request(gw, "Subscriptions/Listen", {
      notifications: { resourceSubscriptions: [A] },
    });
    expect(alike.error).toMatchObject({ code: -32601 });
    // the gateway's stderr and its answer travel on different pipes: wait for the line
    const refusedAlike = /refused "Subscriptions\/Listen": not a known method, too close to a guarded one/;
    await waitFor(() => refusedAlike.test(gw.stderr()), 10_000, "the look-alike's refusal line");
    // approved after the cancellation: nothing is sent, nothing answered
    await decideByCli(gw.stateDir, "approve", asked.request);
    expect((await touch(gw, A)).result).toBeDefined();
    await sleep(200);
    expect(updates(gw, A, "listen:0")).toEqual([]);
    expect(acks(gw, "listen:0")).toEqual([]);
    expect(gw.messages().filter((m) => m.id === "listen:0")).toEqual([]);
    const events = await auditEvents(gw.stateDir);
    expect(events.filter((e) => e.type === "request_forwarded")).toEqual([]);
  }, 90_000);
  it('under approval.resources "session", a uri approved for one call only is asked of a human again when the listen is re-opened; approved for the session, the next re-open refuses it stale and asks nobody', async () => {
    // A one-call approval was spent on the first subscription: re-opening the uri on a new process
    // without asking would stretch it past the one call it was given for, so a human is asked (the
    // listen stays open meanwhile, nothing of the uri sent). A session grant is bound to its
    // process's epoch: on the next process it is stale, refused without asking (the client is told
    // and subscribes again through the guard).
    const gw = gateway("session");
    await request(gw, "tools/list");
    listen(gw, "listen:0", [A]);
    const seen = new Set<string>();
    const first = await nextStoredRequest(gw.stateDir, seen);
    await decideByCli(gw.stateDir, "approve", first.request, "--for", "call");
    await waitFor(() => acks(gw, "listen:0")[0], 20_000, "the acknowledgement");

    const one = serving(gw);
    process.kill(one.pid, "SIGKILL");
    const again = await nextStoredRequest(gw.stateDir, seen);
    expect(again.tool).toBe(`resources/subscribe ${A}`);
    await waitFor(() => serving(gw).epoch !== one.epoch || undefined, 20_000, "the next epoch");
    const two = serving(gw);
    expect(again.executionEpoch).toBe(two.epoch);
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => gw.stderr().includes(`on epoch ${two.epoch}`),
      20_000,
      "the gateway's line on the approval asked",
    );
    expect(gw.stderr()).toContain(
      `approval needed for "resources/subscribe ${A}" (asked as subscriptions/listen) (session) on epoch ${two.epoch}`,
    );
    // nothing re-opened while the human decides
    expect(acks(gw, "listen:0")).toHaveLength(1);
    await decideByCli(gw.stateDir, "approve", again.request);
    const reopened = await waitFor(
      () => acks(gw, "listen:0")[1],
      20_000,
      "the re-opened listen's acknowledgement",
    );
    expect(acked(reopened)).toEqual({
      honoured: { toolsListChanged: true, resourceSubscriptions: [A] },
      refused: undefined,
    });
    expect((await touch(gw, A)).result).toBeDefined();
    expect(updates(gw, A, "listen:0")).toHaveLength(1);

    // the session grant of the second process: stale on the third, refused there, nobody asked
    process.kill(two.pid, "SIGKILL");
    const stale = await waitFor(
      () => acks(gw, "listen:0")[2],
      20_000,
      "the second re-open's acknowledgement",
    );
    expect(acked(stale).refused).toMatchObject([
      { uri: A, error: { data: { error: "authorization_stale" } } },
    ]);
    expect(await pending(gw.stateDir)).toEqual([]);
    const events = await auditEvents(gw.stateDir);
    expect(events.filter((e) => e.type === "approval_requested")).toHaveLength(2);
    expect(gw.messages().filter((m) => m.id === "listen:0")).toEqual([]);
  }, 120_000);
  // The two faults run side by side (each with its own state directory, store lock, gateway and
  // teardown): most of their time is spent waiting for the store's patience to run out.
  it.concurrent("a fault while its re-open is decided (the store locked past every wait as a human is asked) answers the listen, saying so, and frees its id", async ({
    expect,
    onTestFinished,
  }) => {
    const teardown = teardownOf(onTestFinished);
    // Under "session", a uri approved for one call only (--for call) leaves no grant behind: the
    // re-open finds none stale and asks a human, whose request cannot be stored while another
    // process keeps the store locked; after the store's patience (30 s; 2 s here) that throws. Before, the
    // listen was then never answered (a warning on stderr only), its id held for ever.
    const gw = gateway(
      "session",
      { PORTCULLIS_BUSY_TIMEOUT_MS: "100", PORTCULLIS_BUSY_PATIENCE_MS: "2000" },
      "none",
      teardown,
    );
    await request(gw, "tools/list");
    listen(gw, "listen:0", [A], false);
    const asked = await nextStoredRequest(gw.stateDir);
    await decideByCli(gw.stateDir, "approve", asked.request, "--for", "call");
    await waitFor(() => acks(gw, "listen:0")[0], 20_000, "the acknowledgement");

    const lock = await holdStoreLock(gw.stateDir);
    teardown.push(() => lock.release());
    const first = serving(gw);
    process.kill(first.pid, "SIGKILL");
    const answer = await gw.next((m) => m.id === "listen:0", 60_000);
    await lock.release();
    expect(answer.error, JSON.stringify(answer)).toMatchObject({ code: -32603 });
    expect(answer.error?.message).toMatch(/failed while re-opening this subscriptions\/listen/);
    // (its line comes before the answer, on another pipe: waited for, not read at once)
    const faulted =
      /could not re-open the client's subscriptions\/listen "\\"listen:0\\"" on the new server process: .*locked/;
    await waitFor(() => faulted.test(gw.stderr()), 10_000, "the re-open's fault line");
    // its id is free again: a new listen under it is taken (and, the store free, decided)
    listen(gw, "listen:0", [B], false);
    const next = await nextStoredRequest(gw.stateDir, new Set([asked.request]));
    expect(next.tool).toBe(`resources/subscribe ${B}`);
  }, 120_000);
  it.concurrent("a fault while it is first decided (the store locked past every wait as a human is asked) answers the listen, saying so, and frees its id; a listen, call or read the client cancelled meanwhile is not answered", async ({
    expect,
    onTestFinished,
  }) => {
    const teardown = teardownOf(onTestFinished);
    // As the re-open's fault above, for the client's own listen. And one the client cancelled while
    // its decision was stuck: its id is free from the cancellation on, and the client's next
    // request under it (here a tools/list) must not be answered by the fault's internal error.
    // Before, the fault's error went out under the cancelled id all the same (calls and reads too).
    // The patience is the time within which the test must cancel: a decision whose patience ran out
    // before its cancellation was read is answered with its fault, legitimately, and its id then
    // had two answers. 2 s was outrun on a loaded machine (seen so, for listen:1): 10 s is room.
    const gw = gateway(
      "session",
      { PORTCULLIS_BUSY_TIMEOUT_MS: "100", PORTCULLIS_BUSY_PATIENCE_MS: "10000" },
      "session",
      teardown,
    );
    await request(gw, "tools/list");
    const lock = await holdStoreLock(gw.stateDir);
    teardown.push(() => lock.release());
    const stuck = (what: string) =>
      waitFor(
        () => gw.stderr().includes(`the approval request for "${what}" waits for it`) || undefined,
        20_000,
        `the approval request for ${what} waiting for the store`,
      );
    listen(gw, "listen:0", [A]);
    listen(gw, "listen:1", [B], false);
    gw.send({
      jsonrpc: "2.0",
      id: "call:2",
      method: "tools/call",
      params: { name: "touch", arguments: { uri: A }, _meta: META },
    });
    await stuck(`resources/subscribe ${A}`);
    await stuck(`resources/subscribe ${B}`);
    gw.send({ jsonrpc: "2.0", id: "read:3", method: "resources/read", params: { uri: A, _meta: META } });
    await stuck("touch");
    await stuck(`resources/read ${A}`);
    for (const id of ["listen:1", "call:2", "read:3"]) {
      gw.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, _meta: META } });
      // the client's next request under the freed id
      gw.send({ jsonrpc: "2.0", id, method: "tools/list", params: { _meta: META } });
    }
    const answer = await gw.next((m) => m.id === "listen:0", 60_000);
    expect(answer.error, JSON.stringify(answer)).toMatchObject({ code: -32603 });
    expect(answer.error?.message).toMatch(
      /failed while deciding this subscriptions\/listen, so no subscription was opened/,
    );
    // (its line comes before the answer, on another pipe: waited for, not read at once)
    await waitFor(
      () => /could not open the client's subscriptions\/listen "\\"listen:0\\"": .*locked/.test(gw.stderr()),
      10_000,
      "the listen's fault line",
    );
    // (the faults of the two cancelled: the gateway logs each, with or without an answer)
    const faulted =
      /could not (?:handle|open the client's) (?:subscriptions\/listen|tools\/call|resources\/read) .*(?:listen:1|call:2|read:3)/g;
    await waitFor(
      () => (gw.stderr().match(faulted)?.length === 3 ? true : undefined),
      60_000,
      "the cancelled listen's, call's and read's faults logged",
    );
    await lock.release();
    // each freed id answered once: by the tools/list sent under it, never by the fault
    for (const id of ["listen:1", "call:2", "read:3"]) {
      const answers = gw.messages().filter((m) => m.id === id && m.method === undefined);
      expect(answers, id).toHaveLength(1);
      expect(answers[0]!.result, id).toMatchObject({ tools: expect.any(Array) });
    }
    expect(gw.stderr().match(/which the client had cancelled: .*; not answered/g)).toHaveLength(3);
    // nothing of them was recorded as forwarded, and the store free again, listen:0 is taken anew
    expect((await auditEvents(gw.stateDir)).filter((e) => e.type === "request_forwarded")).toEqual([]);
    listen(gw, "listen:0", [B], false);
    const next = await nextStoredRequest(gw.stateDir);
    expect(next.tool).toBe(`resources/subscribe ${B}`);
    expect(gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 150_000);
  it("the acknowledgement's refusals are the gateway's words: a server that claims a refused uri honoured, or writes refusals of its own, is corrected; the listen it got never named the refused uri", async () => {
    const { gw, methods } = lenientGateway({ FIXTURE_LISTEN_FORGE: "test://forged" });
    await request(gw, "tools/list");
    listen(gw, "listen:0", [A, B]);
    const seen = new Set<string>();
    await decideByCli(gw.stateDir, "approve", (await nextStoredRequest(gw.stateDir, seen)).request);
    await decideByCli(gw.stateDir, "deny", (await nextStoredRequest(gw.stateDir, seen)).request);
    const ack = await waitFor(() => acks(gw, "listen:0")[0], 20_000, "the acknowledgement");
    const { honoured, refused } = acked(ack);
    // B taken out of what the server claims it honours; its forged refusal replaced by the gateway's
    expect(honoured).toEqual({ toolsListChanged: true, resourceSubscriptions: [A, "test://forged"] });
    expect(refused).toEqual([{ uri: B, error: expect.objectContaining({ code: -32057 }) }]);
    const got = listensAt(methods);
    // (the gateway's own listen is among them: it asks for tool-list changes only)
    expect(got.map((m) => m.params.notifications)).toContainEqual({
      toolsListChanged: true,
      resourceSubscriptions: [A],
    });
    expect(JSON.stringify(got)).not.toContain(B);

    // a listen with nothing refused: the server's own value under the key is not relayed
    gw.send({
      jsonrpc: "2.0",
      id: "listen:1",
      method: "subscriptions/listen",
      params: { notifications: { toolsListChanged: true }, _meta: META },
    });
    const plain = await waitFor(() => acks(gw, "listen:1")[0], 20_000, "the second acknowledgement");
    expect(acked(plain).refused).toBeUndefined();
  }, 90_000);
  it("the client closes its input while a human decides one of its uris: nothing of the listen is sent, neither the uri allowed nor the one never decided", async () => {
    const { gw, methods } = lenientGateway();
    await request(gw, "tools/list");
    listen(gw, "listen:0", [A, B, "test://c"]);
    const seen = new Set<string>();
    await decideByCli(gw.stateDir, "approve", (await nextStoredRequest(gw.stateDir, seen)).request);
    await nextStoredRequest(gw.stateDir, seen); // B waits for a human
    gw.closeStdin();
    const answer = await gw.next((m) => m.id === "listen:0", 20_000);
    expect(answer.error?.data, JSON.stringify(answer)).toMatchObject({ error: "authorization_required" });
    await waitFor(
      async () => (await auditEvents(gw.stateDir)).some((e) => e.type === "call_interrupted"),
      20_000,
      "A's record closed",
    );
    const events = await auditEvents(gw.stateDir);
    expect(events.find((e) => e.type === "call_interrupted")).toMatchObject({
      method: "subscriptions/listen",
      reason: "connection_ended",
      outcome: "not_forwarded",
    });
    // each uri has one end in the audit: A its intent closed, B the refusal of its cut-short wait,
    // and the uri the end came before refused identity_pending (before, it had none)
    expect(
      events.filter((e) => e.type === "authorization_denied").map((e) => [e.requestId, e.tool, e.reason]),
    ).toEqual([
      ["listen:0", `resources/subscribe ${B}`, "authorization_required"],
      ["listen:0", "resources/subscribe test://c", "identity_pending"],
    ]);
    // the only listen the server got is the gateway's own (tool-list changes)
    expect(listensAt(methods).map((m) => m.params.notifications)).toEqual(
      listensAt(methods).map(() => ({ toolsListChanged: true })),
    );
  }, 90_000);
});
