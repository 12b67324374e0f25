// While supervision is paused, every call is refused server_unavailable at once; its message must
// say which pause it is. The pauses come from the real crash-loop policy (src/supervisor/crashLoop.ts)
// as the supervisor words them for the client, so the two cannot drift apart: a server whose files
// keep changing as it starts never crashed, and one that cannot be started did not crash either.
import { describe, expect, it } from "vitest";
import { refuse } from "../../src/guard/refusals.js";
import { CrashLoop, type LoopStop } from "../../src/supervisor/crashLoop.js";

/** A crash loop that pauses (the watcher runs and supervision waits for a change). */
const pausing = () => new CrashLoop({ waitForChange: true, watching: () => true });

/** The first stop of `step` repeated up to the loop limit, as the client is told it (Supervisor.pause). */
function toldOf(step: () => LoopStop | null): string {
  for (let i = 0; i < 10; i++) {
    const stop = step();
    if (stop === null) continue;
    if (!("pause" in stop)) throw new Error(`not a pause: ${stop.giveUp}`);
    return `${stop.told ?? stop.pause}; portcullis starts it again at the next change of its files`;
  }
  throw new Error("no pause within 10 steps");
}

describe("server_unavailable while supervision is paused", () => {
  it("a crash loop: the server keeps crashing", () => {
    const loop = pausing();
    const e = refuse.serverUnavailable(toldOf(() => loop.crashed("exited with code 1")));
    expect(e.message).toBe("The server keeps crashing; portcullis starts it again when its files change.");
    expect(e.data).toMatchObject({
      error: "server_unavailable",
      reason: expect.stringMatching(/^the server keeps crashing \(/),
    });
  });

  it("files that keep changing as it starts: said so, never a crash", () => {
    const loop = pausing();
    const e = refuse.serverUnavailable(toldOf(() => loop.restartedAtStart()));
    expect(e.message).toMatch(
      /^The server's files keep changing as it starts, so portcullis stopped restarting it;/,
    );
    expect(e.message).not.toMatch(/crash/i);
    expect(e.data).toMatchObject({
      reason: expect.stringMatching(/^the server's files keep changing as it starts \(5 restarts/),
      retry: expect.stringMatching(/stop the server writing the files portcullis watches/),
    });
  });

  it("a server that cannot be started: said so, never a crash", () => {
    const loop = pausing();
    const e = refuse.serverUnavailable(toldOf(() => loop.cannotStart("ENOENT: no such file")));
    expect(e.message).toBe("The server cannot be started; portcullis tries again when its files change.");
    expect(e.message).not.toMatch(/crash/i);
    // the capture's own error stays in the log: the client is told the fixed words only
    expect((e.data as { reason: string }).reason).not.toMatch(/ENOENT/);
  });

  it("without a pause: the server is not running right now, retry in a moment", () => {
    expect(refuse.serverUnavailable(null).message).toBe(
      "The server is not running right now; retry in a moment.",
    );
  });
});
