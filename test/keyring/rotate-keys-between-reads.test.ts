// `portcullis rotate-keys` committing its rotation record at the very moment a running gateway
// reads the chain of pins (src/approval/pinChain.ts, PinChain.follow). Not a guessed moment: a
// preload in the gateway (inert in every other process, and until the test arms it) holds the
// gateway just before it runs the statement that reads pin records, once; the real CLI rotates
// while it is held. What it would catch: a look that reads the chain's head and its new pin records
// in two statements (a pin committed between them was read, yet came after the head the next look
// starts from, so that look read it again and took the copy for a pin that is no rotation: a false
// "ignored" warning on the gateway's stderr). A real gateway before the inventory fixture.
import { readdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { PIN_TYPE_HEX } from "../../src/approval/pinSchema.js";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { withPassphrase } from "../helpers/passphraseChange.js";
import { CLI } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { pinChain, rotateByCli } from "../helpers/rotation.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const NEW = "the passphrase after a rotation between two reads";
const IGNORED = /pins other approver keys after the first/;

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/**
 * A preload that, once `arm` exists in its directory, holds `portcullis run` just before its next
 * statement naming the pins' index expression runs (a statement of the better-sqlite3 the gateway
 * itself loads), until `open` exists; `waiting` says it is held.
 */
function pinReadGate(): { env: Record<string, string>; arm(): void; held(): boolean; open(): void } {
  const dir = tempDir("portcullis-pin-read-gate-");
  cleanup.push(() => removeDir(dir));
  const sqlite = createRequire(CLI).resolve("better-sqlite3");
  const preload = join(dir, "gate.cjs");
  writeFileSync(
    preload,
    `const fs = require("node:fs");
const dir = ${JSON.stringify(dir)};
if (process.argv[2] === "run") {
  const Database = require(${JSON.stringify(sqlite)});
  const prepare = Database.prototype.prepare;
  const hold = () => {
    if (!fs.existsSync(dir + "/arm") || fs.existsSync(dir + "/waiting")) return;
    fs.writeFileSync(dir + "/waiting", String(process.pid));
    const nap = new Int32Array(new SharedArrayBuffer(4));
    while (!fs.existsSync(dir + "/open")) Atomics.wait(nap, 0, 0, 20);
  };
  Database.prototype.prepare = function (sql) {
    const stmt = prepare.apply(this, arguments);
    if (String(sql).toLowerCase().includes(${JSON.stringify(PIN_TYPE_HEX.toLowerCase())})) {
      for (const m of ["all", "get", "iterate"]) {
        const real = stmt[m];
        stmt[m] = function () {
          hold();
          return real.apply(this, arguments);
        };
      }
    }
    return stmt;
  };
}
`,
  );
  return {
    env: { NODE_OPTIONS: `--require ${preload}` },
    arm: () => writeFileSync(join(dir, "arm"), ""),
    held: () => readdirSync(dir).includes("waiting"),
    open: () => writeFileSync(join(dir, "open"), ""),
  };
}

it("a rotation committed while a gateway reads the pins is followed once, and reported as no ignored pin", async () => {
  const stateDir = newStateDir();
  cleanup.push(() => removeDir(stateDir));
  const project = makeProject("A");
  cleanup.push(() => project.cleanup());
  const gate = pinReadGate();
  const gw = await startInventory(project, ["--approval-timeout", "60000"], {
    stateDir,
    env: { ...gate.env, PORTCULLIS_NO_CONSOLE: "1" },
  });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  const seen = new Set<string>();
  const call = () =>
    gw.client
      .callTool({ name: "read_status", arguments: {} }, undefined, { timeout: 60_000 })
      .catch((e: unknown) => e);
  // a session grant, whose next call makes the gateway read the pins written since its last look
  const first = call();
  const asked = await nextStoredRequest(stateDir, seen);
  await decideByCli(stateDir, "approve", asked.request, "--for", "session");
  expect(((await first) as { isError?: boolean }).isError).toBeFalsy();

  // the next call's look at the pins is held; the rotation is committed meanwhile
  gate.arm();
  const second = call();
  await waitFor(gate.held, 15_000, "the gateway to be held at its read of the pins");
  const rotated = await rotateByCli(stateDir, passphraseEnv(), NEW, ["--json"]);
  expect(rotated.code, rotated.stderr).toBe(0);
  gate.open();

  // the grant the old key signed covers the call no more: it asks a human, who denies it with the
  // new passphrase (a decision the gateway checks by following the chain again)
  const asked2 = await nextStoredRequest(stateDir, seen);
  const denied = await runCli(["deny", asked2.request], { stateDir, env: withPassphrase(NEW) });
  expect(denied.code, denied.stderr).toBe(0);
  expect(String(await second)).toContain("A human denied this call");

  // the chain followed once: the first pin and the rotation, and no pin reported as ignored
  expect(pinChain(stateDir)).toHaveLength(2);
  expect(gw.stderr()).not.toMatch(IGNORED);
  // nor is the race taken for a keyring.json put back from a copy (read before the rotation, the
  // chain after it): trusted() looks once more
  expect(gw.stderr()).not.toContain("keyring.json is a copy made before that rotation");
}, 30_000);
