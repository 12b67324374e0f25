// An expanding change within one epoch, and a client that has not listed since: what its next
// call of the changed tool is told depends on onExpand (docs/design.md, step 2). Under "tool" the
// grant is kept and stops covering the changed tool, so step 2 refuses the call
// authorization_stale, with the revisions (the client is behind too). Under "run" (the default)
// the change ended the run's grants when it was seen: no grant is left to be stale, so the call is
// catalog_stale (step 3), and once the client lists, it asks a human. Real gateway, real catalog
// fixture, approvals given by the real CLI with the passphrase.
import { afterEach, describe, expect, it } from "vitest";
import { pending } from "../helpers/approvals.js";
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

type Refusal = { code: number; data: Record<string, unknown> };

/** fetch_page approved for the session, then changed in a way that expands it; the client does not list again. */
async function expandedUnlisted(onExpand: "run" | "tool") {
  const { stateDir, cat, gw } = await onExpandGateway(
    "wiki",
    ["--approval-timeout", "30000"],
    onExpand,
    [FETCH, NOTE],
    cleanup,
  );
  const call = gw.client.callTool({ name: "fetch_page", arguments: { page: "a" } });
  const req = await waitFor(async () => (await pending(stateDir))[0], 20_000, "an approval request");
  const approved = await runCli(["approve", req.request, "--for", "session", "--state-dir", stateDir], {
    env: passphraseEnv(),
  });
  expect(approved.code, approved.stderr).toBe(0);
  await call;
  const from = gw.received().length;
  cat.write([FETCH_URL, NOTE]);
  await gw.waitForNotification("notifications/tools/list_changed", 10_000, from);
  const refused = (await gw.client
    .callTool({ name: "fetch_page", arguments: { page: "b" } })
    .catch((e) => e)) as Refusal;
  return { stateDir, cat, gw, refused, first: req.request };
}

describe("an expanded tool called by a client that has not listed since", () => {
  it('"tool": authorization_stale (tool authority expanded), with the revisions', async () => {
    const { refused, cat } = await expandedUnlisted("tool");
    expect(refused.code, JSON.stringify(refused)).toBe(-32051);
    expect(refused.data).toMatchObject({
      error: "authorization_stale",
      reason: "tool authority expanded",
      changedTools: ["fetch_page"],
      seenRevision: 1,
      currentRevision: 2,
    });
    expect(cat.records().map((r) => r.args.page)).toEqual(["a"]);
  });

  it('"run": catalog_stale, the grant having ended with the change; once listed, the call asks a human', async () => {
    const { stateDir, refused, cat, gw, first } = await expandedUnlisted("run");
    expect(refused.code, JSON.stringify(refused)).toBe(-32052);
    expect(refused.data).toMatchObject({
      error: "catalog_stale",
      tool: "fetch_page",
      seenRevision: 1,
      currentRevision: 2,
    });
    await gw.client.listTools();
    // its refusal handled from the start: it comes while `deny` runs, before the await below
    const again = gw.client
      .callTool({ name: "fetch_page", arguments: { page: "c", url: "https://example.com" } })
      .catch((e) => e);
    const req = await waitFor(
      async () => (await pending(stateDir)).find((p) => p.request !== first),
      20_000,
      "a new approval request",
    );
    expect(req.tool).toBe("fetch_page");
    const denied = await runCli(["deny", req.request, "--state-dir", stateDir], { env: passphraseEnv() });
    expect(denied.code, denied.stderr).toBe(0);
    expect(((await again) as Refusal).code).toBe(-32057);
    expect(cat.records().map((r) => r.args.page)).toEqual(["a"]);
  });
});
