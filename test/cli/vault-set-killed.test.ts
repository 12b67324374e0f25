// `portcullis vault set NAME` rotating a secret while the vault is unlocked, killed with SIGKILL.
// set tells the running holder to forget the old value first, then stores the new one, then hands
// it to the holder. Killed after the forget, the holder holds nothing under the name (vault list
// says so; calls that need it are refused) and never the old value beside a new one stored: a
// value rotated is often one that leaked, and before, a set killed between the store and the
// holder left the holder releasing the old value until the next unlock. The kill point is made
// observable: a preload stops the set once the holder answered its forget.
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { askHolder } from "../../src/vault/holder.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const OLD = "vault-set-killed-old-value-5e2a";
const NEW = "vault-set-killed-new-value-93fd";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/**
 * A preload that holds a `portcullis vault set` once the holder answered it (as it closes the
 * connection: after the forget of the old value, before the new one is stored), having written `GATE.waiting-PID`.
 * It waits in Atomics.wait, so SIGKILL ends it there.
 */
function setGate(): { env: Record<string, string>; waiting(): number | null } {
  const dir = tempDir("portcullis-set-gate-");
  cleanup.push(() => removeDir(dir));
  const gate = join(dir, "open");
  const preload = join(dir, "set-gate.cjs");
  writeFileSync(
    preload,
    `const net = require("node:net");
const fs = require("node:fs");
const gate = process.env.SET_GATE;
const argv = process.argv.slice(2);
if (gate && argv[0] === "vault" && argv[1] === "set") {
  const connect = net.createConnection;
  net.createConnection = function (...args) {
    const socket = connect.apply(this, args);
    if (typeof args[0] === "string" && args[0].endsWith("vault.sock")) {
      let answered = false;
      socket.on("data", () => { answered = true; });
      const destroy = socket.destroy;
      socket.destroy = function (...a) {
        if (answered) {
          fs.writeFileSync(gate + ".waiting-" + process.pid, "");
          const nap = new Int32Array(new SharedArrayBuffer(4));
          while (!fs.existsSync(gate)) Atomics.wait(nap, 0, 0, 20);
        }
        return destroy.apply(this, a);
      };
    }
    return socket;
  };
}
`,
  );
  return {
    env: { NODE_OPTIONS: `--require ${preload}`, SET_GATE: gate },
    waiting: () => {
      const m = readdirSync(dir).find((n) => n.startsWith("open.waiting-"));
      return m ? Number(m.slice("open.waiting-".length)) : null;
    },
  };
}

async function released(stateDir: string, scope: string): Promise<string | null> {
  const r = await askHolder(stateDir, { op: "release", scope });
  return r?.ok === true ? String(r.value) : null;
}

describe("portcullis vault set rotating a secret while unlocked, killed with SIGKILL", () => {
  it("after the holder let go of the old value: nothing is released under the name, list says so, and set again hands over the new one", async () => {
    const stateDir = newStateDir();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
      removeDir(stateDir);
    });
    const set = await runCli(["vault", "set", "api", "--from-stdin", "--deliver", "env"], {
      stateDir,
      env: passphraseEnv(),
      input: OLD,
    });
    expect(set.code, set.stderr).toBe(0);
    const unlock = await runCli(["unlock", "--for", "10m"], { stateDir, env: passphraseEnv() });
    expect(unlock.code, unlock.stderr).toBe(0);
    expect(await released(stateDir, "api")).toBe(OLD);

    const g = setGate();
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
