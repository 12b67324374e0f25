// The approval CLI, run as a separate process (as a human would, from another
// terminal) against the store a waiting Authorizer polls.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getGrant } from "../../src/approval/grants.js";
import { pinnedSigner } from "../../src/approval/pin.js";
import { getRequest } from "../../src/approval/requests.js";
import type { Run } from "../../src/approval/runs.js";
import { openRecords } from "../../src/audit/index.js";
import { REFUSAL_CODES } from "../../src/guard/refusals.js";
import { initKeyring, unlockKeyring } from "../../src/keyring/keyring.js";
import { INSECURE_TEST_KDF_ENV } from "../../src/keyring/keyWrapping.js";
import type { Store } from "../../src/store/db.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { type CliResult, runCli } from "../helpers/gateway.js";
import {
  callOf,
  makeAuthorizer,
  openTestStore,
  pendingOf,
  publishPreview,
  requestCount,
  testRun,
} from "./helpers.js";

const REPO = resolve(import.meta.dirname, "../..");
const EPOCH = "01JQ7R4S4S0QJ7GZP1S2AAAAAA";
const PASSPHRASE = "correct horse battery staple";

// The real CLI, as built by `npm test` (npm run build first; runCli says when it is not).
const build = join(REPO, "dist");

/** `portcullis NAME ...args` as an agent's subprocess runs it (PORTCULLIS_HOME not set either). */
function cli(name: string, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return runCli([name, ...args], { env, noTerminal: true });
}

let dir: string;
let db: Store;
let passFile: string;
let withPass: Record<string, string>;

beforeEach(async () => {
  dir = tempDir("portcullis-approval-cli-");
  db = openTestStore(dir);
  const before = process.env[INSECURE_TEST_KDF_ENV];
  process.env[INSECURE_TEST_KDF_ENV] = "1";
  try {
    await initKeyring(dir, PASSPHRASE);
    // and its approver key pinned as `portcullis init` pins it: record 1 of the chain (a store
    // holding runs and requests with an empty chain is one whose records were deleted)
    await pinnedSigner(db, dir, PASSPHRASE);
  } finally {
    if (before === undefined) delete process.env[INSECURE_TEST_KDF_ENV];
    else process.env[INSECURE_TEST_KDF_ENV] = before;
  }
  passFile = join(dir, "passphrase.txt");
  writeFileSync(passFile, `${PASSPHRASE}\n`, { mode: 0o600 });
  withPass = { PORTCULLIS_PASSPHRASE_FILE: passFile };
});

afterEach(() => {
  db.close();
  removeDir(dir);
});

async function waitingCall(run: Run, opts: { timeoutMs?: number } = {}) {
  const { auth, rec } = makeAuthorizer(db, run, { timeoutMs: opts.timeoutMs ?? 60_000 });
  const got = auth.obtain(callOf(publishPreview, EPOCH, { effective: { branch: "main" } }));
  const req = await pendingOf(db, run);
  return { auth, rec, got, req };
}

describe("portcullis approve / deny / revoke in another process", () => {
  it("approve with the passphrase: the waiting call gets its grant", async () => {
    const run = testRun(db);
    const { got, req, auth } = await waitingCall(run);

    const listed = await cli("approvals", ["--json", "--state-dir", dir]);
    expect(listed.code).toBe(0);
    const json = JSON.parse(listed.stdout) as {
      requests: { request: string; review: { agentRun: { chain: { pid: number }[] } } }[];
    };
    expect(json.requests.map((r) => r.request)).toEqual([req.request]);
    expect(json.requests[0]!.review.agentRun.chain[0]!.pid).toBe(process.pid);

    const text = await cli("approvals", ["--state-dir", dir]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`approval request ${req.request}`);
    expect(text.stdout).toContain(`pid ${process.pid}`);
    expect(text.stdout).toContain("publish_preview");
    expect(text.stdout).toMatch(new RegExp(`epoch +${EPOCH}`));
    expect(text.stdout).toMatch(/branch = "main"/);

    const r = await cli("approve", [req.request, "--for", "session", "--state-dir", dir], withPass);
    // the key was pinned already (as init does): the decision says nothing on stderr
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`approval request ${req.request}`);
    const result = await got;
    expect("grant" in result && result.grant).toBeTruthy();
    const grant = getGrant(db, (result as { grant: string }).grant)!;
    expect(grant).toMatchObject({ agentRun: run.run, executionEpoch: EPOCH, mode: "session" });
    expect(grant.approvedBy).toMatch(/passphrase verified/);
    expect(r.stdout).toContain(`grant ${grant.grant}`);

    const grants = await cli("grants", ["--json", "--state-dir", dir]);
    expect(JSON.parse(grants.stdout).grants.map((g: { grant: string }) => g.grant)).toEqual([grant.grant]);

    // revoke from another process, without a terminal or a passphrase: the next call asks again
    const rv = await cli("revoke", [grant.grant, "--state-dir", dir]);
    expect(rv.stderr).toBe("");
    expect(rv.code).toBe(0);
    expect(getGrant(db, grant.grant)!.revokedBy).toMatch(/via 'portcullis revoke'/);
    expect(getGrant(db, grant.grant)!.revokedAt).not.toBeNull();
    const again = auth.obtain(callOf(publishPreview, EPOCH));
    const second = await pendingOf(db, run);
    expect(second.request).not.toBe(req.request);
    const d = await cli(
      "deny",
      [second.request, "--reason", "enough for today", "--state-dir", dir],
      withPass,
    );
    expect(d.code).toBe(0);
    const denied = await again;
    expect("error" in denied && denied.error.code).toBe(REFUSAL_CODES.approval_denied);
    expect((denied as { error: { data: { reason: string } } }).error.data.reason).toBe(
      "denied: enough for today",
    );
  });

  it("revoke is recorded in the audit chain: who revoked which grant, and the chain still verifies", async () => {
    const run = testRun(db);
    const { got, req } = await waitingCall(run);
    expect((await cli("approve", [req.request, "--for", "session", "--state-dir", dir], withPass)).code).toBe(
      0,
    );
    const granted = (await got) as { grant: string };
    const rv = await cli("revoke", [granted.grant, "--state-dir", dir]);
    expect(rv.stderr).toBe("");
    expect(rv.code).toBe(0);
    const { auditPrivateKey } = await unlockKeyring(dir, PASSPHRASE);
    const records = [...openRecords(db, auditPrivateKey)];
    const revoked = records.filter((r) => r.event.type === "grants_revoked");
    expect(revoked.map((r) => r.event)).toEqual([
      {
        type: "grants_revoked",
        run: run.run,
        serverLabel: req.serverLabel,
        epoch: EPOCH,
        grants: [granted.grant],
        reason: "revoked by a human",
        revokedBy: getGrant(db, granted.grant)!.revokedBy,
      },
    ]);
    expect(revoked[0]!.event.revokedBy).toMatch(/via 'portcullis revoke' \(pid \d+\)/);
    // after the grant's approval_granted, written by the revoking process
    const grantedAt = records.findIndex((r) => r.event.type === "approval_granted");
    expect(records.indexOf(revoked[0]!)).toBeGreaterThan(grantedAt);
    expect(revoked[0]!.header.pid).not.toBe(process.pid);
    const verified = await cli("audit", ["verify", "--state-dir", dir]);
    expect(verified.code, verified.stderr).toBe(0);
  });

  it("deny with an unquoted reason of several words is a usage error about --reason", async () => {
    const run = testRun(db);
    const { got, req } = await waitingCall(run, { timeoutMs: 20_000 });
    const r = await cli("deny", [req.request, "--reason", "two", "words", "--state-dir", dir], withPass);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      'portcullis deny: --reason takes one argument; quote a reason of several words (--reason "not this branch").\n',
    );
    expect(getRequest(db, req.request)!.state).toBe("pending");
    expect(
      (await cli("deny", [req.request, "--reason", "two words", "--state-dir", dir], withPass)).code,
    ).toBe(0);
    expect("error" in (await got)).toBe(true);
  });

  it("without a terminal and without a passphrase file, approve and deny refuse with exit 2", async () => {
    const run = testRun(db);
    const { got, req } = await waitingCall(run, { timeoutMs: 20_000 });
    for (const name of ["approve", "deny"]) {
      const r = await cli(name, [
        req.request,
        ...(name === "approve" ? ["--for", "session"] : []),
        "--state-dir",
        dir,
      ]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/no terminal to read the passphrase/);
      expect(getRequest(db, req.request)!.state).toBe("pending");
    }
    const rv = await cli("revoke", ["01NOSUCHGRANT", "--state-dir", dir]);
    expect(rv.code).toBe(2);
    // A wrong passphrase: a check failed (exit 1), nothing decided.
    writeFileSync(passFile, "not the passphrase\n");
    const wrong = await cli("approve", [req.request, "--for", "session", "--state-dir", dir], withPass);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/wrong passphrase/);
    expect(getRequest(db, req.request)!.state).toBe("pending");
    writeFileSync(passFile, `${PASSPHRASE}\n`);
    expect((await cli("deny", [req.request, "--state-dir", dir], withPass)).code).toBe(0);
    expect("error" in (await got)).toBe(true);
  });

  it("a passphrase given as an argument is refused, never echoed, and decides nothing", async () => {
    const run = testRun(db);
    const { got, req } = await waitingCall(run, { timeoutMs: 20_000 });
    // The passphrase file is there: were the argument accepted or ignored, the approval would go through.
    const attempts: [string, string[]][] = [
      ["approve", [req.request, PASSPHRASE]],
      ["approve", [req.request, "--passphrase", PASSPHRASE]],
      ["approve", [req.request, `--passphrase=${PASSPHRASE}`]],
      ["deny", [req.request, "--pin=4242"]],
      ["revoke", ["01SOMEGRANT", PASSPHRASE]],
    ];
    for (const [name, args] of attempts) {
      const r = await cli(name, [...args, "--state-dir", dir], withPass);
      expect(r.code, `${name} ${args.join(" ")}`).toBe(2);
      expect(r.stderr).toMatch(/never accepted/);
      expect(r.stderr).not.toContain(PASSPHRASE);
      expect(r.stderr).not.toContain("4242");
      expect(r.stdout).toBe("");
    }
    expect(getRequest(db, req.request)!.state).toBe("pending");
    expect(requestCount(db, run)).toBe(1);
    expect((await cli("approve", [req.request, "--for", "call", "--state-dir", dir], withPass)).code).toBe(0);
    expect("grant" in (await got)).toBe(true);
  });

  it("usage: --help, unknown ids, decided requests", async () => {
    const help = await cli("approve", ["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/never accepted as an argument/);
    expect((await cli("approve", ["--state-dir", dir], withPass)).code).toBe(2);
    const unknown = await cli("approve", ["01ARZ3NDEKTSV4RRFFQ69G5FAV", "--state-dir", dir], withPass);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no approval request 01ARZ3NDEKTSV4RRFFQ69G5FAV/);
    // a word not shaped like an ID is said to be none, and not repeated
    const notId = await cli("approve", ["01NOSUCHREQUEST", "--state-dir", dir], withPass);
    expect(notId.code).toBe(2);
    expect(notId.stderr).toMatch(/the request ID given is not one/);
    expect(notId.stderr).not.toContain("01NOSUCHREQUEST");
    expect((await cli("approve", ["X", "--for", "ever", "--state-dir", dir], withPass)).code).toBe(2);

    const run = testRun(db);
    const { got, req } = await waitingCall(run, { timeoutMs: 20_000 });
    expect((await cli("deny", [req.request, "--state-dir", dir], withPass)).code).toBe(0);
    await got;
    const late = await cli("approve", [req.request, "--for", "session", "--state-dir", dir], withPass);
    expect(late.code).toBe(1);
    expect(late.stderr).toMatch(/no longer pending: it was denied/);
    const none = await cli("approvals", ["--state-dir", dir]);
    expect(none.stdout).toMatch(/no approval request is pending/);
  });
});

describe("the process chain of a run", () => {
  it("a gateway started by this process records this process: pid, start time, executable and its digest", async () => {
    const entry = pathToFileURL(join(build, "approval", "runs.js")).href;
    const dbEntry = pathToFileURL(join(build, "store", "db.js")).href;
    const script = `import { startRun } from ${JSON.stringify(entry)};
import { openStore } from ${JSON.stringify(dbEntry)};
const db = openStore(process.argv[1]);
process.stdout.write(JSON.stringify(startRun(db, "inventory-local")));
db.close();`;
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script, dir], {
      encoding: "utf8",
    });
    const run = JSON.parse(out) as Run;
    if (process.platform !== "linux" && process.platform !== "darwin") return;
    const me = run.chain[0]!;
    expect(me.pid).toBe(process.pid);
    expect(me.ppid).toBe(process.ppid);
    expect(me.startTime).toBeTruthy();
    expect(realpathSync(me.executable!)).toBe(realpathSync(process.execPath));
    expect(me.sha256).toBe(
      `sha256:${createHash("sha256").update(readFileSync(process.execPath)).digest("hex")}`,
    );
    expect(run.chain[1]?.pid).toBe(process.ppid);
    const row = db.prepare("SELECT chain_digest FROM runs WHERE run = ?").get(run.run) as {
      chain_digest: string;
    };
    expect(row.chain_digest).toBe(run.chainDigest);
  });
});
