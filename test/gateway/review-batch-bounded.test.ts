// A client's JSON-RPC batch is refused request by request, under each request's id (spec-batch).
// What that sends back must stay bounded by something else than the line: a 21-byte element
// (`{"method":"","id":0}`) is answered by a 168-byte error, so a line near the message limit came
// back eight times larger, all of it built into one string in one turn of the event loop: under a
// raised --max-message-bytes (96 MiB of one element written again and again) that string was past
// what V8 can hold, and the gateway died of it (RangeError: Invalid string length, exit 1). Each
// distinct id is answered once, and at most 1,000 of them: asserted here on a small batch, which
// shows the bound without building the gigabyte that crashed.
import { describe, expect, it } from "vitest";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";

describe("a JSON-RPC batch from the client", () => {
  it("is answered under each distinct id once, at most 1,000 of them; the next request is answered", async () => {
    const gw = rawGateway({
      args: ["--label", "lenient", "--approval", "none", "--", NODE, FIXTURES.lenient],
    });
    try {
      await gw.initialize({ protocolVersion: "2025-03-26" }, 30_000);
      // 3,000 distinct ids, each written twice, and the same number as a string beside it
      const elements: string[] = [];
      for (let i = 1; i <= 3000; i++)
        elements.push(
          `{"jsonrpc":"2.0","method":"ping","id":${i}}`,
          `{"jsonrpc":"2.0","method":"ping","id":${i}}`,
        );
      elements.splice(1, 0, '{"jsonrpc":"2.0","method":"ping","id":"1"}');
      gw.send(`[${elements.join(",")}]\n`);
      const pong = await gw.request("ping", undefined, 60_000);
      expect(pong.error).toBeUndefined();
      const refused = gw.messages().filter((m) => m.error !== undefined && m.id !== pong.id);
      expect(refused).toHaveLength(1000);
      const ids = refused.map((m) => m.id);
      expect(new Set(ids.map((id) => `${typeof id}:${id}`)).size).toBe(1000);
      // the first ones of the batch, in its order: 1, "1", 2, 3, … 999
      expect(ids.slice(0, 3)).toEqual([1, "1", 2]);
      expect(ids.at(-1)).toBe(999);
    } finally {
      await gw.close();
    }
  }, 120_000);
});
