// A server reached by URL writes to the host's log only through the gateway's warnings (its own
// stderr is on another machine). Each SSE event that is not JSON was one warning line: a server
// that sent a stream of tiny garbage events ("data: x") had the gateway write about nine times as
// many bytes to the host's log as it sent, for as long as it liked. So was each answer to a
// request nobody made (src/gateway/serverMessages.ts, shared with launched servers).
import { afterEach, describe, expect, it } from "vitest";
import { startGateway } from "../helpers/gateway.js";
import { HOSTILE, startFixture } from "./upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const GARBAGE = 20_000;

describe("a remote server's garbage events", () => {
  it("20,000 events that are not JSON, then the answer: the call is answered, and the log says so in a few lines, not one a event", async () => {
    const server = await startFixture({}, null, 0, HOSTILE);
    cleanup.push(() => server.kill());
    const gw = await startGateway({ args: ["--url", server.url, "--approval", "none"] });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const r = (await gw.client.callTool({ name: "bad", arguments: { mode: "garbage", count: GARBAGE } })) as {
      content: { text: string }[];
    };
    expect(r.content[0]!.text).toBe("garbage ok");
    const lines = gw
      .stderr()
      .split("\n")
      .filter((l) => /not JSON/.test(l));
    expect(lines.length, lines.slice(0, 3).join("\n")).toBeGreaterThan(0);
    expect(lines.length).toBeLessThanOrEqual(2);
  });

  it("5,000 answers to requests nobody made, then the answer: the call is answered, and the log says so in a few lines", async () => {
    const server = await startFixture({}, null, 0, HOSTILE);
    cleanup.push(() => server.kill());
    const gw = await startGateway({ args: ["--url", server.url, "--approval", "none"] });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const r = (await gw.client.callTool({ name: "bad", arguments: { mode: "strays", count: 5_000 } })) as {
      content: { text: string }[];
    };
    expect(r.content[0]!.text).toBe("strays ok");
    const lines = gw
      .stderr()
      .split("\n")
      .filter((l) => /unknown id/.test(l));
    expect(lines[0], gw.stderr().slice(-500)).toMatch(/unknown id "stray-0"/);
    expect(lines.length).toBeLessThanOrEqual(2);
  });
});
