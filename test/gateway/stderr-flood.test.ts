// A server's stderr without newlines is shown in pieces of at most 64 KiB, each marked as cut,
// as it arrives: the gateway neither holds it all in memory nor rescans it for every chunk.
import { afterEach, describe, expect, it } from "vitest";
import { CUT_MARK, MAX_STDERR_LINE } from "../../src/supervisor/stderrLines.js";
import { startGateway } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a server's stderr", () => {
  it("a line without end is cut into marked pieces of at most 64 KiB, and nothing is lost", async () => {
    const gw = await startGateway({
      args: ["--label", "kids", "--approval", "none", "--", NODE, FIXTURES.children],
    });
    cleanup.push(() => gw.close());
    const bytes = 3 * MAX_STDERR_LINE + 100;
    const res = await gw.client.callTool({ name: "stderr_flood", arguments: { bytes } });
    expect(JSON.parse((res.content as { text: string }[])[0]!.text)).toEqual({ wrote: bytes });
    await gw.waitForStderr(/^\[kids\] x{100}$/, 10_000); // the last piece, ended by the newline
    const pieces = gw
      .stderr()
      .split("\n")
      .filter((l) => l.startsWith("[kids] x"))
      .map((l) => l.slice("[kids] ".length));
    expect(pieces).toHaveLength(4);
    for (const p of pieces.slice(0, 3)) {
      expect(p.endsWith(CUT_MARK)).toBe(true);
      expect(p.length - CUT_MARK.length).toBe(MAX_STDERR_LINE);
    }
    expect(pieces.map((p) => p.replace(CUT_MARK, "")).join("")).toBe("x".repeat(bytes));
  });
});
