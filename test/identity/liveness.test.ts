// The liveness decision behind every "is this gateway gone?" (src/identity/procLiveness.ts): gone
// only when provable from here; a process recorded in another PID namespace, or whose namespace or
// start time was never read, cannot be judged and is never taken for gone.
import { describe, expect, it } from "vitest";
import {
  inAnotherNamespace,
  judgeLiveness,
  NAMESPACE_UNREAD,
  ownPlace,
  processLiveness,
  processStartTime,
  recordedPlace,
} from "../../src/identity/proc.js";

const HERE = { pidNs: "pid:[4026531836]", boot: "boot-a" };
const rec = (over: Partial<Parameters<typeof judgeLiveness>[0]> = {}) => ({
  pid: 42,
  start: "1000",
  pidNs: HERE.pidNs,
  boot: HERE.boot,
  ...over,
});
const running = (start: string | null) => (pid: number) => (pid === 42 ? start : null);

describe("inAnotherNamespace", () => {
  it("only when both namespaces are known and differ: an unread one is 'cannot tell'", () => {
    expect(inAnotherNamespace(rec({ pidNs: "pid:[4026532999]" }), HERE)).toBe(true);
    expect(inAnotherNamespace(rec(), HERE)).toBe(false);
    expect(inAnotherNamespace(rec({ pidNs: null }), HERE)).toBe(false);
    expect(inAnotherNamespace(rec({ pidNs: "pid:[4026532999]" }), { pidNs: null, boot: HERE.boot })).toBe(
      false,
    );
  });
});

describe("judgeLiveness", () => {
  it("in our namespace and boot: alive while the pid runs the same process, gone otherwise", () => {
    expect(judgeLiveness(rec(), HERE, running("1000"))).toBe("alive");
    expect(judgeLiveness(rec(), HERE, running("2000"))).toBe("gone"); // pid reused
    expect(judgeLiveness(rec(), HERE, running(null))).toBe("gone"); // no such process
  });

  it("another PID namespace cannot be judged, whatever its pid names here", () => {
    const there = rec({ pidNs: "pid:[4026532999]" });
    expect(judgeLiveness(there, HERE, running(null))).toBe("unknown");
    expect(judgeLiveness(there, HERE, running("2000"))).toBe("unknown");
    expect(judgeLiveness(there, HERE, running("1000"))).toBe("unknown");
  });

  it("an unread namespace or start time, here or in the row, cannot be judged", () => {
    expect(judgeLiveness(rec({ pidNs: null }), HERE, running(null))).toBe("unknown");
    expect(judgeLiveness(rec({ start: null }), HERE, running(null))).toBe("unknown");
    expect(judgeLiveness(rec(), { ...HERE, pidNs: null }, running(null))).toBe("unknown");
  });

  it("a row written before namespaces were recorded is judged by its pid here, as its version did", () => {
    const old = rec({ pidNs: null, boot: null });
    expect(judgeLiveness(old, HERE, running("1000"))).toBe("alive");
    expect(judgeLiveness(old, HERE, running("2000"))).toBe("gone");
    expect(judgeLiveness(old, HERE, running(null))).toBe("gone");
    // still nothing to go on without its start time, or without a namespace of our own
    expect(judgeLiveness(rec({ pidNs: null, boot: null, start: null }), HERE, running(null))).toBe("unknown");
    expect(judgeLiveness(old, { pidNs: null, boot: null }, running(null))).toBe("unknown");
  });

  it("a current writer that could not read its namespace (nor its boot) is never judged by pid", () => {
    // a gateway whose /proc is not its own namespace's, in a sandbox with no boot id readable
    const place = recordedPlace({ pidNs: null, boot: null });
    expect(place).toEqual({ pidNs: NAMESPACE_UNREAD, boot: null });
    const row = rec({ ...place });
    // its pid may be another namespace's: nothing proves it gone, nor alive
    expect(judgeLiveness(row, HERE, running(null))).toBe("unknown");
    expect(judgeLiveness(row, HERE, running("2000"))).toBe("unknown");
    expect(judgeLiveness(row, HERE, running("1000"))).toBe("unknown");
    expect(inAnotherNamespace(row, HERE)).toBe(false);
    // a namespace that was read is recorded as read
    expect(recordedPlace(HERE)).toEqual(HERE);
  });

  it("another boot is gone: a reboot ended every process, in every namespace", () => {
    expect(judgeLiveness(rec({ boot: "boot-b" }), HERE, running("1000"))).toBe("gone");
    expect(judgeLiveness(rec({ boot: "boot-b", pidNs: "pid:[1]" }), HERE, running(null))).toBe("gone");
    // an unknown boot on either side proves nothing by itself
    expect(judgeLiveness(rec({ boot: null }), HERE, running("1000"))).toBe("alive");
    expect(judgeLiveness(rec({ boot: null, pidNs: "pid:[1]" }), HERE, running(null))).toBe("unknown");
  });
});

describe.runIf(process.platform === "linux")("this process's own place", () => {
  it("reads its PID namespace and boot id, and judges itself alive", () => {
    const place = ownPlace();
    expect(place.pidNs).toMatch(/^pid:\[\d+\]$/);
    expect(place.boot).toMatch(/^[0-9a-f-]{36}$/);
    const me = { pid: process.pid, start: processStartTime(process.pid), ...place };
    expect(processLiveness(me)).toBe("alive");
  });
});
