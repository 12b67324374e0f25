// A 2026-07-28 subscriptions/listen for resources refused server_unavailable (supervision paused
// after a crash loop: no server runs until its files change) is recorded as the guard's refusal
// of its uris is: one authorization_denied per uri, reason server_unavailable, `tool`
// `resources/subscribe URI`. And since each uri refused is one record, a listen may name at most
// 1,000 uris (MAX_LISTEN_URIS): one naming more is refused -32602 whole, before anything of it is
// recorded. Real gateway (dist, `--on-change restart`), the revisioned inventory project whose
// build is broken to make the crash loop, a raw client on plain pipes; the audit read back with
// its chain verified.
//
// What failed before the bound: a listen of 1,001 uris (or as many as 64 MiB of text holds) made
// one record per uri.
import { readFileSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { argumentsDigest } from "../../src/audit/events.js";
import { verifiedAuditEvents } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { modernMeta } from "../helpers/modernMeta.js";
import { makeProject } from "../helpers/project.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { gatewayRow } from "../helpers/status.js";

/** MAX_LISTEN_URIS (src/gateway/guardedRequests.ts), written out: the case is also run against a gateway without it */
const MAX_LISTEN_URIS = 1000;

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const MODERN_META = modernMeta();

/**
 * A gateway whose server's build was broken after it served: five crashes, then supervision
 * paused until the server's files change (every guarded request refused server_unavailable at
 * once). Its respawns wait 20 ms, 40 ms… (what is tested is the pause, not the backoff).
 */
async function pausedGateway(): Promise<{ gw: RawGateway; epoch: string }> {
  const project = makeProject("B");
  cleanup.push(() => project.cleanup());
  const gw = rawGateway({
    args: ["--label", "paused", "--approval", "none", "--on-change", "restart", "--", ...project.command],
    cwd: project.dir,
    env: { ...project.env, PORTCULLIS_RESPAWN_BACKOFF_MS: "20" },
  });
  cleanup.push(() => gw.close());
  await gw.initialize();
  expect((await gw.request("tools/list", {}, 10_000)).result).toBeDefined();
  writeFileSync(project.entry, `${readFileSync(project.entry, "utf8")}\nthis is not javascript (;\n`);
  await waitFor(
    () => /server keeps crashing .*waits for the next change/.test(gw.stderr()),
    30_000,
    "the pause",
  );
  const row = await gatewayRow(gw.stateDir, (r) => r.state === "paused", "the row to say paused");
  return { gw, epoch: row.epoch as string };
}

/** Sends a listen for `uris` under `id`; resolves with its answer. */
function listen(gw: RawGateway, id: string, uris: string[]) {
  gw.send({
    jsonrpc: "2.0",
    id,
    method: "subscriptions/listen",
    params: { _meta: MODERN_META, notifications: { toolsListChanged: true, resourceSubscriptions: uris } },
  });
  return gw.next((m) => m.id === id && m.method === undefined, 20_000);
}

/** The gateway's authorization_denied records, once it exited, its chain verified. */
async function deniedAtEnd(gw: RawGateway) {
  gw.closeStdin();
  await gw.exited;
  return (await verifiedAuditEvents(gw.stateDir)).filter((e) => e.type === "authorization_denied");
}

describe("a listen for resources refused while no server runs", () => {
  it("server_unavailable: one record per uri, as the guard's refusal of it", async () => {
    const { gw, epoch } = await pausedGateway();
    const uris = ["inventory://a", "inventory://b", "inventory://c"];
    // a uri named twice is one subscription, and one record
    const answer = await listen(gw, "listen", [...uris, uris[1]!]);
    expect(answer.error?.data, JSON.stringify(answer)).toMatchObject({ error: "server_unavailable" });
    const denied = await deniedAtEnd(gw);
    expect(denied.map((e) => [e.requestId, e.tool, e.reason])).toEqual(
      uris.map((u) => ["listen", `resources/subscribe ${u}`, "server_unavailable"]),
    );
    for (const [i, uri] of uris.entries())
      expect(denied[i]).toMatchObject({
        epoch,
        serverLabel: "paused",
        argumentsDigest: argumentsDigest({ uri }),
      });
    // each a call key of its own
    expect(new Set(denied.map((e) => e.callKey)).size).toBe(uris.length);
  }, 90_000);

  it(`a listen naming more than ${MAX_LISTEN_URIS} uris is refused -32602 before any record; ${MAX_LISTEN_URIS} are taken`, async () => {
    const { gw } = await pausedGateway();
    const many = (n: number, tag: string) => [...Array(n).keys()].map((i) => `inventory://${tag}/${i}`);
    const over = await listen(gw, "over", many(MAX_LISTEN_URIS + 1, "over"));
    expect(over.error, JSON.stringify(over)).toMatchObject({
      code: -32602,
      message: expect.stringMatching(/names 1001 resource uris; portcullis takes at most 1000 in one listen/),
    });
    // at the bound: decided as any listen is (here refused server_unavailable, each uri recorded)
    const at = await listen(gw, "at", many(MAX_LISTEN_URIS, "at"));
    expect(at.error?.data, JSON.stringify(at)).toMatchObject({ error: "server_unavailable" });
    const denied = await deniedAtEnd(gw);
    // before: 1,001 records of the refused listen's uris, besides the 1,000 of the one at the bound
    expect(denied.filter((e) => e.requestId === "over")).toEqual([]);
    expect(denied.filter((e) => e.requestId === "at")).toHaveLength(MAX_LISTEN_URIS);
    expect(gw.stderr()).toMatch(
      /refused a subscriptions\/listen of the client's: it names 1001 resource uris/,
    );
  }, 90_000);
});
