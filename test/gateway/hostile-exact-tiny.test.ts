// Numbers so small that a double reads them as 0 or as a subnormal: `1e-400` is read as 0 and
// went to the server as `0`, `1.23456e-320` as `1.2347e-320`. A server that reads numbers exactly (Python's
// Decimal, Java's BigDecimal, Go's json.Number) acted on another amount than the client wrote. The
// respelled-number look skipped them (it looked only at runs of 16 digits). Now a call holding one
// is refused naming the field, a server's result holding one reaches the client as written, and a
// number a double holds exactly (`-0.0e-999` is zero, `1e-300` is what the double prints) goes as
// before. Real gateway, the rawlines fixture (it logs the lines it gets, answers with one given).

import { afterEach, describe, expect, it } from "vitest";
import type { WireMessage } from "../helpers/gateway.js";
import { type RawGateway, rawlinesGateway } from "../helpers/raw.js";

const peers: RawGateway[] = [];
afterEach(async () => {
  for (const p of peers.splice(0)) await p.close();
});

const TOOLS = [
  { name: "pay", inputSchema: { type: "object", properties: { amount: { type: "number" } } } },
  { name: "echo_raw", inputSchema: { type: "object", properties: { line: { type: "string" } } } },
];

async function start(): Promise<{ gw: RawGateway; calls: () => string[] }> {
  const { peer: gw, received } = await rawlinesGateway([], { label: "tiny", tools: TOOLS });
  peers.push(gw);
  const calls = () => received().filter((l) => l.includes('"method":"tools/call"'));
  return { gw, calls };
}

async function answered(gw: RawGateway, id: number): Promise<WireMessage> {
  return gw.next((m) => m.id === id && (m.result !== undefined || m.error !== undefined), 20_000);
}

describe("a call's argument so small a double reads it as another number", () => {
  it.each([
    ["reads as 0", "1e-400"],
    ["reads as a subnormal of fewer digits", "1.23456e-320"],
    ["reads as 0 below the smallest subnormal", "4.9e-325"],
    ["negative, reads as -0", "-2E-999"],
    ["written with a fraction, reads as 0", "0.5e-330"],
  ])("%s (%s): refused naming the field, never forwarded", async (_what, amount) => {
    const { gw, calls } = await start();
    gw.send(
      `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pay","arguments":{"amount":${amount}}}}\n`,
    );
    const r = await answered(gw, 7);
    await gw.request("ping");
    expect(calls()).toEqual([]);
    expect(r.result?.isError).toBe(true);
    const text = ((r.result?.content ?? []) as { text: string }[]).map((c) => c.text).join("\n");
    expect(text).toContain('"amount"');
    expect(text).toContain(amount);
  });

  it.each([
    ["zero exactly", "-0.0e-999"],
    ["a double exactly as it prints", "1e-300"],
  ])("%s (%s): forwarded", async (_what, amount) => {
    const { gw, calls } = await start();
    gw.send(
      `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"pay","arguments":{"amount":${amount}}}}\n`,
    );
    const r = await answered(gw, 8);
    expect(r.result?.isError).not.toBe(true);
    expect(calls()).toHaveLength(1);
  });
});

describe("a server's result holding such a number", () => {
  it("reaches the client as the server wrote it", async () => {
    const { gw } = await start();
    const answer = `{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"ok"}],"structuredContent":{"rate":1e-400,"floor":4.9e-325}}}`;
    gw.send({
      jsonrpc: "2.0",
      id: 9,
      method: "tools/call",
      params: { name: "echo_raw", arguments: { line: answer } },
    });
    const r = await answered(gw, 9);
    expect(r.error).toBeUndefined();
    const line = gw.lines().find((l) => l.startsWith('{"jsonrpc":"2.0","id":9,')) ?? "";
    expect(line).toContain('"structuredContent":{"rate":1e-400,"floor":4.9e-325}');
  });

  it("a notification holding one reaches the client as written", async () => {
    const { gw } = await start();
    const note =
      '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{"eps":1e-400}}}';
    await gw.request("raw/send", { lines: [note] });
    await gw.next((m) => m.method === "notifications/message");
    expect(gw.lines()).toContain(note);
  });
});
