// 2026-07-28 (basic/patterns/subscriptions, "Graceful Closure"): a server that ends a subscription
// answers the subscriptions/listen request, and that answer carries the subscription id in
// `result._meta["io.modelcontextprotocol/subscriptionId"]`, the JSON-RPC id of the listen request.
// Behind the gateway the server's listen id is the gateway's own wire id (a number of its counter),
// not the client's: the gateway puts the client's id back on the answer, and must put it in that
// `_meta` too, as it does on the acknowledgement and every notification under the listen, and as the
// HTTP session does (HttpSession.restore). Before, on stdio, the answer reached the client with the
// server's value unchanged (the gateway's wire id, or whatever the server wrote), so the client could
// not tell which of its subscriptions closed. A message the gateway rewrites cannot go as written:
// one holding a number that re-serialising would change is answered with an error (asWritten.ts).
// Real gateway, raw client, the rawlines fixture (FIXTURE_RAW_ANSWERS: its answer to a listen).
import { afterEach, describe, expect, it } from "vitest";
import { modernMeta } from "../helpers/modernMeta.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const SUB = "io.modelcontextprotocol/subscriptionId";
const META = modernMeta({}, { name: "listen-answer-test", version: "1.0.0" });

/** A modern-era raw client on a gateway in front of rawlines, which answers each listen with `answer` (`ID`: its id). */
async function gateway(answer: string): Promise<RawGateway> {
  const gw = rawGateway({
    args: ["--label", "rawlines", "--approval", "none", "--", NODE, FIXTURES.rawlines],
    env: { FIXTURE_RAW_ANSWERS: JSON.stringify({ "subscriptions/listen": answer }) },
  });
  cleanup.push(() => gw.close());
  // the envelope makes the session 2026-07-28
  const listed = await gw.request("tools/list", { _meta: META }, 30_000);
  expect(listed.error, JSON.stringify(listed)).toBeUndefined();
  return gw;
}

function listen(id: string): string {
  return `{"jsonrpc":"2.0","id":${id},"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":${JSON.stringify(META)}}}\n`;
}

describe("the server's answer to a subscriptions/listen, on stdio", () => {
  it("carries the client's own listen id in _meta, not the server's", async () => {
    const gw = await gateway(
      `{"jsonrpc":"2.0","id":ID,"result":{"resultType":"complete","_meta":{"${SUB}":"SERVER-SIDE"}}}`,
    );
    gw.send(listen('"listen:0"'));
    const answer = await gw.next((m) => m.id === "listen:0" && m.method === undefined, 20_000);
    expect(answer.error).toBeUndefined();
    expect((answer.result as { _meta?: Record<string, unknown> })._meta?.[SUB]).toBe("listen:0");
    expect(gw.lines().some((l) => l.includes("SERVER-SIDE"))).toBe(false);
  });

  it("a listen id JSON cannot hold is written back there as the client wrote it", async () => {
    const gw = await gateway(
      `{"jsonrpc":"2.0","id":ID,"result":{"resultType":"complete","_meta":{"${SUB}":"SERVER-SIDE"}}}`,
    );
    gw.send(listen("9007199254740993"));
    await gw.next(
      (m) => m.method === undefined && m.id !== undefined && String(m.id).startsWith("900719925474099"),
      20_000,
    );
    const line = gw.lines().find((l) => l.includes('"id":9007199254740993'));
    expect(line, gw.lines().join("\n")).toBeDefined();
    expect(line).toContain(`"${SUB}":9007199254740993`);
    expect(line).not.toContain("SERVER-SIDE");
  });

  it("an answer the gateway rewrites that holds a number re-serialising would change: an error, never another number", async () => {
    const gw = await gateway(
      `{"jsonrpc":"2.0","id":ID,"result":{"resultType":"complete","_meta":{"${SUB}":"SERVER-SIDE"},"n":9007199254740993}}`,
    );
    gw.send(listen('"listen:1"'));
    const answer = await gw.next((m) => m.id === "listen:1" && m.method === undefined, 20_000);
    const line = gw.lines().find((l) => l.includes('"id":"listen:1"'));
    expect(line).not.toContain("9007199254740992");
    expect(line).not.toContain("SERVER-SIDE");
    expect(answer.error?.code, JSON.stringify(answer)).toBe(-32603);
    expect(JSON.stringify(answer.error)).toContain("response_invalid");
  });
});
