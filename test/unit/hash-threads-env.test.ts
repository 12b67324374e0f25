// PORTCULLIS_HASH_THREADS is read as every other PORTCULLIS_* number is (envWholeNumber): digits
// only, without a leading zero, `0` itself included. parseInt took `5abc` as 5, `12.5` as 12,
// `9e1` as 9, ` 7` as 7 and `010` as 10: each is now ignored, and the default (cores − 1, at most
// 3) used. The default is at most 3, so every value below that was taken as 5 or more now differs.
import { availableParallelism } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { HashPool } from "../../src/identity/hash.js";

const NAME = "PORTCULLIS_HASH_THREADS";
const prev = process.env[NAME];
const fallback = Math.max(0, Math.min(3, availableParallelism() - 1));

describe("PORTCULLIS_HASH_THREADS", () => {
  afterEach(() => {
    if (prev === undefined) delete process.env[NAME];
    else process.env[NAME] = prev;
  });

  it("takes a whole number written in digits, 0 included, using at most 16", () => {
    for (const [text, threads] of [
      ["0", 0],
      ["1", 1],
      ["7", 7],
      ["16", 16],
      ["40", 16],
    ] as const) {
      process.env[NAME] = text;
      expect(HashPool.defaultSize(), text).toBe(threads);
    }
  });

  it("ignores any other writing of a number, a leading zero or trailing letters included, for the default", () => {
    expect(fallback).toBeLessThanOrEqual(3);
    for (const text of ["5abc", "12.5", "9e1", " 7", "7 ", "+5", "010", "00", "0x10", "-1", "", "ten"]) {
      process.env[NAME] = text;
      expect(HashPool.defaultSize(), JSON.stringify(text)).toBe(fallback);
    }
    delete process.env[NAME];
    expect(HashPool.defaultSize()).toBe(fallback);
  });
});
