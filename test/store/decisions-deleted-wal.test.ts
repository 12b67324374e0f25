// The approval console is a writer too (decisions, revocations, closing abandoned requests) and
// holds the store open for hours; `portcullis approve` holds it open while the human reads the
// review and types the passphrase. A store's -wal and -shm deleted under it: a gateway started
// since records its calls into a new -wal; the console, writing a decision into its orphaned log
// and then closing the store as the last connection, made SQLite copy that log over the database
// file: the other gateway's records were gone. The console must notice, refuse what it can no
// longer record (naming the file), say so once, and end without closing the store.
// A real console process, a real `approve`, real gateways, one state directory.
import { execFileSync } from "node:child_process";
import { closeSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  catalogFile,
  cookiePairs,
  DEPLOY_TOOL,
  gatewayFor,
  httpLogin,
  post,
  type RunningConsole,
  raw,
  reviewedIn,
  startConsoleProcess,
} from "../console/helpers.js";
import { auditActivity, storedPending, waitForPending } from "../helpers/approvals.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { FIXTURES, fixtureCommand, NODE } from "../helpers/paths.js";
import { newKeyringOnlyStateDir, newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const NEVER = { PORTCULLIS_STORE_CHECK_MS: "600000" };

/**
 * A console and a gateway whose call waits for a human (its request's page read, the human
 * logged in). Returns what the console needs to decide the request.
 */
async function awaitingDecision(consoleEnv: Record<string, string>) {
  const stateDir = newStateDir();
  const dir = tempDir("portcullis-console-wal-");
  cleanup.push(() => {
    removeDir(dir);
    removeDir(stateDir);
  });
  const console_ = await startConsoleProcess(stateDir, [], undefined, consoleEnv);
  cleanup.push(() => console_.stop());
  const waiting = await gatewayFor(stateDir, catalogFile(dir, [DEPLOY_TOOL]), [], NEVER);
  cleanup.push(() => waiting.close());
  const call = waiting.client
    .callTool({ name: "deploy", arguments: { note: "decided after the deletion" } }, undefined, {
      timeout: 120_000,
    })
    .catch((e: unknown) => e);
  const req = await waitForPending(stateDir, (l) => l[0], 20_000, "a pending request", storedPending);
  const s = await httpLogin(console_.url);
  const card = await raw(`${console_.url}/requests/${req.request}`, { headers: { Cookie: s.cookie } });
  const reviewed = reviewedIn(card.body);
  const decide = (action = "approve-call") =>
    post(
      console_.url,
      `/requests/${req.request}/decide`,
      { action, csrf: s.csrf, proof: s.proofKey!, reviewed },
      { Cookie: s.cookie },
    );
  return { stateDir, console_, waiting, call, decide, session: s };
}

/** awaitingDecision, then the store's -wal and -shm deleted and a second gateway's five calls. */
async function decisionAfterDeletion(consoleEnv: Record<string, string>) {
  const awaiting = await awaitingDecision(consoleEnv);
  await deleteThenSecond(awaiting.stateDir);
  return awaiting;
}

/** The store's -wal and -shm deleted (while a request's body is held back: raw's beforeBody). */
function deleteWalAndShm(stateDir: string): void {
  for (const side of ["-wal", "-shm"]) rmSync(join(stateDir, `portcullis.db${side}`));
}

/** The store's -wal and -shm deleted; a gateway started since records five calls and ends. */
async function deleteThenSecond(stateDir: string): Promise<void> {
  deleteWalAndShm(stateDir);
  const second = await startGateway({
    args: ["--label", "second", "--approval", "none", "--", ...fixtureCommand("echo")],
    stateDir,
    connectTimeoutMs: 60_000,
  });
  cleanup.push(() => second.close());
  for (let i = 0; i < 5; i++) {
    const r = await second.client.callTool({ name: "echo", arguments: { message: `second ${i}` } });
    expect(r.isError).toBeFalsy();
  }
  await second.close();
}

/** The second gateway's five calls are in the store and the chain verifies. */
async function expectSecondCalls(stateDir: string): Promise<void> {
  const second = (await auditActivity(stateDir)).filter((a) => a.server === "second");
  expect(second.map((a) => a.outcome)).toEqual(Array(5).fill("ok"));
  const verify = await runCli(["audit", "verify", "--state-dir", stateDir]);
  expect(verify.code, verify.stderr + verify.stdout).toBe(0);
}

/** The second gateway's calls kept, and the console said it once. */
async function expectSecondKept(stateDir: string, console_: RunningConsole): Promise<void> {
  await expectSecondCalls(stateDir);
  const said = console_
    .output()
    .split("\n")
    .filter((l) => l.includes("was deleted or replaced"));
  expect(said).toEqual([
    expect.stringContaining(`the store ${join(stateDir, "portcullis.db-wal")} was deleted or replaced`),
  ]);
}

describe("the store's -wal and -shm deleted under a running console", () => {
  it("its next decision is refused (503, naming the file), it ends (exit 2), and a gateway started since keeps its records", async () => {
    const { stateDir, console_, waiting, decide } = await decisionAfterDeletion(NEVER);
    const refused = await decide();
    expect(refused.status, refused.body).toBe(503);
    expect(refused.body).toContain(join(stateDir, "portcullis.db-wal"));
    expect(refused.body).toContain("was deleted or replaced");
    expect(await console_.exited).toBe(2);
    await waiting.close();
    await expectSecondKept(stateDir, console_);
  }, 240_000);

  it("an idle console notices on its heartbeat and ends on its own, leaving the store to the second", async () => {
    const { stateDir, console_, waiting } = await decisionAfterDeletion({ PORTCULLIS_STORE_CHECK_MS: "200" });
    expect(await console_.exited).toBe(2);
    await waiting.close();
    await expectSecondKept(stateDir, console_);
  }, 240_000);
});

describe("the store's -wal and -shm deleted while 'portcullis approve' waits for the passphrase", () => {
  it("the approval is refused under its write lock (exit 2, naming the file), and a gateway started since keeps its records", async () => {
    const stateDir = newStateDir();
    const dir = tempDir("portcullis-approve-wal-");
    cleanup.push(() => {
      removeDir(dir);
      removeDir(stateDir);
    });
    const waiting = await startGateway({
      stateDir,
      args: ["--label", "shop", "--approval-timeout", "120000", "--", NODE, FIXTURES.catalog],
      env: { FIXTURE_CATALOG: catalogFile(dir, [DEPLOY_TOOL]), ...NEVER },
    });
    cleanup.push(() => waiting.close());
    const call = waiting.client
      .callTool({ name: "deploy", arguments: { note: "approved after the deletion" } }, undefined, {
        timeout: 120_000,
      })
      .catch((e: unknown) => e);
    const req = await waitForPending(stateDir, (l) => l[0], 20_000, "a pending request", storedPending);
    // The passphrase comes through a pipe: approve has opened the store and shown the review
    // when it opens the pipe to read it, and reads it once this test writes it.
    const pipe = join(dir, "passphrase");
    execFileSync("mkfifo", ["-m", "600", pipe]);
    const approve = runCli(["approve", req.request, "--for", "session", "--state-dir", stateDir], {
      env: { PORTCULLIS_PASSPHRASE_FILE: pipe, PORTCULLIS_INSECURE_TEST_KDF: "1" },
    });
    const writer = openSync(pipe, "w"); // returns once approve opened the pipe to read
    await deleteThenSecond(stateDir);
    writeSync(writer, `${TEST_PASSPHRASE}\n`);
    closeSync(writer);
    const r = await approve;
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toContain(`the store ${join(stateDir, "portcullis.db-wal")} was deleted or replaced`);
    await waiting.close();
    await call;
    await expectSecondCalls(stateDir);
  }, 240_000);
});

// Some of the console's writes come after an await, long after the request's own check as it
// arrived: the first login pins the approver key once the passphrase's key derivation is done, a
// passkey's pin once its registration is verified, a revocation once its form is read. The files
// deleted in between sent the write into the orphaned log while the console answered as if it
// were recorded. Here the request's body is held back (Expect: 100-continue) until the console
// has taken the request in, and the files are deleted then.
describe("the store's -wal and -shm deleted while a console request is under way", () => {
  it("the first login's approver key pin is refused (503, naming the file), and the console ends", async () => {
    const stateDir = newKeyringOnlyStateDir(); // no pin yet: the first login makes it
    cleanup.push(() => removeDir(stateDir));
    const console_ = await startConsoleProcess(stateDir, [], undefined, NEVER);
    cleanup.push(() => console_.stop());
    const form = await raw(`${console_.url}/login`);
    const loginToken = /name="csrf" value="([^"]+)"/.exec(form.body)![1]!;
    const r = await raw(`${console_.url}/login`, {
      method: "POST",
      headers: {
        Origin: console_.url,
        Cookie: cookiePairs(form.headers["set-cookie"]).join("; "),
        "Content-Type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ csrf: loginToken, passphrase: TEST_PASSPHRASE }).toString(),
      beforeBody: () => deleteWalAndShm(stateDir),
    });
    expect(r.status, r.body).toBe(503);
    expect(r.body).toContain(`the store ${join(stateDir, "portcullis.db-wal")} was deleted or replaced`);
    expect(await console_.exited).toBe(2);
  }, 120_000);

  it("a revocation is refused under its write lock (503, naming the file), and the console ends", async () => {
    const { stateDir, console_, call, decide, session: s } = await awaitingDecision(NEVER);
    const decided = await decide("approve-session");
    expect([200, 303], decided.body).toContain(decided.status);
    expect(((await call) as { isError?: boolean }).isError).toBeFalsy();
    const grants = await raw(`${console_.url}/grants`, { headers: { Cookie: s.cookie } });
    const grant = /action="\/grants\/([^"/]+)\/revoke"/.exec(grants.body)![1]!;
    const r = await raw(`${console_.url}/grants/${grant}/revoke`, {
      method: "POST",
      headers: {
        Origin: console_.url,
        Cookie: s.cookie,
        "Content-Type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ csrf: s.csrf }).toString(),
      beforeBody: () => deleteWalAndShm(stateDir),
    });
    expect(r.status, r.body).toBe(503);
    expect(r.body).toContain(`the store ${join(stateDir, "portcullis.db-wal")} was deleted or replaced`);
    expect(await console_.exited).toBe(2);
  }, 240_000);
});
