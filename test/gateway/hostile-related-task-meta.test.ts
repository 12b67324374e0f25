// The gateway offers no 2025-11-25 tasks (docs/protocol-eras.md, "Tasks"): it takes `params.task`
// out of a call so that the server answers a plain one, whose answer the audit records as the
// call's result. A request can also be tied to a task through its `_meta`
// ("io.modelcontextprotocol/related-task"), and a server on the official SDK with a task message
// queue (server-everything is one) then runs it and queues its answer for that task instead of
// sending it: the call ran, its outcome never reached the gateway (a `tasks/result`, which the
// gateway refuses, is the only way out), its intent stayed open, and with it the egress release
// window of its grant. The key is taken out of a call's and a guarded read's `_meta`, whatever
// else `_meta` holds goes on. Real gateway in front of the unmodified server-everything.

import { existsSync, readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { completeLines } from "../helpers/completeLines.js";
import { waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { lenientListenGateway } from "../helpers/lenientListens.js";
import { modernMeta } from "../helpers/modernMeta.js";
import { EVERYTHING, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const RELATED_TASK = "io.modelcontextprotocol/related-task";

describe("a request tied to a task through its _meta", () => {
  it("a call and a read are answered as plain ones: the key never reaches the server", async () => {
    const gw = rawGateway({
      args: ["--label", "everything", "--approval", "none", "--", NODE, ...EVERYTHING.args()],
    });
    cleanup.push(() => gw.close());
    await gw.initialize();
    await gw.request("tools/list", {});

    gw.send({
      jsonrpc: "2.0",
      id: "tied-call",
      method: "tools/call",
      params: {
        name: "echo",
        arguments: { message: "tied" },
        _meta: { progressToken: "p-1", [RELATED_TASK]: { taskId: "made-up" } },
      },
    });
    const call = await gw.next((m: WireMessage) => m.id === "tied-call", 15_000);
    expect(call.result).toEqual({ content: [{ type: "text", text: "Echo: tied" }] });

    gw.send({
      jsonrpc: "2.0",
      id: "tied-read",
      method: "resources/read",
      params: {
        uri: "demo://resource/static/document/architecture.md",
        _meta: { [RELATED_TASK]: { taskId: "made-up" } },
      },
    });
    const read = await gw.next((m: WireMessage) => m.id === "tied-read", 15_000);
    expect(read.error).toBeUndefined();
    expect((read.result as { contents: unknown[] }).contents.length).toBeGreaterThan(0);

    await waitFor(() => gw.stderr().split(RELATED_TASK).length > 2, 10_000, "the gateway's lines");
    expect(gw.stderr()).toMatch(
      /tools\/call "echo": left out 1 member \("_meta\.io\.modelcontextprotocol\/related-task"\)/,
    );
  }, 60_000);

  it("a 2026-07-28 listen that names a resource goes without it too", async () => {
    const { gw, methods } = lenientListenGateway(cleanup, { resources: "none" });
    const envelope = modernMeta({}, { name: "related-task-test", version: "1.0.0" });
    await gw.request("tools/list", { _meta: envelope }, 30_000);
    gw.send({
      jsonrpc: "2.0",
      id: "listen:0",
      method: "subscriptions/listen",
      params: {
        notifications: { resourceSubscriptions: ["test://a"] },
        _meta: { ...envelope, [RELATED_TASK]: { taskId: "made-up" } },
      },
    });
    const theirs = () =>
      (existsSync(methods) ? completeLines(readFileSync(methods, "utf8")) : [])
        .map(
          (l) =>
            JSON.parse(l) as {
              method: string;
              params: { notifications?: Record<string, unknown>; _meta?: Record<string, unknown> };
            },
        )
        .filter(
          (m) =>
            m.method === "subscriptions/listen" &&
            m.params.notifications?.resourceSubscriptions !== undefined,
        );
    const [sent] = await waitFor(
      () => (theirs().length > 0 ? theirs() : null),
      20_000,
      "the client's listen at the server",
    );
    expect(sent!.params.notifications).toEqual({ resourceSubscriptions: ["test://a"] });
    expect(sent!.params._meta).toEqual(envelope);
  }, 60_000);
});
