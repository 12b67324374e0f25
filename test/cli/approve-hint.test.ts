// The command a gateway prints for the human (`… run in a terminal …: portcullis approve ID`, and
// the agent's approval_timeout) is copied into a terminal as it is. A gateway `wrap` wrote into a
// host's file gets its state directory from `--state-dir`, which that terminal does not have: the
// printed command must carry it, or it looks in the default state directory and finds nothing.
// The real CLI and a real gateway; the terminal's HOME has no state directory of its own. A state
// directory whose path needs quoting (a space, a quote) or holds control characters: the command
// is printed last, after a colon, in no quotes of the sentence's own, so it pastes whole into a
// real bash, and a control character is printed as its escape ($'…'), never raw.
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
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
  const printed = /to approve it, run in a terminal: (portcullis approve .+)$/.exec(line);
  expect(printed, line).not.toBeNull();
  const denyLine = await gw.waitForStderr(/or to deny \w+, run: /);
  const deny = /, run: (portcullis deny .+)$/.exec(denyLine)![1]!;
  return { approve: printed![1]!, deny, lines: [line, denyLine], refused, call, project };
}

/** `text` pasted into a real bash as it is, `portcullis` being this build's CLI. */
function pasted(text: string, env: Record<string, string>) {
  const r = spawnSync("bash", ["-c", `portcullis() { "$NODE_BIN" "$CLI_JS" "$@"; }\n${text}`], {
    env: { ...process.env, PORTCULLIS_HOME: "", ...env, NODE_BIN: NODE, CLI_JS: CLI },
    encoding: "utf8",
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
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
    expect(refused!.retry).toMatch(
      new RegExp(`in a terminal with: portcullis approve ${id} --state-dir ${stateDir}$`),
    );
    // typed in a terminal whose environment names no state directory (no PORTCULLIS_HOME, and a
    // HOME without one), as the human who reads the host's log has it
    const r = await runCli([...approve.split(" ").slice(1), "--for", "session"], {
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
    expect(refused!.retry).toMatch(new RegExp(`: ${approve}$`));
  });

  for (const [what, name] of [
    ["a space and a quote", "state dir's 'a b"],
    ["a newline and an escape sequence", "state\n\u001b[2Jdir"],
  ] as const)
    it(`pastes whole into bash, its path holding ${what}, never printing a control character raw`, async () => {
      const home = tempDir("portcullis-home-");
      cleanup.push(() => removeDir(home));
      const stateDir = join(home, name);
      const made = newStateDir();
      cpSync(made, stateDir, { recursive: true });
      removeDir(made);
      const { approve, deny, lines, refused, call } = await askedFor(stateDir, home);
      expect(deny).toBe(approve.replace(/^portcullis approve/, "portcullis deny"));
      // nothing of the line is a control character: the path's are escapes in it
      // biome-ignore lint/suspicious/noControlCharactersInRegex: what must not be printed
      for (const line of lines) expect(line).not.toMatch(/[\u0000-\u001f\u007f]/);
      // biome-ignore lint/suspicious/noControlCharactersInRegex: what must not be printed
      expect(refused!.retry).not.toMatch(/[\u0000-\u001f\u007f]/);
      const fromRetry = /in a terminal with: (portcullis approve .+)$/.exec(refused!.retry!)?.[1];
      expect(fromRetry).toBe(approve);
      const r = pasted(`${approve} --for session`, { ...passphraseEnv(), HOME: home });
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^approved \w+: grant/m);
      expect((await call()).isError).toBeFalsy();
    });
});
