// The pacing of re-lists (src/gateway/relistPace.ts), over a clock the test moves: when a re-list
// may run, when a generation's budget of revisions is spent, and what starts it afresh.
// test/gateway/catalog-churn.test.ts checks the same end to end, with a real server.
import { describe, expect, it } from "vitest";
import { PACE, RelistPace } from "../../src/gateway/relistPace.js";

function paced() {
  let now = 1_000_000;
  const pace = new RelistPace<string>(() => now);
  return { pace, advance: (ms: number) => (now += ms) };
}

describe("re-list pacing", () => {
  it("lets the first changes through at once, then doubles the wait up to its ceiling", () => {
    const { pace, advance } = paced();
    for (let i = 0; i < PACE.FREE_CHANGES; i++) {
      expect(pace.delayBefore("g")).toBe(0);
      pace.relisted("g", true);
    }
    const waits: number[] = [];
    for (let i = 0; i < 12; i++) {
      const wait = pace.delayBefore("g");
      waits.push(wait);
      advance(wait);
      expect(pace.delayBefore("g")).toBe(0);
      pace.relisted("g", true);
    }
    expect(waits.slice(0, 4)).toEqual([1, 2, 4, 8].map((x) => x * PACE.FIRST_DELAY_MS));
    expect(Math.max(...waits)).toBe(PACE.MAX_DELAY_MS);
  });

  it("a re-list that finds the same revision ends the streak: the next one runs at once", () => {
    const { pace } = paced();
    for (let i = 0; i < PACE.FREE_CHANGES + 2; i++) pace.relisted("g", true);
    expect(pace.delayBefore("g")).toBeGreaterThan(0);
    pace.relisted("g", false);
    expect(pace.delayBefore("g")).toBe(0);
  });

  it("a catalog that changes now and then, each change followed by a stable list, is never delayed nor stopped", () => {
    const { pace, advance } = paced();
    for (let i = 0; i < 3 * PACE.BUDGET; i++) {
      pace.relisted("g", true);
      pace.relisted("g", false);
      advance((2 * PACE.WINDOW_MS) / PACE.BUDGET);
      expect(pace.delayBefore("g")).toBe(0);
    }
    expect(pace.stoppedFor("g")).toBe(false);
  });

  it("stops a generation once its re-lists recorded the budget of revisions within the window", () => {
    const { pace } = paced();
    const turns: (string | null)[] = [];
    // changes that alternate with a stable list never wait: the budget is what ends them
    for (let i = 0; i < PACE.BUDGET; i++) {
      turns.push(pace.relisted("g", true));
      pace.relisted("g", false);
    }
    expect(turns.filter((t) => t === "stopped")).toHaveLength(1);
    expect(turns.at(-1)).toBe("stopped");
    expect(pace.stoppedFor("g")).toBe(true);
    expect(pace.spent("g")).toBe(PACE.BUDGET);
  });

  it("revisions older than the window no longer count", () => {
    const { pace, advance } = paced();
    for (let i = 0; i < PACE.BUDGET - 1; i++) pace.relisted("g", true);
    advance(PACE.WINDOW_MS);
    expect(pace.relisted("g", true)).toBeNull();
    expect(pace.spent("g")).toBe(1);
    expect(pace.stoppedFor("g")).toBe(false);
  });

  it("a new generation starts afresh", () => {
    const { pace } = paced();
    for (let i = 0; i < PACE.BUDGET; i++) pace.relisted("old", true);
    expect(pace.stoppedFor("old")).toBe(true);
    expect(pace.stoppedFor("new")).toBe(false);
    expect(pace.delayBefore("new")).toBe(0);
    expect(pace.spent("new")).toBe(0);
    expect(pace.relisted("new", true)).toBeNull();
  });
});
