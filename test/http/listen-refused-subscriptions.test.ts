// A 2026-07-28 client's subscriptions/listen over the HTTP front (`run --listen`), one of its
// resource uris refused by a human and the other approved: the listen goes on with the rest, the
// acknowledgement on its SSE stream names the refused uri under
// `_meta["portcullis/refusedSubscriptions"]`, and the SDK's honoured filter leaves it out. The
// stdio side is test/gateway/listen-resources.test.ts; this is the same through the real HTTP
// front, with the v2 SDK client (its fetch tapped to read the acknowledgement as it was sent).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client, type FetchLike, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents, decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { startListener } from "./listen.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const A = "test://a";
const B = "test://b";
const SUB = "io.modelcontextprotocol/subscriptionId";
const REFUSED = "portcullis/refusedSubscriptions";

type Message = { method?: string; params?: { _meta?: Record<string, unknown> } & Record<string, unknown> };

/** A fetch that hands the SDK every response as it came, and keeps each SSE event's message. */
function tapped(into: Message[]): FetchLike {
  return async (url, init) => {
    const res = await fetch(url, init);
    if (!res.body || !res.headers.get("content-type")?.includes("text/event-stream")) return res;
    const [mine, theirs] = res.body.tee();
    void (async () => {
      const reader = mine.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
        if (done) return;
        buffer += value;
        for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
          const line = buffer.slice(0, nl).replace(/\r$/, "");
          buffer = buffer.slice(nl + 1);
          if (!line.startsWith("data:")) continue;
          try {
            into.push(JSON.parse(line.slice(5)) as Message);
          } catch {
            // (a priming event, or one split oddly: not what this test reads)
          }
        }
      }
    })();
    return new Response(theirs, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

describe("a partly refused subscriptions/listen over run --listen", () => {
  it("one uri denied by a human, the other approved: the listen goes on with the rest, its acknowledgement names the refused uri and why, and the refused uri's updates never come", async () => {
    const dir = tempDir("portcullis-listen-refused-");
    cleanup.push(() => removeDir(dir));
    writeFileSync(
      join(dir, "portcullis.json"),
      JSON.stringify({
        servers: {
          modern: {
            command: NODE,
            args: [FIXTURES.modern],
            env: { FIXTURE_RESOURCES: `${A},${B}` },
            listen: "127.0.0.1:0",
            approval: { default: "none", resources: "per-call" },
          },
        },
      }),
    );
    const l = await startListener([], {
      label: "modern",
      configFile: join(dir, "portcullis.json"),
      args: ["--approval-timeout", "60000"],
    });
    cleanup.push(() => l.close());
    const wire: Message[] = [];
    const client = new Client(
      { name: "v2-http-listen-refused", version: "1" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    const updated: string[] = [];
    client.setNotificationHandler("notifications/resources/updated", (n) => {
      updated.push(String(n.params.uri));
    });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(l.url), {
        requestInit: { headers: { authorization: `Bearer ${l.token}` } },
        fetch: tapped(wire),
      }),
    );
    cleanup.push(() => client.close());
    await client.listTools();

    const opening = client.listen({ toolsListChanged: true, resourceSubscriptions: [A, B] });
    const seen = new Set<string>();
    const askedA = await nextStoredRequest(l.stateDir, seen);
    expect(askedA.tool).toBe(`resources/subscribe ${A}`);
    await decideByCli(l.stateDir, "approve", askedA.request);
    const askedB = await nextStoredRequest(l.stateDir, seen);
    expect(askedB.tool).toBe(`resources/subscribe ${B}`);
    await decideByCli(l.stateDir, "deny", askedB.request);
    const subscription = await opening;
    cleanup.push(() => subscription.close());

    // what the SDK made of it: the honoured filter, without the refused uri
    expect(subscription.honoredFilter).toEqual({ toolsListChanged: true, resourceSubscriptions: [A] });
    // and what the front sent on the listen's stream: why B is not in it
    const ack = await waitFor(
      () => wire.find((m) => m.method === "notifications/subscriptions/acknowledged"),
      10_000,
      "the acknowledgement on the wire",
    );
    const meta = ack.params!._meta!;
    expect(typeof meta[SUB]).toBe("string");
    expect(meta[REFUSED]).toEqual([
      {
        uri: B,
        error: expect.objectContaining({
          code: -32057,
          message: expect.any(String),
          data: expect.objectContaining({ error: "approval_denied" }),
        }),
      },
    ]);

    // the server holds A for this listen, and not B: B's touch first, then A's, whose update
    // comes on the same stream after any of B's would have
    expect((await client.callTool({ name: "touch", arguments: { uri: B } })).isError).toBeFalsy();
    expect((await client.callTool({ name: "touch", arguments: { uri: A } })).isError).toBeFalsy();
    await waitFor(() => (updated.includes(A) ? true : undefined), 20_000, "A's update on the listen");
    expect(updated).toEqual([A]);

    const events = await auditEvents(l.stateDir);
    expect(events.find((e) => e.type === "authorization_denied")).toMatchObject({
      tool: `resources/subscribe ${B}`,
      reason: "approval_denied",
    });
    expect(
      events.filter((e) => e.type === "request_forwarded").map((e) => e.method),
      JSON.stringify(events),
    ).toEqual(["subscriptions/listen"]);
  }, 90_000);
});
