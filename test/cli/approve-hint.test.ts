// The command a gateway prints for the human (`run 'portcullis approve ID' … in a terminal`, and
// the agent's approval_timeout) is copied into a terminal as it is. A gateway `wrap` wrote into a
// host's file gets its state directory from `--state-dir`, which that terminal does not have: the
// printed command must carry it, or it looks in the default state directory and finds nothing.
// The real CLI and a real gateway; the terminal's HOME has no state directory of its own.
import { cpSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** The gateway's printed `portcullis approve …`, and the agent's approval_timeout, for one call. */
async function askedFor(stateDir: string, home: string) {
  const project = makeProject("A");
  cleanup.push(() => project.cleanup());
  const gw = await startGateway({
    args: ["--label", "inventory", "--approval-timeout", "500", "--", ...project.command],
    cwd: project.dir,
    env: { ...project.env, ...project.credentialEnv, HOME: home },
    stateDir,
  });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  const call = () => gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "a", delta: 1 } });
  const refused = await call().then(
    () => null,
    (e: { data?: { error?: string; retry?: string } }) => e.data,
  );
  const line = await gw.waitForStderr(/approval needed for "adjust_inventory"/);
  const printed = /run '(portcullis approve [^']+)' or '(portcullis deny [^']+)' in a terminal/.exec(line);
  expect(printed, line).not.toBeNull();
  return { approve: printed![1]!, deny: printed![2]!, refused, call, project };
}

describe("the approve command a gateway prints", () => {
  it("names the gateway's state directory when it is not the default, and works as copied", async () => {
    const stateDir = newStateDir();
    const home = tempDir("portcullis-home-");
    cleanup.push(() => removeDir(home));
    const { approve, deny, refused, call, project } = await askedFor(stateDir, home);
    const id = /^portcullis approve (\w+)/.exec(approve)![1]!;
    expect(approve).toBe(`portcullis approve ${id} --state-dir ${stateDir}`);
    expect(deny).toBe(`portcullis deny ${id} --state-dir ${stateDir}`);
    expect(refused).toMatchObject({ error: "approval_timeout" });
    expect(refused!.retry).toContain(`'portcullis approve ${id} --state-dir ${stateDir}'`);
    // typed in a terminal whose environment names no state directory (no PORTCULLIS_HOME, and a
    // HOME without one), as the human who reads the host's log has it
    const r = await runCli(approve.split(" ").slice(1), {
      env: { ...passphraseEnv(), HOME: home },
      noTerminal: true,
    });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    // the agent's retry of the same call proceeds on that approval
    expect((await call()).isError).toBeFalsy();
    expect(project.records().filter((c) => c.tool === "adjust_inventory")).toHaveLength(1);
  });

  it("is the bare command for the default state directory", async () => {
    const home = tempDir("portcullis-home-");
    cleanup.push(() => removeDir(home));
    const stateDir = join(home, ".local", "state", "portcullis");
    mkdirSync(join(home, ".local", "state"), { recursive: true });
    const made = newStateDir();
    cpSync(made, stateDir, { recursive: true });
    removeDir(made);
    const { approve, refused } = await askedFor(stateDir, home);
    expect(approve).toMatch(/^portcullis approve \w+$/);
    expect(refused!.retry).toContain(`'${approve}'`);
  });
});
