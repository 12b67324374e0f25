// The 2026-07-28 era: the client declares its capabilities in every request's envelope
// (`io.modelcontextprotocol/clientCapabilities`, docs/protocol-eras.md), not in an initialize. A
// server that sends it a request for a capability that envelope does not declare is answered
// -32601 by the gateway, never relayed; one it declares still is. Real gateway, a raw client that
// probes nothing and speaks the era from its first request, the hostile-asker fixture writing the
// requests verbatim (its log shows what came back to it).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { modernMeta } from "../helpers/modernMeta.js";
import { NODE } from "../helpers/paths.js";
import { rawGateway, replyGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const ASKER = join(import.meta.dirname, "../fixtures/servers/hostile-asker.mjs");
const ENVELOPE = modernMeta({ roots: {} }, { name: "modern-raw", version: "1" });

/** The lines the server received that parse, skipping one still being written. */
function received(log: string): Record<string, unknown>[] {
  let text = "";
  try {
    text = readFileSync(log, "utf8");
  } catch {
    return [];
  }
  const out: Record<string, unknown>[] = [];
  for (const l of text.split("\n"))
    try {
      out.push(JSON.parse((JSON.parse(l) as { line: string }).line) as Record<string, unknown>);
    } catch {
      // partial
    }
  return out;
}

it("a request for a capability the envelope does not declare is answered by the gateway; a declared one is relayed", async () => {
  const dir = tempDir();
  cleanup.push(() => removeDir(dir));
  const log = join(dir, "asker.log");
  const gw = rawGateway({
    args: ["--label", "asker", "--approval", "none", "--", NODE, ASKER],
    env: { FIXTURE_ASKER_LOG: log },
  });
  cleanup.push(() => gw.close());
  const listed = await gw.request("tools/list", { _meta: ENVELOPE }, 20_000);
  expect(listed.result, gw.stderr()).toBeDefined();
  const lines = [
    { jsonrpc: "2.0", id: "s-1", method: "sampling/createMessage", params: { messages: [], maxTokens: 1 } },
    {
      jsonrpc: "2.0",
      id: "e-1",
      method: "elicitation/create",
      params: { message: "key?", requestedSchema: {} },
    },
    { jsonrpc: "2.0", id: "r-1", method: "roots/list", params: {} },
  ].map((l) => JSON.stringify(l));
  const call = await gw.request(
    "tools/call",
    { name: "send", arguments: { lines }, _meta: ENVELOPE },
    20_000,
  );
  expect(call.result, gw.stderr()).toMatchObject({ content: [{ text: "sent" }] });
  // the declared one reaches the client
  const roots = await gw.next((m) => m.method === "roots/list", 20_000);
  expect(roots.id).toBeDefined();
  // the two undeclared ones are answered at the server, by the gateway
  const answers = await waitFor(
    () => {
      const got = received(log).filter((m) => m.id === "s-1" || m.id === "e-1");
      return got.length === 2 ? got : null;
    },
    20_000,
    "the gateway's answers to s-1 and e-1 at the server",
  );
  for (const a of answers) {
    expect((a.error as { code: number }).code).toBe(-32601);
    expect((a.error as { message: string }).message).toMatch(
      /the client did not declare the (sampling|elicitation) capability/,
    );
  }
  // and never reach the client
  expect(
    gw.messages().filter((m) => m.method === "sampling/createMessage" || m.method === "elicitation/create"),
  ).toEqual([]);
});

// In this era the server's requests ride inside an `input_required` result (docs/protocol-eras.md):
// one embedding a request of a capability the envelope does not declare was relayed as a result.
it("an input_required embedding a request for a capability the envelope does not declare reaches the client as response_invalid; a declared one as it is", async () => {
  const { answerWith } = replyGateway(cleanup);
  const call = (result: unknown) => answerWith(result, ENVELOPE); // roots only
  const sampling = {
    resultType: "input_required",
    inputRequests: {
      s: {
        method: "sampling/createMessage",
        params: { messages: [{ role: "user", content: { type: "text", text: "hi" } }], maxTokens: 5 },
      },
    },
  };
  const refused = await call(sampling);
  expect(refused.result).toBeUndefined();
  expect(refused.error).toMatchObject({
    code: -32603,
    data: { error: "response_invalid", reason: expect.stringContaining("sampling capability") },
  });
  const roots = { resultType: "input_required", inputRequests: { r: { method: "roots/list", params: {} } } };
  expect((await call(roots)).result).toEqual(roots);
}, 60_000);
