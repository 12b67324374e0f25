// Reaching the human at the terminal and on the desktop, with real processes: a real gateway in
// front of the inventory fixture, `portcullis approvals --watch --json` running as its own
// process, `approve --next` / `deny --next` deciding with the passphrase, the one-screen review
// card, and the desktop notification run through a fixture notifier that records its argv.

import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { nextRequest, pending } from "../helpers/approvals.js";
import { watchApprovalsJson } from "../helpers/approvalsWatch.js";
import { completeLines } from "../helpers/completeLines.js";
import { exitWithOutput } from "../helpers/exitWithOutput.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { hostEnv, runCli, startInventory } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function inventory(stateDir: string, runArgs: string[] = [], env: Record<string, string> = {}) {
  const project = makeProject("A");
  cleanup.push(() => project.cleanup());
  const gw = await startInventory(project, ["--approval-timeout", "40000", ...runArgs], {
    stateDir,
    credentials: true,
    env,
  });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return { gw, project };
}

/** `portcullis approvals --watch --json` as a long-running process; its stdout lines as JSON. */
function watch(stateDir: string) {
  const w = watchApprovalsJson(stateDir, cleanup);
  const lines = () => w.lines<{ change: string; request: unknown; state?: string }>();
  return { child: w.child, lines, exited: w.exited };
}

function refusal(e: unknown) {
  return e as { code: number; data: Record<string, unknown> };
}

describe("portcullis approvals --watch", () => {
  it("--json prints one line when a request appears and one when it is decided; Ctrl-C exits 0", async () => {
    const stateDir = newStateDir();
    const { gw } = await inventory(stateDir);
    const w = watch(stateDir);
    const call = gw.client.callTool({ name: "read_status", arguments: {} });
    const appeared = await waitFor(
      () => w.lines().find((l) => l.change === "pending"),
      20_000,
      "a pending line from the watcher",
    );
    const id = (appeared.request as { request: string; tool: string }).request;
    expect((appeared.request as { tool: string }).tool).toBe("read_status");
    const ok = await runCli(["approve", id, "--for", "session", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(ok.code, ok.stderr).toBe(0);
    await call;
    const closed = await waitFor(
      () => w.lines().find((l) => l.change === "closed"),
      20_000,
      "a closed line from the watcher",
    );
    expect(closed).toMatchObject({
      change: "closed",
      request: id,
      state: "approved",
      decisionFor: "session",
    });
    expect(w.lines()).toHaveLength(2);
    w.child.kill("SIGINT");
    expect(await w.exited).toBe(0);
  });

  it("the text view's next step names the state directory it watches", async () => {
    const stateDir = newStateDir();
    const { gw } = await inventory(stateDir);
    const child: ChildProcess = spawn(NODE, [CLI, "approvals", "--watch", "--state-dir", stateDir], {
      env: hostEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    cleanup.push(() => {
      if (child.exitCode === null) child.kill("SIGKILL");
    });
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (c: string) => {
      out += c;
    });
    void gw.client.callTool({ name: "read_status", arguments: {} }).catch(() => {});
    // only lines written whole: a chunk can end inside the line that is looked for
    const line = await waitFor(
      () => completeLines(out).find((l) => l.startsWith("decide the next:")),
      20_000,
      "the watcher's next step",
    );
    expect(line).toBe(
      `decide the next: portcullis approve --next --state-dir ${stateDir}   (or portcullis deny --next --reason TEXT --state-dir ${stateDir})`,
    );
  });
});

describe("portcullis approve --next / deny --next", () => {
  it("decides the oldest pending request first; nothing pending is exit 2 with one sentence", async () => {
    const stateDir = newStateDir();
    const { gw, project } = await inventory(stateDir, ["--approval", "per-call"]);
    const none = await runCli(["approve", "--next", "--for", "call", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(none.code).toBe(2);
    expect(none.stderr.trim()).toBe("portcullis approve --next: no approval request is pending.");

    const seen = new Set<string>();
    const first = gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "S-1", delta: 1 } });
    const r1 = await nextRequest(stateDir, seen);
    const second = gw.client
      .callTool({ name: "adjust_inventory", arguments: { sku: "S-2", delta: 2 } })
      .catch((e) => e);
    const r2 = await nextRequest(stateDir, seen);

    const approved = await runCli(["approve", "--next", "--for", "call", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toContain(`approved ${r1.request}`);
    // the review is printed once
    expect(approved.stdout.split(`approval request ${r1.request}`)).toHaveLength(2);
    expect((await first).isError).toBeFalsy();
    expect((await pending(stateDir)).map((p) => p.request)).toEqual([r2.request]);

    const denied = await runCli(["deny", "--next", "--reason", "not now", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(denied.code, denied.stderr).toBe(0);
    expect(denied.stdout).toContain(`denied ${r2.request}`);
    expect(refusal(await second).data).toMatchObject({ error: "approval_denied", reason: "denied: not now" });
    expect(project.records().map((r) => r.args.sku)).toEqual(["S-1"]);
  });
});

describe("approve --next asks on the terminal", () => {
  it("never takes its answer from stdin: fed an answer there without a terminal, it refuses (exit 2) and decides nothing", async () => {
    const stateDir = newStateDir();
    const { gw } = await inventory(stateDir);
    void gw.client.callTool({ name: "read_status", arguments: {} }).catch(() => {});
    const r = await nextRequest(stateDir);
    // detached: a new session with no controlling terminal, as an agent's subprocess may be
    const child = spawn(NODE, [CLI, "approve", "--next", "--state-dir", stateDir], {
      env: hostEnv(passphraseEnv()),
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    });
    let stderr = "";
    let stdout = "";
    child.stderr.setEncoding("utf8").on("data", (c: string) => {
      stderr += c;
    });
    child.stdout.setEncoding("utf8").on("data", (c: string) => {
      stdout += c;
    });
    // its output read to the end, not only its exit: what it said is read once it exited
    const exited = exitWithOutput(child);
    child.stdin.end("s\n");
    const { code } = await exited;
    expect(code).toBe(2);
    expect(stderr).toMatch(/no terminal to ask on; give --for session\|call/);
    // refused before the review: a script gets nothing on stdout for a command that failed
    expect(stdout).toBe("");
    expect((await pending(stateDir)).map((p) => p.request)).toEqual([r.request]);
  });
});

describe("the review fits on one screen", () => {
  it("the card names host and launcher, tool, arguments and scopes in at most 20 lines; the chain only with --verbose", async () => {
    const stateDir = newStateDir();
    const { gw } = await inventory(stateDir);
    void gw.client
      .callTool({ name: "adjust_inventory", arguments: { sku: "S-7", delta: 7 } })
      .catch(() => {});
    const r = await nextRequest(stateDir);
    const text = await runCli(["approvals", "--state-dir", stateDir]);
    expect(text.code).toBe(0);
    const card = text.stdout.trimEnd().split("\n");
    expect(card.length).toBeLessThanOrEqual(20);
    expect(card[0]).toContain(`approval request ${r.request}`);
    expect(text.stdout).toMatch(/who +\S+ \(pid \d+\)/);
    expect(text.stdout).toMatch(/tool +adjust_inventory on inventory/);
    expect(text.stdout).toMatch(/sku = "S-7"/);
    expect(text.stdout).toMatch(/credentials/);
    expect(text.stdout).not.toMatch(/process chain/);
    const verbose = await runCli(["approvals", "--verbose", "--state-dir", stateDir]);
    expect(verbose.stdout).toMatch(/process chain/);
    expect(verbose.stdout.split("\n").length).toBeGreaterThan(card.length);
  });
});

describe("desktop notification", () => {
  it("runs the notifier once per new request with a title and a line naming tool and server, never an argument value", async () => {
    const dir = tempDir("portcullis-notify-");
    cleanup.push(() => {});
    const notifier = join(dir, "notify.sh");
    const out = join(dir, "argv");
    writeFileSync(notifier, `#!/bin/sh\nprintf '%s\\n' "$@" >> "${out}"\nprintf -- '--\\n' >> "${out}"\n`);
    chmodSync(notifier, 0o755);
    const stateDir = newStateDir();
    const { gw } = await inventory(stateDir, ["--approval", "per-call"], {
      PORTCULLIS_NOTIFY: "1",
      PORTCULLIS_NOTIFY_COMMAND: notifier,
    });
    void gw.client
      .callTool({ name: "adjust_inventory", arguments: { sku: "SKU-VALUE-4417", delta: 31337 } })
      .catch(() => {});
    await nextRequest(stateDir);
    const argv = await waitFor(
      () =>
        existsSync(out) && readFileSync(out, "utf8").includes("--\n") ? readFileSync(out, "utf8") : null,
      20_000,
      "the notifier to run",
    );
    expect(argv.split("\n").slice(0, 3)).toEqual([
      "portcullis: approval needed",
      // the command it names acts on the gateway's state directory, not the default one
      `tool adjust_inventory on server inventory — portcullis approve --next --state-dir ${stateDir}`,
      "--",
    ]);
    expect(argv).not.toContain("SKU-VALUE-4417");
    expect(argv).not.toContain("31337");
  });

  it("a notifier that is missing is skipped silently: the request is still made", async () => {
    const stateDir = newStateDir();
    const { gw } = await inventory(stateDir, [], {
      PORTCULLIS_NOTIFY: "1",
      PORTCULLIS_NOTIFY_COMMAND: join(tempDir("portcullis-notify-"), "absent"),
    });
    void gw.client.callTool({ name: "read_status", arguments: {} }).catch(() => {});
    const r = await nextRequest(stateDir);
    expect(r.tool).toBe("read_status");
    expect(gw.stderr()).not.toMatch(/ENOENT|notif/i);
  });
});
