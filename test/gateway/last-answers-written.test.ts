// A gateway whose client closes its input answers every request still at the server (the
// shutdown's refusal), and all of those answers reach the client before the gateway exits, not
// only what its stdout pipe took at once. Real gateway, real fixture server (exhaust.mjs: `hang`,
// never answered), a raw client on plain pipes that reads to the end.
//
// What failed before: the gateway exited with process.exit while most of its last answers still
// waited in its own memory for the pipe: of 3,000 calls at the server, 1,100 to 1,600 got
// `shutting_down`, the rest nothing at all.
import { afterEach, describe, expect, it } from "vitest";
import { startExhaustGateway } from "../helpers/exhaustGateway.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a gateway whose client closes its input", () => {
  it("writes every last answer before it exits: 3,000 calls at a server that answers none all get shutting_down", async () => {
    // (the answers still awaited at the input's end are waited for up to the hold timeout: short here)
    const g = startExhaustGateway(
      { label: "last", args: ["--hold-timeout", "2000"], stderr: "collected" },
      (end) => cleanup.push(end),
    );
    await g.init();
    const count = 3000;
    for (let i = 0; i < count; i++)
      g.send({ jsonrpc: "2.0", id: `h${i}`, method: "tools/call", params: { name: "hang" } });
    // read and decided before the input closes: an echo behind them is answered once they are
    const echo = await g.call("echo", "echo", { tag: "behind" });
    expect(g.text(echo)).toBe("echo behind");
    await g.end();
    const ends = [...Array(count).keys()].map((i) => g.answers.get(`h${i}`)?.error?.data?.error ?? "none");
    expect(ends.filter((e) => e !== "shutting_down").length).toBe(0);
  }, 60_000);
});
