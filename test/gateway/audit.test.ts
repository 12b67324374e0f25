// The audit log as the gateway writes it: crash safety under SIGKILL, no secret anywhere,
// and the sessions view of a rebuild story — all through real gateway processes.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { argumentsDigest } from "../../src/audit/index.js";
import { auditEvents, verifiedAuditEvents } from "../helpers/approvals.js";
import { makeCatalog, numberedTools } from "../helpers/catalog.js";
import { readJsonLines, removeDir, sleep, tempDir, waitFor } from "../helpers/files.js";
import { hostEnv, runCli, startGateway, startInventory } from "../helpers/gateway.js";
import { CLI, fixtureCommand, NODE } from "../helpers/paths.js";
import { INVENTORY_KEY, makeProject } from "../helpers/project.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/**
 * Every event of the audit, once `portcullis audit verify` found the chain whole: one CLI process
 * and one decryption (verifiedAuditEvents). It was `audit checkpoint` and then `audit show SEQ
 * --json` for each record, a process each (about 0.25 s of CPU, 29 for the file's two uses) that
 * verified the chain again; `audit show` is test/audit/cli.test.ts's subject, not this file's.
 */
const events = (stateDir: string) => verifiedAuditEvents(stateDir);

describe("the gateway's audit log", () => {
  it("SIGKILL during a stream of calls: the chain verifies, and every call the server saw has its intent record", async () => {
    const cat = makeCatalog(numberedTools("t", 2));
    const stateDir = newStateDir();
    const gw = await startGateway({
      args: ["--label", "stream", "--approval", "none", "--", ...fixtureCommand("catalog")],
      env: cat.env,
      stateDir,
    });
    cleanup.push(() => cat.cleanup());
    await gw.client.listTools();
    let n = 0;
    const stream = (async () => {
      for (;;) {
        const i = n++;
        await gw.client.callTool({ name: "t_0", arguments: { value: `call-${i}` } });
      }
    })().catch(() => {});
    await waitFor(() => cat.records().length >= 25, 20_000, "calls to flow");
    gw.kill("SIGKILL");
    await gw.exited;
    await stream;
    await gw.close().catch(() => {});
    await sleep(200);
    const verify = await runCli(["audit", "verify", "--json", "--state-dir", stateDir]);
    expect(verify.code).toBe(0);
    expect(JSON.parse(verify.stdout).ok).toBe(true);
    const seen = cat.records();
    expect(seen.length).toBeGreaterThanOrEqual(25);
    const activity = await runCli(["audit", "activity", "--json", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(activity.code).toBe(0);
    const intents = new Set(
      (JSON.parse(activity.stdout) as { argumentsDigest: string | null }[]).map((a) => a.argumentsDigest),
    );
    for (const call of seen) expect(intents.has(argumentsDigest(call.args))).toBe(true);
  });

  it("no credential or passphrase appears in the store, the WAL, the export, stderr or the gateway's argv", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval", "none"], { credentials: true, stateDir });
    await gw.client.listTools();
    const res = await gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "K", delta: 1 } });
    expect(res.isError).toBeFalsy(); // the server did get the credential
    const argv = readFileSync(`/proc/${gw.pid}/cmdline`, "utf8");
    await gw.close();
    const exported = await runCli(["audit", "export", "--state-dir", stateDir]);
    const shown = await runCli(["audit", "activity", "--json", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    const status = await runCli(["status", "--all", "--json", "--state-dir", stateDir]);
    const files = readdirSync(stateDir).map((f) => readFileSync(join(stateDir, f)).toString("latin1"));
    const haystacks = [...files, exported.stdout, shown.stdout, status.stdout, gw.stderr(), argv];
    for (const secret of [INVENTORY_KEY, TEST_PASSPHRASE]) {
      for (const h of haystacks) expect(h.includes(secret)).toBe(false);
    }
    // …while the store does hold the run: the scan looked at real content
    expect(files.join("").length).toBeGreaterThan(10_000);
  });

  it("audit.arguments clear: the arguments are recorded (sealed), secret-named values redacted", async () => {
    const cat = makeCatalog([
      {
        name: "send",
        description: "Send a value.",
        inputSchema: { type: "object", properties: { value: { type: "string" }, token: { type: "string" } } },
      },
    ]);
    cleanup.push(() => cat.cleanup());
    const stateDir = newStateDir();
    const gw = await startGateway({
      args: [
        "--label",
        "clear",
        "--approval",
        "none",
        "--audit-arguments",
        "clear",
        "--",
        ...fixtureCommand("catalog"),
      ],
      env: cat.env,
      stateDir,
    });
    await gw.client.listTools();
    const sent = await gw.client
      .callTool({ name: "send", arguments: { value: "visible", token: "tok-do-not-log-81f2" } })
      .catch((e) => e);
    expect(sent, JSON.stringify((sent as { data?: unknown }).data)).not.toBeInstanceOf(Error);
    await gw.close();
    const called = (await events(stateDir)).filter((e) => e.type === "tool_called");
    expect(called).toHaveLength(1);
    expect(called[0]!.arguments).toEqual({ value: "visible", token: { redacted: true } });
    expect(called[0]!.argumentsDigest).toBe(
      argumentsDigest({ value: "visible", token: "tok-do-not-log-81f2" }),
    );
    const files = readdirSync(stateDir).map((f) => readFileSync(join(stateDir, f)).toString("latin1"));
    expect(files.some((f) => f.includes("tok-do-not-log-81f2"))).toBe(false);
  });

  it("sessions: the rebuild story shows which epochs the run dealt with and which revisions it was shown", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval", "none", "--on-change", "restart"], {
      credentials: true,
      stateDir,
    });
    await gw.client.listTools();
    await gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "K", delta: 1 } });
    project.rebuild("B");
    await gw.waitForStderr(/new execution epoch/, 15_000);
    await gw.client
      .callTool({ name: "adjust_inventory", arguments: { sku: "K", delta: 2 } })
      .catch(() => null);
    await gw.client.listTools();
    await gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "K", delta: 3, warehouse: "w" } });
    await gw.close();
    const r = await runCli(["audit", "sessions", "--json", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(r.code).toBe(0);
    const sessions = JSON.parse(r.stdout) as {
      run: string;
      epochs: string[];
      revisions: { revision: number; epoch: string }[];
      calls: number;
      refused: number;
    }[];
    expect(sessions).toHaveLength(1);
    const s = sessions[0]!;
    expect(s.epochs).toHaveLength(2);
    expect(s.revisions.map((v) => v.revision)).toEqual([1, 2]);
    expect(s.revisions[0]!.epoch).toBe(s.epochs[0]);
    expect(s.revisions[1]!.epoch).toBe(s.epochs[1]);
    expect(s.refused).toBe(1);
    const all = await events(stateDir);
    // one epoch change, one server_replaced naming both epochs
    const replaced = all.filter((e) => e.type === "server_replaced");
    expect(replaced).toEqual([
      expect.objectContaining({ oldEpoch: s.epochs[0], newEpoch: s.epochs[1], reason: "restart" }),
    ]);
    expect(all.filter((e) => e.type === "server_started")).toHaveLength(2);
    const revised = all.filter((e) => e.type === "catalog_revised");
    expect(revised).toHaveLength(2);
    expect((revised[1]!.inventory as { name: string }[]).map((t) => t.name)).toContain("adjust_inventory");
    expect(revised[1]!.diff).toBeTruthy();
  });
});

interface IdleEntry {
  run: string | null;
  server: string;
  lastExit?: unknown;
}

/**
 * Waits until `audit sessions --json` shows the gateway labelled `label` as `shown` wants: its
 * records are written after the lines on stderr that announce them, so a SIGKILL right after a
 * line could come before them.
 */
async function untilAudited(
  stateDir: string,
  label: string,
  shown: (e: IdleEntry) => boolean,
): Promise<void> {
  await waitFor(
    async () => {
      const r = await runCli(["audit", "sessions", "--json", "--state-dir", stateDir], {
        env: passphraseEnv(),
      });
      return (
        r.code === 0 && (JSON.parse(r.stdout) as IdleEntry[]).some((e) => e.server === label && shown(e))
      );
    },
    20_000,
    `the audit to show gateway ${label}`,
  );
}

/**
 * `portcullis run` whose client never sends a request: started, left until it serves, then its
 * input closed (`end`: it stops by itself) or the gateway SIGKILLed (`kill`: nothing written after).
 */
async function gatewayWithoutRequest(stateDir: string, label: string, how: "end" | "kill"): Promise<void> {
  const child = spawn(NODE, [CLI, "run", "--label", label, "--", ...fixtureCommand("echo")], {
    env: hostEnv({ PORTCULLIS_HOME: stateDir }),
    stdio: ["pipe", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  const exited = new Promise<number | null>((res) => child.on("close", (code) => res(code)));
  await waitFor(() => /serving .* epoch=/.test(stderr), 20_000, `gateway ${label} to serve`);
  if (how === "end") child.stdin.end();
  else {
    await untilAudited(stateDir, label, () => true);
    child.kill("SIGKILL");
  }
  const code = await exited;
  if (how === "end") expect(code, stderr).toBe(0);
}

/**
 * `portcullis run` of a server that exits at once, whose client sends nothing: its crashes do not
 * end the gateway (it pauses, waiting for the server's files to change); it is then SIGKILLed.
 */
async function gatewayPaused(stateDir: string, label: string): Promise<void> {
  const child = spawn(NODE, [CLI, "run", "--label", label, "--", NODE, "-e", "process.exit(3)"], {
    // respawned after 20 ms, 40 ms…, not 200 ms, 400 ms… (3 s to the pause): the pause is the point
    env: hostEnv({ PORTCULLIS_HOME: stateDir, PORTCULLIS_RESPAWN_BACKOFF_MS: "20" }),
    stdio: ["pipe", "ignore", "pipe"], // its input stays open: the client is still there
  });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  const exited = new Promise<number | null>((res) => child.on("close", (c) => res(c)));
  await waitFor(() => /supervision paused/.test(stderr), 30_000, `gateway ${label} to pause`);
  await untilAudited(stateDir, label, (e) => e.lastExit !== null && e.lastExit !== undefined);
  child.kill("SIGKILL");
  await exited;
}

describe("gateways whose client sent no request", () => {
  it("`audit sessions` lists them apart from the runs, as having had no agent run, never open", async () => {
    const stateDir = newStateDir();
    await gatewayWithoutRequest(stateDir, "quiet", "end");
    await gatewayWithoutRequest(stateDir, "killed", "kill");
    await gatewayPaused(stateDir, "crashy");
    const gw = await startGateway({
      args: ["--label", "used", "--approval", "none", "--", ...fixtureCommand("echo")],
      stateDir,
    });
    await gw.client.callTool({ name: "echo", arguments: { message: "hi" } });
    await gw.close();

    const text = await runCli(["audit", "sessions", "--state-dir", stateDir], { env: passphraseEnv() });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).not.toContain("(open)");
    expect(text.stdout.match(/^run /gm)).toHaveLength(1);
    expect(text.stdout).toMatch(/^run \S+ {2}server used {2}\S+Z → \S+Z/m);
    expect(text.stdout).toMatch(
      /^gateway \S+ \(pid \d+\) {2}server quiet {2}\S+ → \S+Z \(shutdown\) {2}no agent run: its client sent no request$/m,
    );
    expect(text.stdout).toMatch(
      /^gateway \S+ \(pid \d+\) {2}server killed {2}\S+ → \? \(no exit recorded\) {2}no agent run/m,
    );
    // its server's crashes did not end it: only what is known is said, never an end
    expect(text.stdout).toMatch(
      /^gateway \S+ \(pid \d+\) {2}server crashy {2}\S+ → \? \(no end recorded; its server last exited \S+Z \(exit\)\) {2}no agent run/m,
    );

    const json = await runCli(["audit", "sessions", "--json", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(json.code, json.stderr).toBe(0);
    const entries = JSON.parse(json.stdout) as { run: string | null; server: string; [k: string]: unknown }[];
    expect(entries.map((e) => [e.server, e.run === null])).toEqual([
      ["used", false],
      ["quiet", true],
      ["killed", true],
      ["crashy", true],
    ]);
    expect(entries[0]).toMatchObject({ calls: 1, endedAt: expect.any(String) });
    expect(entries[1]).toEqual({
      run: null,
      writer: expect.any(String),
      pid: expect.any(Number),
      server: "quiet",
      startedAt: expect.any(String),
      endedAt: expect.any(String),
      endReason: "shutdown",
      lastExit: null,
      epochs: [expect.any(String)],
    });
    expect(entries[2]).toMatchObject({
      run: null,
      server: "killed",
      endedAt: null,
      endReason: null,
      lastExit: null,
    });
    expect(entries[3]).toMatchObject({
      run: null,
      server: "crashy",
      endedAt: null,
      endReason: null,
      lastExit: { at: expect.any(String), why: "exit" },
    });
  });
});

describe("calls whose ids differ only in type", () => {
  it('"8" and 8 are two calls in `audit activity` and `audit sessions`, each with its own end', async () => {
    const stateDir = newStateDir();
    const gw = rawGateway({
      args: ["--label", "twins", "--approval", "none", "--", ...fixtureCommand("lenient")],
      stateDir,
    });
    cleanup.push(() => gw.close());
    await gw.initialize();
    await gw.request("tools/list");
    // "8" waits at the server while 8 is answered; then the client cancels "8"
    gw.send({
      jsonrpc: "2.0",
      id: "8",
      method: "tools/call",
      params: { name: "echo", arguments: { message: "hang" } },
    });
    gw.send({
      jsonrpc: "2.0",
      id: 8,
      method: "tools/call",
      params: { name: "echo", arguments: { message: "hi" } },
    });
    expect((await gw.next((m) => m.id === 8)).result).toBeDefined();
    gw.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "8" } });
    const read = async (sub: string) => {
      const r = await runCli(["audit", sub, "--json", "--state-dir", stateDir], { env: passphraseEnv() });
      expect(r.code).toBe(0);
      return JSON.parse(r.stdout);
    };
    const activity = await waitFor(
      async () => {
        const rows = (await read("activity")) as { call: string; outcome: string }[];
        return rows.some((a) => a.outcome === "interrupted") ? rows : undefined;
      },
      10_000,
      "the cancelled call's end in the audit",
    );
    expect(activity.map((a) => [a.call, a.outcome])).toEqual([
      ['"8"', "interrupted"],
      ["8", "ok"],
    ]);
    const [session] = await read("sessions");
    expect(session.counts).toMatchObject({ calls: 2, answered: 1, interrupted: 1, pending: 0 });
  });
});

describe("a call's id in the audit", () => {
  it("is the client's own, as it wrote it: never the gateway's stand-in, also for calls a killed gateway left open", async () => {
    const stateDir = newStateDir();
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    const methodLog = join(dir, "methods.jsonl");
    const start = () => {
      const gw = rawGateway({
        args: ["--label", "ids", "--approval", "none", "--", ...fixtureCommand("lenient")],
        env: { FIXTURE_METHOD_LOG: methodLog },
        stateDir,
      });
      cleanup.push(() => gw.close());
      return gw;
    };
    const gw = start();
    await gw.initialize();
    await gw.request("tools/list");
    const call = (id: string, name: string, message: string) =>
      `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${name}","arguments":{"message":"${message}"}}}\n`;
    gw.send(call("9007199254740993", "echo", "big")); // beyond what a JSON number holds exactly
    gw.send(call('"a\\/b"', "echo", "hang")); // PHP's json_encode spelling of "a/b"
    gw.send(call("1.0", "no_such_tool", "refused"));
    gw.send('{"jsonrpc":"2.0","id":2e1,"method":"resources/read","params":{"uri":"file:///x"}}\n');
    // answered (their ends are in the next group: written before the kill, with the intents below)
    await waitFor(() => gw.lines().some((l) => l.includes('"id":9007199254740993,"result"')));
    await gw.next((m) => m.id === 1 && m.error !== undefined);
    await gw.next((m) => m.id === 20 && m.result !== undefined);
    gw.send('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a/b"}}\n');
    // two calls whose ids are one double, in flight when their gateway is killed
    gw.send(call("12345678901234567890", "echo", "hang"));
    gw.send(call("12345678901234567891", "echo", "hang"));
    const calls = () =>
      readJsonLines<{ method: string }>(methodLog).filter((r) => r.method === "tools/call").length;
    await waitFor(() => calls() === 4, 10_000, "the calls at the server");
    gw.kill("SIGKILL");
    await gw.exited;
    // the next gateway closes them (call_interrupted, gateway_gone)
    const next = start();
    await next.initialize();
    await next.close();

    const events = await auditEvents(stateDir);
    expect(JSON.stringify(events)).not.toContain("portcullis-raw-id");
    const big = events.filter((e) => e.requestIdText === "9007199254740993").map((e) => e.type);
    expect(big).toEqual(["tool_called", "tool_result"]);
    const r = await runCli(["audit", "activity", "--json", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(r.code).toBe(0);
    const activity = JSON.parse(r.stdout) as { call: string; outcome: string; interruption: string | null }[];
    expect(activity.map((a) => [a.call, a.outcome, a.interruption]).sort()).toEqual(
      [
        ["9007199254740993", "ok", null],
        ['"a\\/b"', "interrupted", "cancelled"],
        ["1.0", "refused", null],
        ["2e1", "ok", null],
        ["12345678901234567890", "interrupted", "gateway_gone"],
        ["12345678901234567891", "interrupted", "gateway_gone"],
      ].sort(),
    );
  });
});

describe("what the gateway prints", () => {
  it("a secret in the server's own command line is redacted on stderr and in `portcullis status`", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const secret = "argv-secret-77c1";
    const gw = await startInventory(project, ["--approval", "none"], {
      stateDir,
      command: [...project.command, "--api-key", secret, `GITHUB_TOKEN=${secret}`],
    });
    await gw.client.listTools();
    const status = await runCli(["status", "--state-dir", stateDir]);
    expect(status.stdout).toMatch(/--api-key \[redacted\]/);
    expect(gw.stderr()).toMatch(/serving .*--api-key \[redacted\] GITHUB_TOKEN=\[redacted\]: pid=\d+ epoch=/);
    await gw.close();
    for (const text of [status.stdout, gw.stderr()]) expect(text.includes(secret)).toBe(false);
  });
});
