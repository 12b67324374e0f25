import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { SparingWarnings } from "../../src/util/sparingWarnings.js";

describe("SparingWarnings", () => {
  it("writes a kind's first line at once, holds the rest within the interval, and tells their count with the next", async () => {
    const lines: string[] = [];
    const w = new SparingWarnings((l) => lines.push(l), 200);
    for (let i = 0; i < 5; i++) w.say("uid 65534", "closed one of 65534's");
    w.say("unlisted", "closed an unlisted one");
    expect(lines).toEqual(["closed one of 65534's", "closed an unlisted one"]);
    await sleep(250);
    w.say("uid 65534", "closed one of 65534's");
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatch(
      // the seconds since the last line: 0 on a quiet machine, more when a loaded one stalls the sleep
      /^closed one of 65534's \(and 4 more like it since the last such line, \d+ s ago, not written\)$/,
    );
    // the count starts afresh once told
    await sleep(250);
    w.say("uid 65534", "closed one of 65534's");
    expect(lines[3]).toBe("closed one of 65534's");
  });
});
