// The PORTCULLIS_*_MS variables take a whole number of milliseconds as the README says, "ignored
// unless a whole number from 1 to 2147483647", read as every flag reads a number: digits, no
// leading zero. Number() took `0x10` as 16, `1e3` as 1000, ` 5 ` as 5 and `010` as 10 (which a
// reader, or a shell's arithmetic, takes for 8): each is now ignored, the default used.
import { afterEach, describe, expect, it } from "vitest";
import { envMs, envWholeNumber } from "../../src/util/envMs.js";

const NAME = "PORTCULLIS_TEST_ENV_MS_UNIT";

describe("envMs", () => {
  afterEach(() => {
    delete process.env[NAME];
  });

  it("takes a whole number of ms written in digits, from 1 to 2147483647", () => {
    for (const [text, ms] of [
      ["1", 1],
      ["1500", 1500],
      ["2147483647", 2147483647],
    ] as const) {
      process.env[NAME] = text;
      expect(envMs(NAME, 7), text).toBe(ms);
    }
  });

  it("ignores any other writing of a number, a leading zero included, for the default", () => {
    for (const text of ["", "0", "-5", "1.5", "0x10", "1e3", " 5", "5 ", "010", "00", "2147483648", "ten"]) {
      process.env[NAME] = text;
      expect(envMs(NAME, 7), JSON.stringify(text)).toBe(7);
    }
    delete process.env[NAME];
    expect(envMs(NAME, 7)).toBe(7);
  });
});

describe("envWholeNumber", () => {
  afterEach(() => {
    delete process.env[NAME];
  });

  it("takes 0 written alone, and no other writing than digits without a leading zero", () => {
    process.env[NAME] = "0";
    expect(envWholeNumber(NAME, 0, 9)).toBe(0);
    for (const text of ["00", "03", "3abc", "3.0", "0x3", " 3", "-3", ""]) {
      process.env[NAME] = text;
      expect(envWholeNumber(NAME, 0, 9), JSON.stringify(text)).toBeUndefined();
    }
  });

  it("keeps to its range", () => {
    process.env[NAME] = "10";
    expect(envWholeNumber(NAME, 0, 9)).toBeUndefined();
    expect(envWholeNumber(NAME, 0, 10)).toBe(10);
    process.env[NAME] = "0";
    expect(envWholeNumber(NAME, 1, 10)).toBeUndefined();
  });
});
