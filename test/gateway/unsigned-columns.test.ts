// The columns of a grant that its signature does not cover (the approved tool definitions,
// `ended_at`, `revoked_at`), rewritten by a same-user process with plain SQL: a real gateway in
// front of the catalog fixture, the real CLI deciding with the passphrase, and the fixture's
// record of every call it received as the ground truth of what was forwarded. Each case has a
// gateway, a state directory and a teardown of its own, and they run side by side: three of them
// wait out an approval timeout, and the rest mostly wait for processes to start.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { decisionDigest, grantStatement } from "../../src/approval/decision.js";
import { pinnedSigner } from "../../src/approval/pin.js";
import { type ApprovalRequest, getRequest, recordDecision } from "../../src/approval/requests.js";
import { argumentsDigest } from "../../src/audit/events.js";
import { toolFingerprint } from "../../src/catalog/index.js";
import { openStore } from "../../src/store/db.js";
import { decideByCli, nextStoredRequest, storedPending, waitForPending } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { FETCH, PAY, recordingCatalogGateway } from "../helpers/recordingCatalogGateway.js";
import { passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

// The same tool with a new input: an expansion of its authority.
const FETCH_URL = {
  ...FETCH,
  inputSchema: { ...FETCH.inputSchema, properties: { page: { type: "string" }, url: { type: "string" } } },
};

const TIMEOUT = -32058;
const STALE = -32051;

function refusal(e: unknown) {
  return e as { code: number; data: Record<string, unknown> };
}

function writeTools(file: string, tools: unknown[]): void {
  writeFileSync(`${file}.tmp`, JSON.stringify(tools));
  // atomic, as the fixture asks
  writeFileSync(file, readFileSync(`${file}.tmp`));
}

/** The case's gateway and its store opened with SQL; torn down when the case finishes (`onTestFinished`). */
async function setup(tools: unknown[], runArgs: string[], onTestFinished: (fn: () => Promise<void>) => void) {
  const teardown: (() => Promise<void> | void)[] = [];
  onTestFinished(async () => {
    for (const c of teardown.reverse()) await c();
  });
  const { stateDir, gw, toolsFile, received } = await recordingCatalogGateway(
    tools,
    // 10 s unless the test gives its own (an option given twice is refused): the CLI's approve of
    // a first call must land within it on a loaded machine (3 s was outrun with the cases side by
    // side), and the cases that wait it out do so at the same time
    [
      "--label",
      "bank",
      ...(runArgs.includes("--approval-timeout") ? [] : ["--approval-timeout", "10000"]),
      ...runArgs,
    ],
    teardown,
    "portcullis-unsigned-",
  );
  const db = new Database(join(stateDir, "portcullis.db"));
  db.pragma("busy_timeout = 10000");
  teardown.push(() => {
    db.close();
  });
  return { stateDir, gw, db, toolsFile, received };
}

describe.concurrent("columns a grant's signature does not cover, rewritten with SQL", () => {
  it("a one-call grant un-ended after its call covers no second call", async ({ expect, onTestFinished }) => {
    const { stateDir, gw, db, received } = await setup([PAY], ["--approval", "per-call"], onTestFinished);
    const args = { to: "mallory", amount: 100 };
    const first = gw.client.callTool({ name: "send_payment", arguments: args });
    const req = await nextStoredRequest(stateDir);
    await decideByCli(stateDir, "approve", req.request);
    expect((await first).isError).toBeFalsy();
    expect(received()).toEqual([args]);

    // The same call again, after the store writer cleared the grant's end: a human is asked
    // again (nobody answers here), and the server receives nothing more.
    const undone = db.prepare(
      "UPDATE grants SET ended_at = NULL, ended_reason = NULL WHERE mode = 'per-call'",
    );
    expect(undone.run().changes).toBe(1);
    const again = gw.client.callTool({ name: "send_payment", arguments: args });
    again.catch(() => {}); // its timeout may come while the test still waits for the request
    await waitForPending(stateDir, (l) => l.length === 1, 10_000, "a new request", storedPending);
    undone.run(); // and once more while the call waits for a human
    await expect(again).rejects.toSatisfy((e) => refusal(e).code === TIMEOUT);
    expect(received()).toEqual([args]);
  });

  it("a revoked session grant whose revoke is undone covers nothing once the gateway saw it end", async ({
    expect,
    onTestFinished,
  }) => {
    const { stateDir, gw, db, received } = await setup([PAY], ["--approval", "session"], onTestFinished);
    const first = gw.client.callTool({ name: "send_payment", arguments: { to: "alice", amount: 1 } });
    const req = await nextStoredRequest(stateDir);
    await decideByCli(stateDir, "approve", req.request, "--for", "session");
    expect((await first).isError).toBeFalsy();
    const grant = (db.prepare("SELECT grant_id FROM grants").get() as { grant_id: string }).grant_id;
    expect((await runCli(["revoke", grant, "--state-dir", stateDir])).code).toBe(0);

    // The gateway sees the revoke at the next call, which asks a human (and times out): its
    // request is made only once the gateway read the live grants and found the session's gone …
    const seen = new Set(storedPending(stateDir).map((p) => p.request));
    const second = gw.client.callTool({ name: "send_payment", arguments: { to: "bob", amount: 2 } });
    second.catch(() => {}); // its timeout may come while the test still waits for the request
    await nextStoredRequest(stateDir, seen);
    // … then the store writer undoes it: the signed grant is back in the live set, untouched.
    // (Undone while the second call still waits: the two timeouts run side by side, not one
    // after the other; what the gateway saw is the same.)
    db.prepare("UPDATE grants SET revoked_at = NULL, ended_at = NULL, ended_reason = NULL").run();
    const third = gw.client.callTool({ name: "send_payment", arguments: { to: "mallory", amount: 3 } });
    await expect(third).rejects.toSatisfy((e) => refusal(e).code === TIMEOUT);
    await expect(second).rejects.toSatisfy((e) => refusal(e).code === TIMEOUT);
    expect(received()).toEqual([{ to: "alice", amount: 1 }]);
  });

  it("a request's tool rewritten in the store: approve refuses it, naming what changed, and nothing runs", async ({
    expect,
    onTestFinished,
  }) => {
    const { stateDir, gw, db, received } = await setup(
      [PAY, FETCH],
      ["--approval", "session"],
      onTestFinished,
    );
    const call = gw.client.callTool({ name: "fetch_page", arguments: { page: "a" } });
    const outcome = call.then(
      () => "answered",
      (e) => refusal(e).code,
    );
    const req = await nextStoredRequest(stateDir);
    swapTool(db, req.request, PAY);

    const approve = await runCli(["approve", req.request, "--for", "session", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(approve.code).toBe(1);
    expect(approve.stderr).toContain("does not ask what its review shows (its tool was changed");
    expect(await gw.client.listTools()).toBeTruthy();
    const pay = gw.client.callTool({ name: "send_payment", arguments: { to: "mallory", amount: 1000 } });
    await expect(pay).rejects.toSatisfy((e) => refusal(e).code === TIMEOUT);
    expect(await outcome).toBe(TIMEOUT);
    expect(received()).toEqual([]);
  });

  it("a review rewritten before the human reads it: the approval of what was shown covers nothing", async ({
    expect,
    onTestFinished,
  }) => {
    const { stateDir, gw, db, received } = await setup(
      [PAY],
      ["--approval", "per-call", "--approval-timeout", "60000"],
      onTestFinished,
    );
    const call = gw.client.callTool({ name: "send_payment", arguments: { to: "mallory", amount: 10000 } });
    const outcome = call.then(
      () => "answered",
      (e) => refusal(e).code,
    );
    const req = await nextStoredRequest(stateDir);
    const row = db
      .prepare("SELECT review_json FROM approval_requests WHERE request = ?")
      .get(req.request) as {
      review_json: string;
    };
    const fake = row.review_json.replaceAll("mallory", "alice").replaceAll("10000", "10");
    db.prepare("UPDATE approval_requests SET review_json = ? WHERE request = ?").run(fake, req.request);

    // The human reads the rewritten review and approves it, signed: the gateway wrote another
    // review, so the grant covers nothing, and it says why; the call keeps waiting.
    const shown = await runCli(["approvals", "--state-dir", stateDir]);
    expect(shown.stdout).toContain("alice");
    expect(shown.stdout).not.toContain("mallory");
    await decideByCli(stateDir, "approve", req.request);
    await gw.waitForStderr(/is not honoured: it approves a review this gateway did not write/, 20_000);
    expect(received()).toEqual([]);
    await gw.close();
    expect(await outcome).not.toBe("answered");
    expect(received()).toEqual([]);
  });

  // What an approve that signs the row's columns (an older portcullis on the same state directory,
  // or any signer of the row) makes of rewritten columns: a grant that names the review the
  // gateway wrote, signed by the approver key, of another tool or other arguments. The gateway
  // remembers what it asked and honours none of them.
  for (const [what, rewrite, runArgs] of [
    ["another tool", (db: Database.Database, id: string) => swapTool(db, id, PAY), ["--approval", "session"]],
    [
      "other arguments",
      (db: Database.Database, id: string) => swapArguments(db, id, { to: "mallory", amount: 1000 }),
      ["--approval", "per-call"],
    ],
  ] as const) {
    it(`a signed grant of the gateway's review but for ${what} covers nothing`, async ({
      expect,
      onTestFinished,
    }) => {
      const { stateDir, gw, db, received } = await setup(
        [PAY, FETCH],
        [...runArgs, "--approval-timeout", "60000"],
        onTestFinished,
      );
      const tool = what === "other arguments" ? "send_payment" : "fetch_page";
      const args = tool === "send_payment" ? { to: "alice", amount: 1 } : { page: "a" };
      const first = gw.client.callTool({ name: tool, arguments: args });
      const outcome = first.then(
        () => "answered",
        (e) => refusal(e).code,
      );
      const req = await nextStoredRequest(stateDir);
      rewrite(db, req.request);
      await signRowAsIs(
        stateDir,
        req.request,
        (runArgs as readonly string[]).includes("per-call") ? "call" : "session",
      );
      await gw.waitForStderr(/is not honoured: it grants another call than the request asked about/, 20_000);

      // Whatever the grant names is not covered: the payment asks a human again (nobody answers).
      // (its refusal, when the gateway ends below, is caught at once: no unhandled rejection)
      const pay = gw.client
        .callTool({ name: "send_payment", arguments: { to: "mallory", amount: 1000 } })
        .then(
          () => "answered",
          (e) => refusal(e).code,
        );
      await waitForPending(
        stateDir,
        (l) => l.length >= 1,
        10_000,
        "a request for the payment",
        storedPending,
      );
      await gw.close();
      expect(await pay).not.toBe("answered");
      expect(await outcome).not.toBe("answered");
      expect(received()).toEqual([]);
    });
  }

  // The other columns a grant is made from: rewritten, approve refuses the request (naming the
  // column), and a grant signed over the row as it now reads covers nothing either: the human's
  // signature would otherwise cover newer code, a wider mode, another agent's run or credentials
  // the call never asked for.
  for (const [column, sql, mode] of [
    ["execution epoch", "execution_epoch = '01JZZZZZZZZZZZZZZZZZZZZZZZ'", "session"],
    ["mode", "mode = 'session'", "per-call"],
    ["agent run", "agent_run = '01JAAAAAAAAAAAAAAAAAAAAAAA'", "session"],
    ["credential scope", `credential_scope_json = '["prod-database"]'`, "session"],
  ] as const) {
    it(`a request's ${column} rewritten in the store: approve refuses it, a grant signed over the row covers nothing, and nothing runs`, async ({
      expect,
      onTestFinished,
    }) => {
      const { stateDir, gw, db, received } = await setup(
        [PAY],
        ["--approval", mode, "--approval-timeout", "60000"],
        onTestFinished,
      );
      const call = gw.client.callTool({ name: "send_payment", arguments: { to: "alice", amount: 1 } });
      const outcome = call.then(
        () => "answered",
        (e) => refusal(e).code,
      );
      const req = await nextStoredRequest(stateDir);
      if (column === "agent run") anotherAgentRun(db, req.request, "01JAAAAAAAAAAAAAAAAAAAAAAA");
      expect(
        db.prepare(`UPDATE approval_requests SET ${sql} WHERE request = ?`).run(req.request).changes,
      ).toBe(1);
      const forWhat = "session";
      const approve = await runCli(["approve", req.request, "--for", forWhat, "--state-dir", stateDir], {
        env: passphraseEnv(),
      });
      expect(approve.code).toBe(1);
      expect(approve.stderr).toContain(`does not ask what its review shows (its ${column} was changed`);
      expect(received()).toEqual([]);

      await signRowAsIs(stateDir, req.request, forWhat);
      await gw.waitForStderr(/is not honoured/, 20_000);
      await gw.close();
      expect(await outcome).not.toBe("answered");
      expect(received()).toEqual([]);
    });
  }

  it("a grant from an older approve (no review digest signed) covers nothing, and the gateway says why", async ({
    expect,
    onTestFinished,
  }) => {
    const { stateDir, gw, received } = await setup(
      [PAY],
      ["--approval", "session", "--approval-timeout", "60000"],
      onTestFinished,
    );
    const call = gw.client.callTool({ name: "send_payment", arguments: { to: "alice", amount: 1 } });
    const outcome = call.then(
      () => "answered",
      (e) => refusal(e).code,
    );
    const req = await nextStoredRequest(stateDir);
    await signWithoutReview(stateDir, req.request);
    await gw.waitForStderr(/is not honoured: it was made by an older portcullis/, 20_000);
    await gw.close();
    expect(await outcome).not.toBe("answered");
    expect(received()).toEqual([]);
  });

  it("an approved definition rewritten to match an expanded tool does not make the expansion cosmetic", async ({
    expect,
    onTestFinished,
  }) => {
    const { stateDir, gw, db, toolsFile, received } = await setup(
      [FETCH],
      ["--approval", "session", "--on-expand", "tool"],
      onTestFinished,
    );
    const first = gw.client.callTool({ name: "fetch_page", arguments: { page: "a" } });
    const req = await nextStoredRequest(stateDir);
    await decideByCli(stateDir, "approve", req.request, "--for", "session");
    expect((await first).isError).toBeFalsy();

    // Within the epoch the tool gains a `url` input; the store writer makes the grant's approved
    // definition a whitespace variant of the new one (a cosmetic difference, if it were believed).
    writeTools(toolsFile, [FETCH_URL]);
    await waitFor(
      async () => JSON.stringify((await gw.client.listTools()).tools).includes('"url"'),
      10_000,
      "the expanded tool listed",
    );
    const forged = { fetch_page: { ...FETCH_URL, description: `${FETCH_URL.description} ` } };
    expect(db.prepare("UPDATE grants SET tool_defs_json = ?").run(JSON.stringify(forged)).changes).toBe(1);

    const call = gw.client.callTool({
      name: "fetch_page",
      arguments: { page: "a", url: "http://attacker.example/" },
    });
    await expect(call).rejects.toSatisfy(
      (e) => refusal(e).code === STALE && refusal(e).data.reason === "tool authority expanded",
    );
    expect(received()).toEqual([{ page: "a" }]);
  });
});

/** The request's tool (and its fingerprint) rewritten to `tool`'s: the row a grant is made from. */
function swapTool(db: Database.Database, request: string, tool: typeof PAY): void {
  const changed = db
    .prepare("UPDATE approval_requests SET tool = ?, fingerprint = ? WHERE request = ?")
    .run(tool.name, toolFingerprint(tool), request).changes;
  expect(changed).toBe(1);
}

/** A run row for another agent (a copy of the request's own run under the id `run`). */
function anotherAgentRun(db: Database.Database, request: string, run: string): void {
  const columns = (db.prepare("PRAGMA table_info(runs)").all() as { name: string }[])
    .map((c) => c.name)
    .filter((n) => n !== "run")
    .join(", ");
  db.prepare(
    `INSERT INTO runs (run, ${columns}) SELECT ?, ${columns} FROM runs WHERE run = (SELECT agent_run FROM approval_requests WHERE request = ?)`,
  ).run(run, request);
}

/** The request's arguments digest rewritten to that of `args` (what a one-call grant binds). */
function swapArguments(db: Database.Database, request: string, args: Record<string, unknown>): void {
  const changed = db
    .prepare("UPDATE approval_requests SET arguments_digest = ? WHERE request = ?")
    .run(argumentsDigest(args), request).changes;
  expect(changed).toBe(1);
}

/**
 * Approves the request as its row now reads, signed with the approver key and naming the review
 * as stored (the gateway's own): the decision path without its check of the row against the review.
 */
async function signRowAsIs(stateDir: string, request: string, forWhat: "session" | "call"): Promise<void> {
  const store = openStore(stateDir);
  try {
    const signer = await pinnedSigner(store, stateDir, TEST_PASSPHRASE);
    const req = getRequest(store, request) as ApprovalRequest;
    store
      .transaction(() => recordDecision(store, req, { approve: true, for: forWhat }, "older-approve", signer))
      .immediate();
  } finally {
    store.close();
  }
}

/** A session approval as a portcullis before signed reviews wrote it: signed, with no review digest. */
async function signWithoutReview(stateDir: string, request: string): Promise<void> {
  const store = openStore(stateDir);
  try {
    const signer = await pinnedSigner(store, stateDir, TEST_PASSPHRASE);
    const req = getRequest(store, request) as ApprovalRequest;
    const grant = {
      grant: `01OLDGRANT${Date.now()}`,
      request,
      mode: "session" as const,
      agentRun: req.agentRun,
      serverLabel: req.serverLabel,
      executionEpoch: req.executionEpoch,
      toolScope: [{ name: req.tool, fingerprint: req.fingerprint }],
      credentialScope: req.credentialScope,
      issuedAt: new Date().toISOString(),
      argumentsDigest: null,
      reviewDigest: null,
    };
    const signature = signer.sign(decisionDigest(grantStatement(grant)));
    store
      .prepare(
        `INSERT INTO grants (grant_id, agent_run, server_label, execution_epoch, catalog_revision, tool_scope_json,
           tool_defs_json, credential_scope_json, mode, issued_at, expires_when, request, approved_by, signature)
         VALUES (?, ?, ?, ?, ?, ?, '{}', ?, 'session', ?, 'agent-run-ends', ?, 'older-approve', ?)`,
      )
      .run(
        grant.grant,
        grant.agentRun,
        grant.serverLabel,
        grant.executionEpoch,
        req.catalogRevision,
        JSON.stringify(grant.toolScope),
        JSON.stringify(grant.credentialScope),
        grant.issuedAt,
        request,
        signature,
      );
    store
      .prepare(
        "UPDATE approval_requests SET state = 'approved', decided_by = 'older-approve', grant_id = ? WHERE request = ?",
      )
      .run(grant.grant, request);
  } finally {
    store.close();
  }
}
