import { describe, expect, it } from "vitest";
import { ClientIds } from "../../src/relay/clientIds.js";
import { LineReader } from "../../src/relay/framing.js";
import { rawIdOf, TopLevelIdScanner } from "../../src/relay/idScan.js";
import { parseLine } from "../../src/relay/jsonrpc.js";

describe("TopLevelIdScanner", () => {
  it.each([
    ['{"jsonrpc":"2.0","id":7,"method":"x"}', "7"],
    [
      '{"method":"x","params":{"id":1,"nested":{"id":"no"}},"jsonrpc":"2.0","id":9007199254740993}',
      "9007199254740993",
    ],
    ['{ "id" : -12.5e3 , "method":"x"}', "-12.5e3"],
    ['{"id":"a\\"b\\\\","method":"x"}', '"a\\"b\\\\"'],
    ['{"params":["id",{"id":2}],"id":"é-ü"}', '"é-ü"'],
    ['{"params":{"s":"}\\"id\\":5,"},"id":3}', "3"],
    ['{"jsonrpc":"2.0","method":"n"}', null],
    ['{"id":{"x":1}}', null],
    ['{"id":null}', null],
    ['[{"id":1}]', null],
  ])("%s → %s", (text, id) => {
    expect(rawIdOf(text)).toBe(id);
    // byte by byte gives the same answer as the whole text
    const s = new TopLevelIdScanner();
    for (const b of Buffer.from(text)) s.push(Uint8Array.of(b));
    expect(s.id).toBe(id);
  });
});

describe("TopLevelIdScanner reading a whole message", () => {
  it.each([
    ['{"jsonrpc":"2.0","id":7,"result":{"method":"x"}}', "7", false],
    ['{"jsonrpc":"2.0","id":7,"params":{},"method":"x"}', "7", true],
    ['{"method":"x","id":{"a":1},"params":{}}', null, true],
    [`{"id":"${"z".repeat(5000)}","method":"x"}`, null, true],
    ['{"id":12}', "12", false],
  ])("%s", (text, id, hasMethod) => {
    const s = new TopLevelIdScanner(true);
    s.pushText(text);
    expect([s.id, s.hasMethod, s.finished]).toEqual([id, hasMethod, true]);
  });
});

describe("LineReader over the size limit", () => {
  it("reports the dropped message's id, even when it comes after megabytes of params", () => {
    const over: [number, string | null, boolean][] = [];
    const lines: string[] = [];
    const r = new LineReader(
      { line: (l) => lines.push(l), oversize: (n, id, method) => over.push([n, id, method]) },
      4096,
    );
    const big = `{"method":"tools/call","params":{"data":"${"x".repeat(3_000_000)}"},"jsonrpc":"2.0","id":"late"}`;
    const bytes = Buffer.from(`${big}\n{"jsonrpc":"2.0","id":1,"method":"ping"}\n`);
    for (let i = 0; i < bytes.length; i += 65536) r.push(bytes.subarray(i, i + 65536));
    expect(over).toEqual([[big.length, '"late"', true]]);
    expect(lines).toEqual(['{"jsonrpc":"2.0","id":1,"method":"ping"}']);
  });

  it("assembles a 12 MB line from 64 KiB chunks whole", () => {
    const lines: string[] = [];
    const r = new LineReader({ line: (l) => lines.push(l), oversize: () => {} });
    const big = `{"jsonrpc":"2.0","id":1,"result":"${"y".repeat(12_000_000)}"}`;
    const bytes = Buffer.from(`${big}\n`);
    for (let i = 0; i < bytes.length; i += 65536) r.push(bytes.subarray(i, i + 65536));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toBe(big);
  });
});

/** every request the tests make stays open */
const OPEN = () => true;

describe("ClientIds", () => {
  it("keeps ids whose text a parse would lose, and leaves ordinary ones alone", () => {
    const ids = new ClientIds();
    for (const token of ["9007199254740993", "-9007199254740995", "1.0", "2e3", '"\\u0041"']) {
      const text = `{"jsonrpc":"2.0","id":${token},"method":"tools/list"}`;
      const c = ids.adopt(parseLine(text), text, undefined, OPEN);
      if (c.kind !== "request") throw new Error("not a request");
      const out = ids.restore(JSON.stringify({ jsonrpc: "2.0", id: c.msg.id, result: {} }));
      expect(out).toBe(`{"jsonrpc":"2.0","id":${token},"result":{}}`);
    }
    const plain = '{"jsonrpc":"2.0","id":12,"method":"x"}';
    const c = ids.adopt(parseLine(plain), plain, undefined, OPEN);
    expect(c.kind === "request" && c.msg.id).toBe(12);
  });

  it("restores a stand-in made after many ordinary ids (restore skips its search only until the first)", () => {
    const ids = new ClientIds();
    for (let i = 0; i < 3; i++) {
      const text = `{"jsonrpc":"2.0","id":${i},"method":"ping"}`;
      const c = ids.adopt(parseLine(text), text, undefined, OPEN);
      const json = JSON.stringify({ jsonrpc: "2.0", id: c.kind === "request" ? c.msg.id : null, result: {} });
      expect(ids.restore(json)).toBe(json);
    }
    const big = '{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}';
    const c = ids.adopt(parseLine(big), big, undefined, OPEN);
    if (c.kind !== "request") throw new Error("not a request");
    expect(ids.restore(JSON.stringify({ jsonrpc: "2.0", id: c.msg.id, result: {} }))).toBe(
      '{"jsonrpc":"2.0","id":9007199254740993,"result":{}}',
    );
  });

  it("keeps the parsed id when the raw text found is not of that id (duplicate id members)", () => {
    const ids = new ClientIds();
    const text = '{"jsonrpc":"2.0","id":1.0,"method":"x","id":2}';
    const c = ids.adopt(parseLine(text), text, undefined, OPEN);
    expect(c.kind === "request" && c.msg.id).toBe(2);
  });

  it("maps a cancellation's big requestId to the same stand-in as the request", () => {
    const ids = new ClientIds();
    const req = '{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call"}';
    const cancel =
      '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9007199254740993}}';
    const a = ids.adopt(parseLine(req), req, undefined, OPEN);
    const b = ids.adopt(parseLine(cancel), cancel, undefined, OPEN);
    if (a.kind !== "request" || b.kind !== "notification") throw new Error("kinds");
    expect((b.msg.params as { requestId: unknown }).requestId).toBe(a.msg.id);
  });
});
