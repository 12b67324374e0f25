// The server spawned before the gateway has loaded (src/supervisor/earlyStart.ts), on its own:
// only a launch of the very same spawn takes it; anything else ends it; it is taken or ended once.
// Real processes (sleep ignores its input: only a signal ends it).
import { afterEach, describe, expect, it } from "vitest";
import { EarlyStart } from "../../src/supervisor/earlyStart.js";
import type { SpawnSpec } from "../../src/supervisor/spawn.js";
import { alive, waitFor } from "../helpers/files.js";

const spec: SpawnSpec = {
  command: "sleep",
  args: ["60"],
  cwd: "/",
  env: { PATH: process.env.PATH ?? "", A: "1" },
};

let started: EarlyStart[] = [];
afterEach(async () => {
  for (const e of started) {
    await e.abandon();
    const pid = e.started.child.pid;
    if (pid !== undefined && alive(pid)) process.kill(pid, "SIGKILL");
  }
  started = [];
});

function early(): EarlyStart {
  const e = new EarlyStart(spec, []);
  started.push(e);
  return e;
}

describe("a server spawned early", () => {
  it("is taken by a launch of the same spawn (environment in any order), once", async () => {
    const e = early();
    await e.started.spawned;
    const same = { ...spec, env: { A: "1", PATH: spec.env.PATH! } };
    expect(e.take(same, {})).toBe(e.started);
    expect(e.take(same, {})).toBeNull(); // a respawn spawns its own
    await e.abandon(); // taken: not this object's to end
    expect(alive(e.started.child.pid!)).toBe(true);
  });

  for (const [what, other, extra] of [
    ["another argument", { ...spec, args: ["61"] }, {}],
    ["another directory", { ...spec, cwd: "/tmp" }, {}],
    ["another environment value", { ...spec, env: { ...spec.env, A: "2" } }, {}],
    ["one more variable", { ...spec, env: { ...spec.env, B: "" } }, {}],
    ["something added at the spawn", spec, { SECRET: "x" }],
  ] as const) {
    it(`is ended, not taken, by a launch with ${what}`, async () => {
      const e = early();
      const child = await e.started.spawned;
      expect(e.take(other as SpawnSpec, extra as Record<string, string>)).toBeNull();
      await waitFor(() => !alive(child.pid!), 10_000, "the early process to be ended");
    });
  }

  it("is ended when no launch takes it", async () => {
    const e = early();
    const child = await e.started.spawned;
    await e.abandon();
    expect(alive(child.pid!)).toBe(false);
    expect(e.take(spec, {})).toBeNull();
  });
});
