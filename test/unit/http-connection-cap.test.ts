// The cap on the open connections of `run --listen`'s front, the console and the egress proxy
// (src/transport/httpConnections.ts): half the process's soft descriptor limit as
// /proc/self/limits says it (src/identity/procLimits.ts), within [32, 1024]; a quarter for the
// egress proxy, whose connections may each dial an upstream.
import { describe, expect, it } from "vitest";
import { openFilesSoftLimit } from "../../src/identity/proc.js";
import { connectionCap } from "../../src/transport/httpConnections.js";

const limits = (soft: string, hard = soft) =>
  `Limit                     Soft Limit           Hard Limit           Units     \nMax cpu time              unlimited            unlimited            seconds   \nMax open files            ${soft}                  ${hard}                  files     \n`;

describe("connectionCap", () => {
  it("reads the soft limit on open files; none when unlimited or absent", () => {
    expect(openFilesSoftLimit(limits("200"))).toBe(200);
    expect(openFilesSoftLimit(limits("1024", "4096"))).toBe(1024);
    expect(openFilesSoftLimit(limits("unlimited"))).toBeNull();
    expect(openFilesSoftLimit("Limit  Soft Limit\n")).toBeNull();
    expect(openFilesSoftLimit(null)).toBeNull();
  });

  it("is half the soft limit, at least 32 and at most 1024; 1024 when the limit is not known", () => {
    expect(connectionCap(200)).toBe(100);
    expect(connectionCap(1024)).toBe(512);
    expect(connectionCap(20)).toBe(32);
    expect(connectionCap(1_048_576)).toBe(1024);
    expect(connectionCap(null)).toBe(1024);
  });

  it("counts a connection that may hold two descriptors as two (the egress proxy's)", () => {
    expect(connectionCap(200, 2)).toBe(50);
    expect(connectionCap(1024, 2)).toBe(256);
    expect(connectionCap(100, 2)).toBe(32);
    expect(connectionCap(null, 2)).toBe(1024);
  });
});
