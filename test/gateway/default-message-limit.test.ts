// The message size limit a gateway keeps with no --max-message-bytes nor maxMessageBytes: 64 MiB,
// so big tool inputs and results (files, images) pass, while a longer line is refused as it
// passes, never held whole, and answered under the id read from its bytes. Real gateway, the
// habits fixture (its digest tool answers the length and sha256 of what it received), raw client.
import { createHash } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawPeer, rawGateway } from "../helpers/raw.js";

const LIMIT = 64 * 1024 * 1024;

let peer: RawPeer | undefined;
afterEach(async () => {
  await peer?.close();
  peer = undefined;
});

/** A digest call under `id` whose line, without its newline, is `bytes` long; and its data. */
function digestLine(id: string, bytes: number): { line: string; data: string } {
  const head = `{"jsonrpc":"2.0","id":"${id}","method":"tools/call","params":{"name":"digest","arguments":{"data":"`;
  const tail = '"}}}';
  const data = "d".repeat(bytes - head.length - tail.length);
  return { line: `${head}${data}${tail}\n`, data };
}

describe("the default message size limit", () => {
  it("is 64 MiB: a request line of exactly 64 MiB reaches the server whole, one byte more is answered message_too_large under its own id", async () => {
    peer = rawGateway({
      args: ["--label", "habits", "--approval", "none", "--", ...fixtureCommand("habits")],
    });
    await peer.initialize();
    await peer.request("tools/list");

    peer.send(digestLine("over", LIMIT + 1).line);
    const refused = await peer.next((m) => m.id === "over", 60_000);
    expect(refused.error?.code).toBe(-32600);
    expect(refused.error?.data).toMatchObject({ error: "message_too_large", bytes: LIMIT + 1 });

    const at = digestLine("at", LIMIT);
    peer.send(at.line);
    const passed = await peer.next((m) => m.id === "at", 60_000);
    const text = (passed.result as { content?: { text?: string }[] } | undefined)?.content?.[0]?.text;
    expect(text).toBe(`${at.data.length} ${createHash("sha256").update(at.data).digest("hex")}`);
  });
});
