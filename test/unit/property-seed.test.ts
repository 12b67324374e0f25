// The seed the property tests draw from (test/setup/propertySeed.ts): fixed unless asked, fresh
// with "random", a printed seed replayed, anything else refused with the variable named.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertySeed } from "../setup/propertySeed.js";

describe("property seed", () => {
  it("is fixed by default, so a commit's run replays its cases", () => {
    expect(propertySeed({})).toBe(propertySeed({ PORTCULLIS_PROPERTY_SEED: "" }));
    expect(propertySeed({})).toEqual(expect.any(Number));
    // and it is what this file's properties draw from (test/setup/perFile.ts)
    if (process.env.PORTCULLIS_PROPERTY_SEED === undefined)
      expect(fc.readConfigureGlobal().seed).toBe(propertySeed({}));
  });

  it("is fresh with random, and a printed seed (negative too) is replayed", () => {
    expect(propertySeed({ PORTCULLIS_PROPERTY_SEED: "random" })).toBeUndefined();
    expect(propertySeed({ PORTCULLIS_PROPERTY_SEED: "-239748255" })).toBe(-239748255);
    expect(propertySeed({ PORTCULLIS_PROPERTY_SEED: " 392900369 " })).toBe(392900369);
  });

  it("refuses what is not a seed, naming the variable", () => {
    for (const bad of ["abc", "1.5", "99999999999"])
      expect(() => propertySeed({ PORTCULLIS_PROPERTY_SEED: bad })).toThrow(/PORTCULLIS_PROPERTY_SEED/);
  });
});
