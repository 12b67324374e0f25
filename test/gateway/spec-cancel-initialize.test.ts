// MCP (basic/utilities/cancellation): "The `initialize` request MUST NOT be cancelled by clients."
// The official SDK's client does send one: its request timeout (60 s by default, a host's connect
// timeout) cancels whatever request it times out, `initialize` included. The gateway is the
// server's client: it must not pass that cancellation on. The client's initialize is over for
// the client (it gets no answer, its id is free), and the server, not told, answers it; that late
// answer is dropped, and the client's next initialize is served.
import { readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { completeLines } from "../helpers/completeLines.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";

describe("a client that cancels its initialize (the SDK's timeout does)", () => {
  it("the cancellation is not passed on to the server; the client's next initialize is served", async () => {
    const dir = tempDir("portcullis-cancel-init-");
    const methodLog = join(dir, "methods.log");
    const hold = join(dir, "hold");
    writeFileSync(hold, "");
    const gw = rawGateway({
      args: ["--label", "lenient", "--approval", "none", "--", NODE, FIXTURES.lenient],
      env: { FIXTURE_METHOD_LOG: methodLog, FIXTURE_INIT_HOLD: hold },
    });
    const logged = () => {
      try {
        return completeLines(readFileSync(methodLog, "utf8")).map(
          (l) => JSON.parse(l) as { method: string; params: unknown },
        );
      } catch {
        return [];
      }
    };
    const params = {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "c", version: "1" },
    };
    try {
      gw.send({ jsonrpc: "2.0", id: 0, method: "initialize", params });
      await waitFor(
        () => logged().some((r) => r.method === "held initialize") || null,
        20_000,
        "the held initialize",
      );
      // what the SDK sends when its request times out
      gw.send({
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: 0, reason: "McpError: MCP error -32001: Request timed out" },
      });
      // a ping written after it, answered by the server: what went before it was read there
      gw.send({ jsonrpc: "2.0", id: "after", method: "ping" });
      expect((await gw.next((m) => m.id === "after")).result).toEqual({});
      expect(logged().filter((r) => r.method === "notifications/cancelled")).toEqual([]);

      // the server answers it late: not to the client, which gave up on it
      unlinkSync(hold);
      await waitFor(
        () => logged().some((r) => r.method === "answered initialize") || null,
        20_000,
        "the late answer",
      );
      // the client tries again, and its session goes on
      gw.send({ jsonrpc: "2.0", id: 1, method: "initialize", params });
      expect((await gw.next((m) => m.id === 1)).result).toMatchObject({ protocolVersion: "2025-11-25" });
      gw.send({ jsonrpc: "2.0", method: "notifications/initialized" });
      const list = await gw.request("tools/list");
      expect(list.result.tools.map((t: { name: string }) => t.name)).toContain("echo");
      expect(gw.messages().filter((m) => m.id === 0)).toEqual([]);
      expect(logged().filter((r) => r.method === "notifications/cancelled")).toEqual([]);
    } finally {
      await gw.close();
    }
  });
});
