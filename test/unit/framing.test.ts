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

  it("reads a chunk's whole lines as it reads them byte by byte: blank and CRLF lines, a line at the limit and one past it", () => {
    const texts = [
      '{"a":1}\n{"b":"é"}\r\n\n  \n{"c":3}\n',
      `${"x".repeat(16)}\n${"y".repeat(17)}\n{"ok":1}\n`,
      `{"p":1}\n${"z".repeat(40)}\n{"q":"ü"}\n\r\n`,
    ];
    for (const text of texts) {
      const bytes = Buffer.from(text);
      const byByte = collect(16);
      for (let i = 0; i < bytes.length; i++) byByte.r.push(bytes.subarray(i, i + 1));
      // whole, and cut at every place (the rest of a line, then whole lines)
      for (let cut = 0; cut <= bytes.length; cut++) {
        const chunked = collect(16);
        chunked.r.push(bytes.subarray(0, cut));
        chunked.r.push(bytes.subarray(cut));
        expect({ lines: chunked.lines, over: chunked.over }, `${JSON.stringify(text)} cut at ${cut}`).toEqual(
          {
            lines: byByte.lines,
            over: byByte.over,
          },
        );
      }
    }
    const limits = collect(16);
    limits.r.push(Buffer.from(`${"x".repeat(16)}\n${"y".repeat(17)}\n`));
    expect(limits.lines).toEqual(["x".repeat(16)]);
    expect(limits.over).toEqual([17]);
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
