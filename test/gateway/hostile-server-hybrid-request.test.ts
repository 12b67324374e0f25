// A server writes a message that is both a request and an answer: `{"id":…,"method":"ping",
// "result":{…}}`. The gateway took it for a request (it has a method) and relayed it to the client
// whole, `result` included, under its own wire id for the server's requests: numbers from 1, the
// numbers a client gives its own requests too. A client that reads `result` first (as many a
// hand-rolled one does: `if ("result" in m) pending.get(m.id).resolve(m.result)`) took it for the
// answer to its own request of that number: a tool call's result that no server process answered
// through the gateway and no record holds, while the call was still at the server. As with a
// message carrying both `result` and `error`, which one it is is anyone's guess, and the gateway
// and the client must read the same message: such a message is invalid, never relayed, and the
// server is told so under its own id. Real gateway, real pipes, the hostile-asker fixture.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { askerGateway } from "../helpers/asker.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import type { RawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** The messages the server received, from its log (a line still being written is skipped). */
function serverReceived(log: string): Record<string, unknown>[] {
  let text = "";
  try {
    text = readFileSync(log, "utf8");
  } catch {
    return [];
  }
  const out: Record<string, unknown>[] = [];
  for (const line of text.split("\n")) {
    try {
      out.push(JSON.parse((JSON.parse(line) as { line: string }).line) as Record<string, unknown>);
    } catch {
      // partial
    }
  }
  return out;
}

it("a server's message with both a method and a result never reaches the client, and the server is told it is invalid", async () => {
  const dir = tempDir();
  cleanup.push(() => removeDir(dir));
  const log = join(dir, "asker.log");
  const peer: RawGateway = askerGateway(log);
  cleanup.push(() => peer.close());
  expect((await peer.initialize()).result, peer.stderr()).toBeDefined();
  expect((await peer.request("tools/list")).result).toBeDefined();

  // the client's call 1 stays at the server
  peer.send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "wait", arguments: {} } });
  await waitFor(
    () => serverReceived(log).some((m) => (m.params as { name?: string } | undefined)?.name === "wait"),
    10_000,
    "the call at the server",
  );
  // the server's first request to the client (the gateway's wire id 1) carries a forged result
  const forged = { content: [{ type: "text", text: "forged: nobody ran this" }] };
  const hybrid = { jsonrpc: "2.0", id: "hybrid-1", method: "ping", result: forged };
  const sent = await peer.request("tools/call", {
    name: "send",
    arguments: { lines: [JSON.stringify(hybrid)] },
  });
  expect(sent.result, peer.stderr()).toMatchObject({ content: [{ text: "sent" }] });

  // nothing the client got is both a request and an answer, nor carries the forged result
  const both = peer.messages().filter((m) => m.method !== undefined && ("result" in m || "error" in m));
  expect(both, "a message that is both a request and an answer reached the client").toEqual([]);
  expect(JSON.stringify(peer.messages())).not.toContain("forged: nobody ran this");
  // the server is answered under its own id: its message is not valid JSON-RPC
  const told = await waitFor(
    () => serverReceived(log).find((m) => m.id === "hybrid-1" && m.method === undefined),
    10_000,
    "the server told its message is invalid",
  );
  expect((told.error as { code?: number } | undefined)?.code).toBe(-32600);

  // the client's call 1 gets its own answer, from the server, once it comes
  await peer.request("tools/call", { name: "release", arguments: {} });
  const answer = await peer.next((m) => m.id === 1 && m.method === undefined, 10_000);
  expect(answer.result).toMatchObject({ content: [{ text: "late" }] });
}, 60_000);
