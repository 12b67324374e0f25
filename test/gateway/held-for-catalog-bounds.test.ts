// Requests held until the server's catalog arrives are bounded by count and size, not only by the
// hold timeout: until it passes, every one the client sends was kept, however many (a client's
// pipe carries gigabytes in 15 s). Real gateway, real fixture server (exhaust.mjs, its tools/list
// answered only once a file exists: FIXTURE_LIST_GATE), a raw client on plain pipes.
//
// What failed before: 100 calls of 1 MiB sent while the catalog was fetched were all held (100 MiB
// of the client's text kept until the catalog came), and 4,100 small ones too; none was refused.
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MIB, startExhaustGateway } from "../helpers/exhaustGateway.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";

/** MAX_HELD and MAX_HELD_BYTES (src/gateway/guardedRequests.ts), written out: the cases are also run against a gateway without them */
const MAX_HELD = 4096;
const MAX_HELD_MIB = 64;
const NOT_HELD = /as many requests as portcullis holds for it already wait; this one was not held/;
const SAID = /refused a request of the client's, not held: \d+ requests of the client's/g;

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A gateway whose server answers tools/list once `gate` exists; held requests wait up to 60 s. */
async function gatedGateway() {
  const gate = join(tempDir("portcullis-held-"), "gate");
  cleanup.push(() => removeDir(dirname(gate)));
  const g = startExhaustGateway(
    {
      label: "held",
      env: { FIXTURE_LIST_GATE: gate },
      args: ["--hold-timeout", "60000"],
      stderr: "collected",
    },
    (end) => cleanup.push(end),
  );
  await g.initialize({});
  g.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  return { g, open: () => writeFileSync(gate, "") };
}

describe("requests held for the server's catalog", () => {
  it("are held up to 64 MiB; past it a request is refused at once, said once, and those held are served once the catalog arrives", async () => {
    const { g, open } = await gatedGateway();
    const count = 100;
    const pad = "x".repeat(MIB);
    for (let i = 0; i < count; i++)
      g.send({
        jsonrpc: "2.0",
        id: `c${i}`,
        method: "tools/call",
        params: { name: "echo", arguments: { tag: pad } },
      });
    // 100 MiB through two pipes: 15-19 s at load 20 on two cores, before the gateway reads the last
    const last = await g.answer(`c${count - 1}`, 60_000);
    expect(last.error?.message).toMatch(NOT_HELD);
    expect(last.error?.data?.error).toBe("identity_pending");
    open();
    const ids = [...Array(count).keys()].map((i) => `c${i}`);
    await waitFor(() => ids.every((id) => g.answers.has(id)), 60_000, "every call answered");
    // those held are decided once it is in (answered, or refused as a burst past what may wait
    // in the server's stdin: taken up at once, they are written faster than it reads)
    const refused = ids.filter((id) => NOT_HELD.test(g.answers.get(id)?.error?.message ?? ""));
    const held = count - refused.length;
    // 64 of 1 MiB (and a little) are at most 64 MiB when the next is held, which passes it
    expect(held).toBeGreaterThanOrEqual(MAX_HELD_MIB - 1);
    expect(held).toBeLessThanOrEqual(MAX_HELD_MIB + 1);
    expect(ids.some((id) => g.text(g.answers.get(id) ?? {}) === `echo ${pad}`)).toBe(true);
    expect(g.stderr().match(SAID)?.length).toBe(1);
  }, 150_000);

  it(`are held up to ${MAX_HELD} at once; past them a request is refused at once`, async () => {
    const { g, open } = await gatedGateway();
    const extra = 4;
    const count = MAX_HELD + extra;
    for (let i = 0; i < count; i++)
      g.send({
        jsonrpc: "2.0",
        id: `s${i}`,
        method: "tools/call",
        params: { name: "echo", arguments: { tag: "s" } },
      });
    const ids = [...Array(count).keys()].map((i) => `s${i}`);
    const refused = () => ids.filter((id) => NOT_HELD.test(g.answers.get(id)?.error?.message ?? ""));
    await waitFor(() => refused().length === extra, 20_000, `${extra} calls refused`);
    open();
    await waitFor(() => ids.every((id) => g.answers.has(id)), 30_000, "every call answered");
    expect(ids.filter((id) => g.text(g.answers.get(id) ?? {}) === "echo s").length).toBe(MAX_HELD);
  }, 60_000);
});
