// The official MCP conformance suite's server scenarios, direct vs through portcullis: every
// scenario that passes against the fixture directly must pass with portcullis in between. Real
// processes: the suite (Node 22, from a pinned cache install, see harness.mjs) -> supergateway
// (Streamable HTTP on 127.0.0.1 -> stdio) -> [portcullis run --approval none ->] fixture.
import { describe, expect, it } from "vitest";
import { compare, formatTable, runSide } from "./harness.mjs";

describe("official conformance suite, server scenarios", () => {
  it("every scenario that passes direct passes through portcullis", { timeout: 240_000 }, async () => {
    const direct = await runSide("direct");
    const through = await runSide("through");
    const { rows, regressions } = compare(direct.results, through.results);
    console.log(formatTable(rows));
    // The harness must have seen the suite run: the fixture implements every scenario it knows.
    expect(Object.keys(direct.results).length, direct.output).toBeGreaterThanOrEqual(30);
    expect(direct.results["tools-call-simple-text"]?.ok, direct.output).toBe(true);
    expect(regressions, through.output).toEqual([]);
  });
});
