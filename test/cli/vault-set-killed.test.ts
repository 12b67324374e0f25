// `portcullis vault set NAME` rotating a secret while the vault is unlocked, killed with SIGKILL.
// set tells the running holder to forget the old value first, then stores the new one, then hands
// it to the holder. Killed after the forget, the holder holds nothing under the name (vault list
// says so; calls that need it are refused) and never the old value beside a new one stored: a
// value rotated is often one that leaked, and before, a set killed between the store and the
// holder left the holder releasing the old value until the next unlock. The kill point is made
// observable: a preload stops the set once the holder answered its forget.
import { type ChildProcess, spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { passphraseEnv } from "../helpers/state.js";
import { holderAnsweredGate, released, vaultWith } from "../helpers/vaultState.js";

const OLD = "vault-set-killed-old-value-5e2a";
const NEW = "vault-set-killed-new-value-93fd";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("portcullis vault set rotating a secret while unlocked, killed with SIGKILL", () => {
  it("after the holder let go of the old value: nothing is released under the name, list says so, and set again hands over the new one", async () => {
    const stateDir = await vaultWith("api", OLD, (c) => cleanup.push(c));
    expect(await released(stateDir, "api")).toBe(OLD);

    const g = holderAnsweredGate("set", (c) => cleanup.push(c));
    const rotate: ChildProcess = spawn(
      NODE,
      [CLI, "vault", "set", "api", "--from-stdin", "--deliver", "env"],
      {
        env: hostEnv({ PORTCULLIS_HOME: stateDir, ...passphraseEnv(), ...g.env }),
        stdio: ["pipe", "pipe", "pipe"],
      },
    );
    rotate.stdin!.end(NEW);
    let stderr = "";
    rotate.stderr!.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => rotate.on("close", (_c, s) => resolve(s)));
    cleanup.push(async () => {
      if (rotate.exitCode === null && rotate.signalCode === null) rotate.kill("SIGKILL");
      await exited;
    });
    const pid = await waitFor(
      () => g.waiting() ?? (rotate.exitCode !== null ? -1 : 0),
      20_000,
      "vault set to have the holder's answer to its forget",
    );
    expect(pid, stderr).toBe(rotate.pid);
    rotate.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");

    expect(await released(stateDir, "api")).toBeNull();
    const list = JSON.parse((await runCli(["vault", "list", "--json"], { stateDir })).stdout) as {
      secrets: { name: string; held: boolean | null }[];
    };
    expect(list.secrets.map((s) => [s.name, s.held])).toEqual([["api", false]]);

    const again = await runCli(["vault", "set", "api", "--from-stdin", "--deliver", "env"], {
      stateDir,
      env: passphraseEnv(),
      input: NEW,
    });
    expect(again.code, again.stderr).toBe(0);
    expect(await released(stateDir, "api")).toBe(NEW);
  });
});
