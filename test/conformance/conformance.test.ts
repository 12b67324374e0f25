// The official MCP conformance suite's server scenarios, direct vs through portcullis: every
// scenario that passes against the fixture directly must pass with portcullis in between, both
// behind the bridge (stdio) and as the HTTP server itself (run --listen). Real processes: the
// suite (Node 22, from a pinned cache install, see harness.mjs) -> supergateway (Streamable HTTP
// on 127.0.0.1 -> stdio) -> [portcullis run --approval none ->] fixture; and the suite ->
// portcullis run --listen --no-auth --approval none -> fixture.
import { describe, expect, it } from "vitest";
import { compare, formatTable, runSides } from "./harness.mjs";

describe("official conformance suite, server scenarios", () => {
  it("every scenario that passes direct passes through portcullis, over stdio and over --listen", {
    timeout: 360_000,
  }, async () => {
    const { direct, through, listen } = await runSides();
    const { rows, regressions, listenRegressions } = compare(direct.results, through.results, listen.results);
    console.log(formatTable(rows));
    // The harness must have seen the suite run: the fixture implements every scenario it knows.
    expect(Object.keys(direct.results).length, direct.output).toBeGreaterThanOrEqual(30);
    expect(direct.results["tools-call-simple-text"]?.ok, direct.output).toBe(true);
    expect(regressions, through.output).toEqual([]);
    expect(listenRegressions, listen.output).toEqual([]);
    // the bridge does not check Host/Origin; portcullis's own front does
    expect(listen.results["dns-rebinding-protection"]?.ok, listen.output).toBe(true);
  });
});
