// A client's JSON-RPC batch is refused request by request, under each request's id (spec-batch).
// What that sends back must stay bounded by something else than the line: a 21-byte element
// (`{"method":"","id":0}`) is answered by a 168-byte error, so a line near the message limit came
// back eight times larger, all of it built into one string in one turn of the event loop: under a
// raised --max-message-bytes (96 MiB here) that string is past what V8 can hold, and the gateway
// died of it (RangeError: Invalid string length, exit 1).
import { describe, expect, it } from "vitest";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";

const LIMIT = 96 * 1024 * 1024;

describe("a huge JSON-RPC batch from the client", () => {
  it("is refused without the gateway dying of its answers; the next request is answered", async () => {
    const gw = rawGateway({
      args: [
        "--label",
        "lenient",
        "--approval",
        "none",
        "--max-message-bytes",
        String(LIMIT),
        "--",
        NODE,
        FIXTURES.lenient,
      ],
    });
    try {
      await gw.initialize({ protocolVersion: "2025-03-26" }, 30_000);
      const element = '{"method":"","id":0}';
      const count = Math.floor((LIMIT - 16) / (element.length + 1));
      gw.send(`[${Array(count).fill(element).join(",")}]\n`);
      const exited = gw.exited.then((e) => ({ exited: e }));
      const answered = gw.request("ping", undefined, 240_000).then((m) => ({ answered: m }));
      const first = await Promise.race([exited, answered]);
      expect(first).toHaveProperty("answered");
      expect((first as { answered: { error?: unknown } }).answered.error).toBeUndefined();
      // each distinct request of the batch got its refusal (here one id, written many times)
      expect(gw.messages().filter((m) => m.id === 0).length).toBeGreaterThanOrEqual(1);
    } finally {
      await gw.close();
    }
  }, 300_000);
});
