// A 2026-07-28 subscriptions/listen names the resources it wants updates of in
// `params.notifications.resourceSubscriptions`, and only those uris are decided (approval.resources).
// Its other members went to the server as written: a listen with no `resourceSubscriptions` was
// relayed whole, and one with them kept the rest. A lenient server that takes uris from another
// member (`notifications.resourceSubscription`, a top-level `params.resourceSubscriptions`, a
// string where a flag is) subscribes to resources no human approved. Only the members the
// protocol's schema gives a listen go to the server, the rest named on stderr. Real gateway, the
// lenient fixture (which logs the params of every request it gets), the decision by the real CLI.

import { existsSync, readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { completeLines } from "../helpers/completeLines.js";
import { waitFor } from "../helpers/files.js";
import { lenientListenGateway } from "../helpers/lenientListens.js";
import { modernMeta } from "../helpers/modernMeta.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const SECRET = "test://secret";
const CLIENT = "listen-extra-params-test";
const envelope = modernMeta({}, { name: CLIENT, version: "1.0.0" });

type Logged = { method: string; params: Record<string, unknown> & { _meta?: Record<string, unknown> } };

describe("a 2026-07-28 listen's members beyond its filter", () => {
  it("never reach the server, whether the listen names resources or not", async () => {
    const { gw, methods } = lenientListenGateway(cleanup, { resources: "per-call" });
    // the client's listens at the server (the gateway's own, which listens to tools under the
    // client's envelope, aside)
    const theirs = () =>
      (existsSync(methods) ? completeLines(readFileSync(methods, "utf8")) : [])
        .map((l) => JSON.parse(l) as Logged)
        .filter(
          (m) =>
            m.method === "subscriptions/listen" &&
            (m.params?.notifications as { toolsListChanged?: unknown } | undefined)?.toolsListChanged ===
              undefined &&
            JSON.stringify(m.params?._meta?.["io.modelcontextprotocol/clientInfo"] ?? null).includes(CLIENT),
        );
    await gw.request("tools/list", { _meta: envelope }, 30_000);

    // no resourceSubscriptions: relayed with no decision, the uris elsewhere (and the
    // related-task key, docs/protocol-eras.md "Tasks") with it before
    gw.send({
      jsonrpc: "2.0",
      id: "listen:0",
      method: "subscriptions/listen",
      params: {
        notifications: {
          resourcesListChanged: true,
          promptsListChanged: SECRET,
          resourceSubscription: [SECRET],
          uris: [SECRET],
        },
        resourceSubscriptions: [SECRET],
        uri: SECRET,
        _meta: { ...envelope, "io.modelcontextprotocol/related-task": { taskId: "made-up" } },
      },
    });
    const [plain] = await waitFor(
      () => (theirs().length > 0 ? theirs() : null),
      20_000,
      "the client's first listen at the server",
    );
    expect(plain!.params).toEqual({ notifications: { resourcesListChanged: true }, _meta: envelope });

    // resourceSubscriptions decided (a human approves test://a), the other members beside them
    gw.send({
      jsonrpc: "2.0",
      id: "listen:1",
      method: "subscriptions/listen",
      params: {
        notifications: { resourceSubscriptions: ["test://a"], resourceSubscription: [SECRET] },
        resourceSubscriptions: [SECRET],
        _meta: envelope,
      },
    });
    const asked = await nextStoredRequest(gw.stateDir);
    expect(asked.tool).toBe("resources/subscribe test://a");
    await decideByCli(gw.stateDir, "approve", asked.request);
    const [, named] = await waitFor(
      () => (theirs().length > 1 ? theirs() : null),
      20_000,
      "the client's second listen at the server",
    );
    expect(named!.params).toEqual({
      notifications: { resourceSubscriptions: ["test://a"] },
      _meta: envelope,
    });

    // no params at all, the filter written beside them: nothing of it goes (the fixture logs only
    // params, so the gateway's line says what it left out)
    gw.send({
      jsonrpc: "2.0",
      id: "listen:2",
      method: "subscriptions/listen",
      notifications: { resourceSubscriptions: [SECRET] },
      Params: { notifications: { resourceSubscriptions: [SECRET] } },
    });
    await waitFor(
      () => gw.stderr().includes('subscriptions/listen "listen:2": left out'),
      10_000,
      "the gateway's line on the third listen",
    );
    expect(gw.stderr()).toContain(
      'subscriptions/listen "listen:2": left out 2 members ("notifications", "Params")',
    );

    expect(JSON.stringify(theirs())).not.toContain(SECRET);
    await waitFor(
      () => gw.stderr().includes('subscriptions/listen "listen:1": left out'),
      10_000,
      "the lines",
    );
    expect(gw.stderr()).toContain(
      'subscriptions/listen "listen:0": left out 6 members ("notifications.promptsListChanged", "notifications.resourceSubscription", "notifications.uris", "resourceSubscriptions", "uri", …)',
    );
    expect(gw.stderr()).toContain(
      'subscriptions/listen "listen:1": left out 2 members ("notifications.resourceSubscription", "resourceSubscriptions")',
    );
  }, 60_000);

  // A guarded read whose `_meta` is no object, or whose progress token is neither a string nor a
  // number (or an integer that would go out as another number), is refused -32602; a listen that
  // names no resource was relayed with them, and a server's SDK drops such a request unanswered.
  // Its other `_meta` keys go on, as a read's do. A long listen id is cut in the gateway's line.
  it("a _meta a guarded read is refused for is refused on a listen too; a long id is cut in its lines", async () => {
    const { gw, methods } = lenientListenGateway(cleanup, { resources: "per-call" });
    // the client's listens at the server whose `_meta` no read would be sent with, or with a token
    const atServer = () =>
      (existsSync(methods) ? completeLines(readFileSync(methods, "utf8")) : [])
        .map((l) => JSON.parse(l) as { method: string; params?: { _meta?: unknown } })
        .filter((m) => m.method === "subscriptions/listen")
        .map((m) => m.params?._meta)
        .filter((meta) => typeof meta !== "object" || meta === null || "progressToken" in meta);
    await gw.request("tools/list", { _meta: envelope }, 30_000);
    const filter = { resourcesListChanged: true };
    gw.send({
      jsonrpc: "2.0",
      id: "meta:0",
      method: "subscriptions/listen",
      params: { notifications: filter, _meta: "not an object" },
    });
    gw.send({
      jsonrpc: "2.0",
      id: "meta:1",
      method: "subscriptions/listen",
      params: { notifications: filter, _meta: { ...envelope, progressToken: true } },
    });
    // an integer JSON.parse reads as another double: written by hand
    gw.send(
      `{"jsonrpc":"2.0","id":"meta:2","method":"subscriptions/listen","params":{"notifications":{"resourcesListChanged":true},"_meta":${JSON.stringify({ ...envelope, progressToken: 0 }).replace('"progressToken":0', '"progressToken":9007199254740993')}}}\n`,
    );
    const refused = async (id: string) => (await gw.next((m) => m.id === id, 10_000)).error;
    expect(await refused("meta:0")).toMatchObject({
      code: -32602,
      message: "subscriptions/listen: params._meta must be an object.",
    });
    expect(await refused("meta:1")).toMatchObject({
      code: -32602,
      message: "subscriptions/listen: params._meta.progressToken must be a string or a number.",
    });
    expect((await refused("meta:2"))?.message).toContain(
      "params._meta.progressToken 9007199254740993 is a number the gateway reads as a double",
    );

    // a good token and a key beside the envelope go on (as a read's), under an id of 200
    // characters and a member the listen has not; the gateway's line names 80 of it
    const long = `L${"o".repeat(198)}g`;
    gw.send({
      jsonrpc: "2.0",
      id: long,
      method: "subscriptions/listen",
      params: { notifications: filter, uri: SECRET, _meta: { ...envelope, progressToken: "p1", beside: 1 } },
    });
    const seen = await waitFor(
      () => (atServer().length > 0 ? atServer() : null),
      20_000,
      "the good listen at the server",
    );
    // the three refused were sent first, on the same pipe: none of them is there
    expect(seen).toEqual([{ ...envelope, progressToken: "p1", beside: 1 }]);
    await waitFor(
      () => gw.stderr().includes('subscriptions/listen "Lo'),
      10_000,
      "the gateway's line on the long listen",
    );
    expect(gw.stderr()).toContain(`subscriptions/listen "L${"o".repeat(78)}…: left out 1 member ("uri")`);
    // the same id again while that listen is open: refused, and cut in that line too
    gw.send({ jsonrpc: "2.0", id: long, method: "subscriptions/listen", params: { notifications: filter } });
    expect((await gw.next((m) => m.id === long && m.error !== undefined, 10_000)).error?.code).toBe(-32600);
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => gw.stderr().includes("that id is already in use by a request in flight"),
      20_000,
      "the gateway's line on the refused listen",
    );
    expect(gw.stderr()).toContain(
      `refused subscriptions/listen "L${"o".repeat(78)}…: that id is already in use by a request in flight`,
    );
    expect(gw.stderr()).not.toContain("o".repeat(100));
  }, 60_000);
});
