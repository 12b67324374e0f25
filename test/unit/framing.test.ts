import { describe, expect, it } from "vitest";
import { LineReader } from "../../src/relay/framing.js";
import { classify, parseLine } from "../../src/relay/jsonrpc.js";

function collect(max?: number) {
  const lines: string[] = [];
  const over: number[] = [];
  const r = new LineReader({ line: (l) => lines.push(l), oversize: (n) => over.push(n) }, max);
  return { r, lines, over };
}

describe("LineReader", () => {
  it("splits lines across arbitrary chunk boundaries, CRLF included", () => {
    const { r, lines } = collect();
    const text = '{"a":1}\r\n{"b":"é"}\n\n{"c":3}\n';
    const bytes = Buffer.from(text);
    for (let i = 0; i < bytes.length; i++) r.push(bytes.subarray(i, i + 1));
    expect(lines).toEqual(['{"a":1}', '{"b":"é"}', '{"c":3}']);
  });

  it("drops an oversized line without buffering it and keeps going", () => {
    const { r, lines, over } = collect(16);
    r.push(Buffer.from(`${"x".repeat(10)}`));
    r.push(Buffer.from(`${"y".repeat(100)}\n{"ok":1}\n`));
    expect(over).toEqual([110]);
    expect(lines).toEqual(['{"ok":1}']);
  });

  it("flushes a last line without newline at end", () => {
    const { r, lines } = collect();
    r.push(Buffer.from('{"a":1}'));
    r.end();
    expect(lines).toEqual(['{"a":1}']);
  });
});

describe("classify", () => {
  it("tells requests, notifications and responses apart", () => {
    expect(classify({ jsonrpc: "2.0", id: 1, method: "x" }).kind).toBe("request");
    expect(classify({ jsonrpc: "2.0", method: "x" }).kind).toBe("notification");
    expect(classify({ jsonrpc: "2.0", id: "a", result: {} }).kind).toBe("response");
    expect(classify({ jsonrpc: "2.0", id: 2, error: { code: 1, message: "m" } }).kind).toBe("response");
  });

  it.each([
    ["not json", "{", "not valid JSON"],
    ["a batch", "[]", "batches"],
    ["no jsonrpc", '{"id":1,"method":"x"}', "jsonrpc"],
    ["an object id", '{"jsonrpc":"2.0","id":{},"method":"x"}', "id"],
    ["a bad error", '{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}', "error"],
    ["nothing", '{"jsonrpc":"2.0","hello":1}', "neither"],
    ["array params", '{"jsonrpc":"2.0","id":1,"method":"x","params":3}', "params"],
  ])("rejects %s with a reason", (_name, line, reason) => {
    const c = parseLine(line);
    expect(c.kind).toBe("invalid");
    if (c.kind === "invalid") expect(c.reason).toContain(reason);
  });
});
