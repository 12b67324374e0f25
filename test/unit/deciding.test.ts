// A decision under way (src/gateway/deciding.ts): the connection's end says why a wait for a human
// stopped, and the wait reads it to tell its request's fate (closed with the run, not left for a
// retry). The end can come after the wait already stopped without a reason (the client cancelled,
// or a 2026-07-28 call was sent to the console): the reason is still recorded, in the gap between
// that abort and the wait's next look at its signal. That gap is a few microtasks, which no
// process-level test can land in; this test drives the object itself.
import { describe, expect, it } from "vitest";
import { Deciding } from "../../src/gateway/deciding.js";

describe("a decision under way", () => {
  it("the connection's end cut it short: the signal carries the reason, read before or after", () => {
    const early = new Deciding();
    const signal = early.signal;
    early.abort("the connection ends");
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe("the connection ends");
    expect(early.endedBy).toBe("the connection ends");
    const late = new Deciding();
    late.abort("the connection ends");
    expect(late.signal.reason).toBe("the connection ends");
  });

  it("aborted without a reason, then the connection ends: the reason is recorded and the signal read since carries it", () => {
    for (const readFirst of [true, false]) {
      const d = new Deciding();
      const before = readFirst ? d.signal : null;
      d.abort();
      expect(d.endedBy).toBeUndefined();
      expect(d.signal.aborted).toBe(true);
      expect(typeof d.signal.reason).not.toBe("string");
      d.abort("the connection ends");
      expect(d.endedBy).toBe("the connection ends");
      expect(d.signal.aborted).toBe(true);
      expect(d.signal.reason).toBe("the connection ends");
      if (before) expect(before.aborted).toBe(true);
    }
  });

  it("a reason given first stays: a later abort changes nothing", () => {
    const d = new Deciding();
    d.abort("the connection ends");
    d.abort();
    d.abort("something else");
    expect(d.endedBy).toBe("the connection ends");
    expect(d.signal.reason).toBe("the connection ends");
  });
});
