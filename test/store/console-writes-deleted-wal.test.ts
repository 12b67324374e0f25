// The console checks the store's files as each request arrives, but some of its writes come
// after an await: the first login pins the approver key once the passphrase's key derivation is
// done, a passkey's pin once its registration is verified, a revocation once its form is read. A store's -wal and -shm deleted in
// between: the pin went into the orphaned log (lost with it, or copied over the records of the
// processes that opened the store since), and the console went on as if it were recorded. Such
// writes look at the files again just before writing: refused (503, naming the file), and the
// console ends. A real console process; the body of the login is held back until it has taken
// the request in (Expect: 100-continue), and the files are deleted then.
import { rmSync } from "node:fs";
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
import { waitForPending } from "../helpers/approvals.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const NEVER = { PORTCULLIS_STORE_CHECK_MS: "600000" };

describe("the store's -wal and -shm deleted while a console request is under way", () => {
  it("the first login's approver key pin is refused (503, naming the file), and the console ends", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const console_: RunningConsole = await startConsoleProcess(stateDir, [], undefined, NEVER);
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
      beforeBody: () => {
        for (const side of ["-wal", "-shm"]) rmSync(join(stateDir, `portcullis.db${side}`));
      },
    });
    expect(r.status, r.body).toBe(503);
    expect(r.body).toContain(join(stateDir, "portcullis.db-wal"));
    expect(r.body).toContain("was deleted or replaced");
    expect(await console_.exited).toBe(2);
  }, 120_000);
  it("a revocation is refused under its write lock (503, naming the file), and the console ends", async () => {
    const stateDir = newStateDir();
    const dir = tempDir("portcullis-console-revoke-");
    cleanup.push(() => {
      removeDir(dir);
      removeDir(stateDir);
    });
    const console_ = await startConsoleProcess(stateDir, [], undefined, NEVER);
    cleanup.push(() => console_.stop());
    const gw = await gatewayFor(stateDir, catalogFile(dir, [DEPLOY_TOOL]), [], NEVER);
    cleanup.push(() => gw.close());
    const call = gw.client.callTool({ name: "deploy", arguments: { note: "granted" } }, undefined, {
      timeout: 60_000,
    });
    const req = await waitForPending(stateDir, (l) => l[0], 20_000, "a pending request");
    const s = await httpLogin(console_.url);
    const card = await raw(`${console_.url}/requests/${req.request}`, { headers: { Cookie: s.cookie } });
    const decided = await post(
      console_.url,
      `/requests/${req.request}/decide`,
      { action: "approve-session", csrf: s.csrf, proof: s.proofKey!, reviewed: reviewedIn(card.body) },
      { Cookie: s.cookie },
    );
    expect([200, 303], decided.body).toContain(decided.status);
    expect((await call).isError).toBeFalsy();
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
      beforeBody: () => {
        for (const side of ["-wal", "-shm"]) rmSync(join(stateDir, `portcullis.db${side}`));
      },
    });
    expect(r.status, r.body).toBe(503);
    expect(r.body).toContain(join(stateDir, "portcullis.db-wal"));
    expect(await console_.exited).toBe(2);
  }, 120_000);
});
