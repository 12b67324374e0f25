// `portcullis approvals` closes the requests nobody can decide any more (the gateway that asked is
// gone) before it lists them; best effort, since the list is right about what is pending either
// way. When that close failed for another cause than a write the file system refused (a full disk:
// test/store/hostile-disk-full-lists.test.ts), it said only SQLite's words, "could not close
// abandoned approval requests: database is locked", naming neither the store nor what was left nor
// what to do. Made to happen here with real processes: a gateway killed with a request pending,
// then another process holding the store's write lock (as a database browser with an unsaved
// edit would) past the lister's busy timeout. The lister must not crash (exit 0, its --json
// whole on stdout), and say the store's sentence, the request left pending and the fix, in one
// line; once the lock is let go, the next lister closes the request and the chain verifies. The
// console, which closes them before it draws its Requests page, said the same SQLite words in
// its warning: now the store's sentence and the fix, the page still drawn.
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { httpLogin, raw, startConsoleProcess } from "../console/helpers.js";
import { abandonedRequest } from "../helpers/abandonedRequest.js";
import { removeDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { holdStoreLock } from "../helpers/lock.js";
import { newStateDir } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

it("the store's write lock held by another process: the request is listed, and one line says it was not closed, why and what to do", async () => {
  const stateDir = newStateDir();
  cleanup.push(() => removeDir(stateDir));
  const request = await abandonedRequest(stateDir, cleanup);
  const lock = await holdStoreLock(stateDir);
  let held = true;
  cleanup.push(() => (held ? lock.release() : undefined));
  // the lister waits for the lock for its busy timeout (10 s by default), cut short here
  const env = { PORTCULLIS_BUSY_TIMEOUT_MS: "300" };
  const db = join(stateDir, "portcullis.db");
  const line =
    `portcullis approvals: could not close abandoned approval requests: the store ${db} is locked by another process, and stayed locked while this one waited; ` +
    `1 approval request that can no longer be decided (the gateway that asked is gone, or the time is up) was not closed: ${request}; it is listed as pending until a 'portcullis approvals' where the store can be written closes it. ` +
    "To fix it: end the program that holds it";

  const json = await runCli(["approvals", "--json"], { stateDir, env });
  expect(json.code, json.stderr).toBe(0);
  expect(
    (JSON.parse(json.stdout) as { requests: { request: string }[] }).requests.map((r) => r.request),
  ).toEqual([request]);
  expect(json.stderr.startsWith(line), json.stderr).toBe(true);
  expect(json.stderr).toContain("then run doctor again.\n");
  expect(json.stderr.split("\n")).toHaveLength(2); // one line
  // was: SQLite's own words, naming neither the store nor the request
  expect(json.stderr).not.toContain("database is locked");

  const text = await runCli(["approvals"], { stateDir, env });
  expect(text.code, text.stderr).toBe(0);
  expect(text.stdout).toContain(`approval request ${request}  pending`);
  expect(text.stderr.startsWith(line), text.stderr).toBe(true);

  // the lock let go: the next lister closes it, and the chain holds
  await lock.release();
  held = false;
  const after = await runCli(["approvals", "--json"], { stateDir });
  expect({ code: after.code, stderr: after.stderr }).toEqual({ code: 0, stderr: "" });
  expect(JSON.parse(after.stdout)).toEqual({ requests: [] });
  const verify = await runCli(["audit", "verify"], { stateDir });
  expect(verify.code, verify.stderr).toBe(0);
});

it("the console, the lock held while it draws its Requests page: the page lists the request, its warning names the store and the fix", async () => {
  const stateDir = newStateDir();
  cleanup.push(() => removeDir(stateDir));
  const consoleProcess = await startConsoleProcess(stateDir, [], undefined, {
    PORTCULLIS_BUSY_TIMEOUT_MS: "300",
  });
  cleanup.push(() => consoleProcess.stop());
  // logged in first (its home page closes what is abandoned then: nothing yet)
  const session = await httpLogin(consoleProcess.url);
  const request = await abandonedRequest(stateDir, cleanup);
  const lock = await holdStoreLock(stateDir);
  let held = true;
  cleanup.push(() => (held ? lock.release() : undefined));
  const page = await raw(`${consoleProcess.url}/`, { headers: { Cookie: session.cookie } });
  expect(page.status, page.body).toBe(200);
  expect(page.body).toContain(request);
  const db = join(stateDir, "portcullis.db");
  await waitFor(() => consoleProcess.output().includes("could not close abandoned approval requests"));
  expect(consoleProcess.output()).toContain(
    `warning: could not close abandoned approval requests: the store ${db} is locked by another process, and stayed locked while this one waited. To fix it: end the program that holds it`,
  );
  expect(consoleProcess.output()).not.toContain("database is locked");
  await lock.release();
  held = false;
  // the lock let go: the next page closes it, and the console is still running
  const after = await raw(`${consoleProcess.url}/`, { headers: { Cookie: session.cookie } });
  expect(after.status, after.body).toBe(200);
  expect(after.body).not.toContain(request);
});
