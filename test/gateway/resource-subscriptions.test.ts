// A client's resource subscriptions (legacy resources/subscribe) across server processes: a new
// process knows none of them, so the gateway re-opens each on it once its catalog is verified,
// through the guard as the client's own resources/subscribe would go (recorded against the new
// epoch). Without that, a client subscribed to a resource silently stopped receiving
// notifications/resources/updated after a rebuild or a crash. Real gateway, raw client,
// @modelcontextprotocol/server-everything (its `toggle-subscriber-updates` tool sends an update
// for every subscribed resource at once, before its answer).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents, decideByCli, nextStoredRequest, pending } from "../helpers/approvals.js";
import { waitForAuditEvents } from "../helpers/auditWait.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { EVERYTHING, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { serving } from "../helpers/serving.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/**
 * Calls `name` and resolves with its answer. server-everything adds tools after the handshake
 * (list_changed): the call is refused catalog_stale until the client has listed the latest, so it
 * lists again and calls again.
 */
async function call(gw: RawGateway, name: string): Promise<WireMessage> {
  for (let i = 0; i < 20; i++) {
    await gw.request("tools/list", {}, 20_000);
    const answer = await gw.request("tools/call", { name, arguments: {} }, 20_000);
    if ((answer.error?.data as { error?: string } | undefined)?.error !== "catalog_stale") return answer;
  }
  throw new Error(`${name} kept being refused catalog_stale`);
}

/** The notifications/resources/updated of `uri` the client got so far. */
function updates(gw: RawGateway, uri: string): WireMessage[] {
  return gw
    .messages()
    .filter(
      (m) => m.method === "notifications/resources/updated" && (m.params as { uri?: unknown })?.uri === uri,
    );
}

/** The uri of the first resource the server lists. */
async function firstResource(gw: RawGateway): Promise<string> {
  const listed = await gw.request("resources/list", {}, 20_000);
  return (listed.result as { resources: { uri: string }[] }).resources[0]!.uri;
}

describe("resource subscriptions across server processes", () => {
  it("a client subscribed to a resource still gets its updates from the next process: the subscription is re-opened there, recorded against the new epoch", async () => {
    const gw = rawGateway({
      args: ["--label", "everything", "--approval", "none", "--", NODE, ...EVERYTHING.args()],
      env: { PORTCULLIS_RESPAWN_BACKOFF_MS: "20" },
    });
    cleanup.push(() => gw.close());
    await gw.initialize({}, 20_000);
    const uri = await firstResource(gw);
    const subscribed = await gw.request("resources/subscribe", { uri }, 20_000);
    expect(subscribed.error, JSON.stringify(subscribed)).toBeUndefined();

    // the first process sends its update (the server's own behaviour, through the gateway)
    const first = serving(gw);
    expect((await call(gw, "toggle-subscriber-updates")).result).toBeDefined();
    expect(updates(gw, uri).length).toBeGreaterThanOrEqual(1);
    const before = updates(gw, uri).length;

    // the process dies; the next one knows nothing of the subscription
    process.kill(first.pid, "SIGKILL");
    await waitFor(() => serving(gw).epoch !== first.epoch || undefined, 20_000, "the next epoch");
    const next = serving(gw);
    // the gateway re-opens it there once its catalog is verified: its end is recorded
    const reopened = await waitFor(
      async () =>
        (await auditEvents(gw.stateDir)).find(
          (e) => e.type === "tool_result" && e.method === "resources/subscribe" && e.epoch === next.epoch,
        ),
      20_000,
      "the subscription re-opened on the next process",
    );
    expect(reopened).toMatchObject({ outcome: "ok" });
    const events = await auditEvents(gw.stateDir);
    // recorded before it was sent, against the new epoch, under the client's own request id
    const forwarded = events.filter(
      (e) => e.type === "request_forwarded" && e.method === "resources/subscribe",
    );
    expect(forwarded.map((e) => e.epoch)).toEqual([first.epoch, next.epoch]);
    expect(new Set(forwarded.map((e) => JSON.stringify(e.requestId))).size).toBe(1);
    expect(new Set(forwarded.map((e) => e.callKey)).size).toBe(2);

    // and the next process sends the client its updates (before the tool's answer)
    expect((await call(gw, "toggle-subscriber-updates")).result).toBeDefined();
    expect(updates(gw, uri).length).toBeGreaterThan(before);
    // the answer to the re-opened subscription was the gateway's: the client got answers to its own only
    const answers = gw.messages().filter((m) => m.method === undefined);
    expect(answers.filter((m) => typeof m.id !== "string" || !m.id.startsWith("raw-"))).toEqual([]);
    expect(gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 90_000);

  it("a client that unsubscribed gets no updates from the next process: nothing is re-opened", async () => {
    const gw = rawGateway({
      args: ["--label", "everything", "--approval", "none", "--", NODE, ...EVERYTHING.args()],
      env: { PORTCULLIS_RESPAWN_BACKOFF_MS: "20" },
    });
    cleanup.push(() => gw.close());
    await gw.initialize({}, 20_000);
    const uri = await firstResource(gw);
    expect((await gw.request("resources/subscribe", { uri }, 20_000)).error).toBeUndefined();
    expect((await gw.request("resources/unsubscribe", { uri }, 20_000)).error).toBeUndefined();

    const first = serving(gw);
    process.kill(first.pid, "SIGKILL");
    await waitFor(() => serving(gw).epoch !== first.epoch || undefined, 20_000, "the next epoch");
    expect((await call(gw, "toggle-subscriber-updates")).result).toBeDefined();
    expect(updates(gw, uri)).toEqual([]);
    const events = await auditEvents(gw.stateDir);
    expect(
      events.filter((e) => e.type === "request_forwarded" && e.method === "resources/subscribe"),
    ).toHaveLength(1);
  }, 90_000);

  it("one the new epoch's guard refuses is not re-opened silently: the client is sent resources/updated for it (so it reads it again, through the guard), and no update comes from that process", async () => {
    // approval.resources "session": the client's subscription was approved for the first epoch;
    // that grant is stale for the next
    const dir = tempDir();
    const args = EVERYTHING.args();
    writeFileSync(
      join(dir, "portcullis.json"),
      JSON.stringify({
        servers: { everything: { command: NODE, args, approval: { default: "none", resources: "session" } } },
      }),
    );
    const gw = rawGateway({ args: ["everything"], cwd: dir, env: { PORTCULLIS_RESPAWN_BACKOFF_MS: "20" } });
    cleanup.push(
      () => gw.close(),
      () => removeDir(dir),
    );
    await gw.initialize({}, 20_000);
    const uri = await firstResource(gw);
    const subscribing = gw.request("resources/subscribe", { uri }, 30_000);
    const asked = await nextStoredRequest(gw.stateDir);
    expect(asked.tool).toBe(`resources/subscribe ${uri}`);
    await decideByCli(gw.stateDir, "approve", asked.request);
    expect((await subscribing).error).toBeUndefined();

    const first = serving(gw);
    process.kill(first.pid, "SIGKILL");
    await waitFor(() => serving(gw).epoch !== first.epoch || undefined, 20_000, "the next epoch");
    const next = serving(gw);
    // the client is told: the resource's update, from the gateway
    await gw.next((m) => m.method === "notifications/resources/updated", 20_000);
    // the refusal's record is committed after the update was written: waited for, not read once
    const events = await waitForAuditEvents(
      gw.stateDir,
      (all) =>
        all.some(
          (e) =>
            e.type === "authorization_denied" &&
            e.tool === `resources/subscribe ${uri}` &&
            e.epoch === next.epoch,
        ),
      "the re-open's authorization_denied under the next epoch",
    );
    expect(
      events.find(
        (e) =>
          e.type === "authorization_denied" &&
          e.tool === `resources/subscribe ${uri}` &&
          e.epoch === next.epoch,
      ),
      JSON.stringify(events.filter((e) => e.type === "authorization_denied")),
    ).toMatchObject({ reason: "authorization_stale" });
    // never sent to the next process: its updates are not the client's
    const forwarded = events.filter(
      (e) => e.type === "request_forwarded" && e.method === "resources/subscribe",
    );
    expect(forwarded.map((e) => e.epoch)).toEqual([first.epoch]);
    expect((await call(gw, "toggle-subscriber-updates")).result).toBeDefined();
    expect(updates(gw, uri)).toHaveLength(1);
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => /subscription to .* was not re-opened on the new server process/.test(gw.stderr()),
      20_000,
      "the gateway's line on the subscription not re-opened",
    );
    expect(gw.stderr()).toMatch(/subscription to .* was not re-opened on the new server process/);
  }, 90_000);

  it('under approval.resources "session", a subscription approved for one call only is asked of a human again to be re-opened; approved, it is', async () => {
    // The rule a modern listen's uri follows too (docs/protocol-eras.md): no grant at all for the
    // uri (the one-call approval was spent on the first subscription), so a human is asked again.
    const dir = tempDir();
    const args = EVERYTHING.args();
    writeFileSync(
      join(dir, "portcullis.json"),
      JSON.stringify({
        servers: { everything: { command: NODE, args, approval: { default: "none", resources: "session" } } },
      }),
    );
    const gw = rawGateway({ args: ["everything"], cwd: dir, env: { PORTCULLIS_RESPAWN_BACKOFF_MS: "20" } });
    cleanup.push(
      () => gw.close(),
      () => removeDir(dir),
    );
    await gw.initialize({}, 20_000);
    const uri = await firstResource(gw);
    const subscribing = gw.request("resources/subscribe", { uri }, 30_000);
    const seen = new Set<string>();
    const asked = await nextStoredRequest(gw.stateDir, seen);
    await decideByCli(gw.stateDir, "approve", asked.request, "--for", "call");
    expect((await subscribing).error).toBeUndefined();

    const first = serving(gw);
    process.kill(first.pid, "SIGKILL");
    const again = await nextStoredRequest(gw.stateDir, seen);
    expect(again.tool).toBe(`resources/subscribe ${uri}`);
    await waitFor(() => serving(gw).epoch !== first.epoch || undefined, 20_000, "the next epoch");
    const next = serving(gw);
    expect(again.executionEpoch).toBe(next.epoch);
    await decideByCli(gw.stateDir, "approve", again.request);
    const reopened = await waitFor(
      async () =>
        (await auditEvents(gw.stateDir)).find(
          (e) => e.type === "tool_result" && e.method === "resources/subscribe" && e.epoch === next.epoch,
        ),
      20_000,
      "the subscription re-opened on the next process",
    );
    expect(reopened).toMatchObject({ outcome: "ok" });
    expect(updates(gw, uri)).toEqual([]);
  }, 90_000);

  it('under approval.resources "per-call" no human is asked to re-open it (the agent asked for no read then): it is not re-opened, and the client is sent resources/updated so that it reads it again through the guard', async () => {
    const dir = tempDir();
    const args = EVERYTHING.args();
    writeFileSync(
      join(dir, "portcullis.json"),
      JSON.stringify({
        servers: {
          everything: { command: NODE, args, approval: { default: "none", resources: "per-call" } },
        },
      }),
    );
    const gw = rawGateway({ args: ["everything"], cwd: dir, env: { PORTCULLIS_RESPAWN_BACKOFF_MS: "20" } });
    cleanup.push(
      () => gw.close(),
      () => removeDir(dir),
    );
    await gw.initialize({}, 20_000);
    const uri = await firstResource(gw);
    const subscribing = gw.request("resources/subscribe", { uri }, 30_000);
    const asked = await nextStoredRequest(gw.stateDir);
    await decideByCli(gw.stateDir, "approve", asked.request);
    expect((await subscribing).error).toBeUndefined();

    const first = serving(gw);
    process.kill(first.pid, "SIGKILL");
    await waitFor(() => serving(gw).epoch !== first.epoch || undefined, 20_000, "the next epoch");
    // the client is told at once: nobody is asked, nothing is sent to the next process
    await gw.next((m) => m.method === "notifications/resources/updated", 20_000);
    expect(await pending(gw.stateDir)).toEqual([]);
    const events = await auditEvents(gw.stateDir);
    expect(events.filter((e) => e.type === "approval_requested")).toHaveLength(1);
    expect(
      events.filter((e) => e.type === "request_forwarded" && e.method === "resources/subscribe"),
    ).toHaveLength(1);
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => /was not re-opened on the new server process: approval.resources is "per-call"/.test(gw.stderr()),
      20_000,
      "the gateway's line on the subscription not re-opened",
    );
    expect(gw.stderr()).toMatch(
      /was not re-opened on the new server process: approval.resources is "per-call"/,
    );
    expect((await call(gw, "toggle-subscriber-updates")).result).toBeDefined();
    expect(updates(gw, uri)).toHaveLength(1);
  }, 90_000);
});
