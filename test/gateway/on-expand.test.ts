// onExpand: an expanding catalog change within one epoch ends every grant of the run ("run",
// the default), or only stops the changed tool's grant covering it ("tool"). Real gateway, real
// catalog fixture, approvals given by the real CLI with the passphrase.
import { afterEach, describe, expect, it } from "vitest";
import { type Pending, pending, verifiedAuditEvents } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { onExpandGateway } from "../helpers/onExpandGateway.js";
import { passphraseEnv } from "../helpers/state.js";
import { FETCH, FETCH_URL, NOTE } from "../helpers/wikiTools.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** Makes a call, waits for its approval request, approves it for the session, and returns the request. */
async function approvedCall(
  stateDir: string,
  call: () => Promise<unknown>,
  seen: Set<string>,
): Promise<Pending> {
  const result = call();
  const req = await waitFor(
    async () => (await pending(stateDir)).find((p) => !seen.has(p.request)) ?? null,
    20_000,
    "an approval request",
  );
  seen.add(req.request);
  const r = await runCli(["approve", req.request, "--for", "session", "--state-dir", stateDir], {
    env: passphraseEnv(),
  });
  expect(r.code).toBe(0);
  await result;
  return req;
}

async function setup(onExpand: "run" | "tool") {
  const { stateDir, cat, gw } = await onExpandGateway(
    "wiki",
    ["--approval-timeout", "30000"],
    onExpand,
    [FETCH, NOTE],
    cleanup,
  );
  const seen = new Set<string>();
  await approvedCall(
    stateDir,
    () => gw.client.callTool({ name: "fetch_page", arguments: { page: "a" } }),
    seen,
  );
  await approvedCall(
    stateDir,
    () => gw.client.callTool({ name: "add_note", arguments: { text: "a" } }),
    seen,
  );
  // both covered for the session now: no new request
  await gw.client.callTool({ name: "add_note", arguments: { text: "b" } });
  expect((await pending(stateDir)).filter((p) => !seen.has(p.request))).toEqual([]);
  const from = gw.received().length;
  cat.write([FETCH_URL, NOTE]);
  await gw.waitForNotification("notifications/tools/list_changed", 10_000, from);
  await gw.client.listTools();
  return { stateDir, cat, gw, seen };
}

describe("onExpand", () => {
  it('"run" (the default): an expanding change to fetch_page makes the call of the unchanged add_note ask again', async () => {
    const { stateDir, cat, gw, seen } = await setup("run");
    const again = await approvedCall(
      stateDir,
      () => gw.client.callTool({ name: "add_note", arguments: { text: "c" } }),
      seen,
    );
    expect(again.tool).toBe("add_note");
    // the review shows what the run was approved under against what it would be approved for now
    const review = JSON.stringify(again);
    expect(review).toMatch(/"lastApprovedRevision":1/);
    expect(review).toMatch(/fetch_page/);
    expect(cat.records().map((r) => r.args.text ?? r.args.page)).toEqual(["a", "a", "b", "c"]);
    const mark = gw.stderr().length;
    await gw.close();
    expect(gw.stderr().slice(0, mark)).toMatch(/expands authority \(fetch_page\)/);
    // the audit says why: grants_revoked with the expanding entry (every event decrypted at once,
    // not one `audit show` process per record: each of those verified the whole chain again)
    const events = await verifiedAuditEvents(stateDir);
    const revoked = events.filter((e) => e.type === "grants_revoked");
    expect(revoked).toHaveLength(1);
    expect(revoked[0]).toMatchObject({
      reason: "catalog change expands authority",
      previousRevision: 1,
      revision: 2,
      expanding: [expect.objectContaining({ tool: "fetch_page", kind: "modified" })],
    });
    expect((revoked[0]!.grants as string[]).length).toBe(2);
  });

  it('"tool": the unchanged add_note stays covered; only fetch_page asks again', async () => {
    const { stateDir, cat, gw, seen } = await setup("tool");
    await gw.client.callTool({ name: "add_note", arguments: { text: "c" } });
    expect((await pending(stateDir)).filter((p) => !seen.has(p.request))).toEqual([]);
    expect(cat.records().map((r) => r.args.text ?? r.args.page)).toEqual(["a", "a", "b", "c"]);
    // the changed tool's grant no longer covers it
    const err = await gw.client.callTool({ name: "fetch_page", arguments: { page: "d" } }).catch((e) => e);
    expect(err).toMatchObject({ code: -32051, data: { reason: "tool authority expanded" } });
  });
});
