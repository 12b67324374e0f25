// The call-wait line of `approvals` and the console card gives times as HH:MM:SS UTC; a request can
// outlive the day it was made on, so a time of another day (UTC) must carry its date, or it reads
// as today's.
import { describe, expect, it } from "vitest";
import { callWaitText } from "../../src/approval/callWaitText.js";

const now = new Date("2026-07-29T00:10:00.000Z");
const base = { waiting: true, callWaitingSince: null, callLeft: null, mode: "per-call" as const };

describe("call-wait line: a time that is not today names its date", () => {
  it("a call waiting since yesterday (UTC) says the date; one since today does not", () => {
    expect(
      callWaitText({ ...base, callWaiting: true, callWaitingSince: "2026-07-28T23:59:30.123Z" }, now),
    ).toBe("a call waits on it (since 2026-07-28 23:59:30 UTC)");
    expect(
      callWaitText({ ...base, callWaiting: true, callWaitingSince: "2026-07-29T00:01:02.000Z" }, now),
    ).toBe("a call waits on it (since 00:01:02 UTC)");
  });

  it("a call that left on another day says the date of its leaving", () => {
    const text = callWaitText(
      { ...base, callWaiting: false, callLeft: { how: "cancelled", at: "2026-07-27T10:00:00.000Z" } },
      now,
    );
    expect(text).toBe(
      "no call waits on it (the client cancelled its call at 2026-07-27 10:00:00 UTC); a decision serves only a retry of this same call",
    );
  });

  it("a time written with an offset is shown in UTC, with the UTC date", () => {
    expect(
      callWaitText({ ...base, callWaiting: true, callWaitingSince: "2026-07-29T01:30:00+02:00" }, now),
    ).toBe("a call waits on it (since 2026-07-28 23:30:00 UTC)");
  });
});
