// An audit chain that no longer accounts for the store's history (emptied with its delete trigger
// dropped, or cut before its pin): `audit verify` and `doctor` fail on it, the views that decrypt
// it (`audit sessions`, `activity`) show nothing from it and exit 1 as verify does, `audit
// checkpoint` makes no checkpoint of it, and no approver key is
// pinned on it, so a same-user process that swaps in its own keyring cannot approve its own
// requests. A fresh store still gets its first pin. Real gateways and CLI processes.
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, cpSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { tempDir } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { makeProject, type Project } from "../helpers/project.js";
import { newKeyringOnlyStateDir, passphraseEnv } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** A keyring of the attacker's own passphrase, made by the real `init` in a directory of its own. */
function attackerKeyring(): { keyring: string; env: Record<string, string> } {
  const dir = tempDir("portcullis-attacker-");
  const pass = join(dir, "pass");
  writeFileSync(pass, "the attacker's own passphrase\n", { mode: 0o600 });
  const env = { PORTCULLIS_PASSPHRASE_FILE: pass, PORTCULLIS_INSECURE_TEST_KDF: "1" };
  const state = join(dir, "state");
  const r = spawnSync(NODE, [CLI, "init", "--state-dir", state], {
    env: { ...process.env, ...env },
    encoding: "utf8",
  });
  expect(r.status, r.stderr).toBe(0);
  return { keyring: join(state, "keyring.json"), env };
}

function sql(stateDir: string, statements: string): void {
  const db = new Database(join(stateDir, "portcullis.db"));
  db.exec(statements);
  db.close();
}

const EMPTY_CHAIN = "DROP TRIGGER audit_records_no_delete; DELETE FROM audit_records;";

/** `audit sessions` and `audit activity` (text and --json) show nothing, exit 1, and say why. */
async function viewsRefuse(stateDir: string, why: RegExp): Promise<void> {
  for (const args of [["sessions"], ["activity"], ["sessions", "--json"], ["activity", "--json"]]) {
    const r = await runCli(["audit", ...args, "--state-dir", stateDir], { env: passphraseEnv() });
    expect(r.code, args.join(" ")).toBe(1);
    expect(r.stdout, args.join(" ")).toBe("");
    expect(r.stderr, args.join(" ")).toMatch(why);
  }
}

/**
 * `audit checkpoint` makes none of a chain verify fails (exit 1, nothing on stdout): a checkpoint
 * of the cut log, kept elsewhere, would vouch for it from then on. It made one of the emptied
 * chain, seq 0, exit 0. `audit export` exports it, with a note that verify fails on the store.
 */
async function checkpointRefused(stateDir: string, why: RegExp): Promise<void> {
  const r = await runCli(["audit", "checkpoint", "--state-dir", stateDir]);
  expect(r.code, r.stdout).toBe(1);
  expect(r.stdout).toBe("");
  expect(r.stderr).toMatch(new RegExp(`^portcullis audit checkpoint: .*${why.source}`));
  // as its help says
  const help = await runCli(["audit", "checkpoint", "--help"]);
  expect(help.stdout.replace(/\s+/g, " ")).toContain(
    "checkpoint makes one only of a store verify passes (exit 1 otherwise, as verify)",
  );
  // an export is made (it is how the records get out), saying on stderr what it cannot carry
  const exported = await runCli(["audit", "export", "--state-dir", stateDir]);
  expect(exported.code, exported.stderr).toBe(0);
  expect(exported.stderr).toMatch(
    new RegExp(
      `^portcullis audit export: note: .*${why.source}.*'portcullis audit verify --state-dir \\S+' fails on this store`,
    ),
  );
}

/**
 * The attacker's keyring copied in, a gateway started again, and its call's request approved
 * with the attacker's own passphrase: the request and what `approve` said.
 */
async function approveAsAttacker(project: Project, stateDir: string, seen: Set<string>) {
  const attacker = attackerKeyring();
  copyFileSync(attacker.keyring, join(stateDir, "keyring.json"));
  const again = await startInventory(project, [], { stateDir });
  cleanup.push(() => again.close());
  await again.client.listTools();
  const call = again.client.callTool({ name: "adjust_inventory", arguments: { sku: "S-1", delta: 1 } });
  call.catch(() => {});
  const request = await nextStoredRequest(stateDir, seen);
  const approve = await runCli(["approve", request.request, "--for", "session", "--state-dir", stateDir], {
    env: attacker.env,
  });
  return { request, approve };
}

/** What the file's cases share, undone after the last of them. */
const shared: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of shared.splice(0).reverse()) await c();
});

/**
 * A store where the human approved one call through a real gateway (their key pinned, a grant
 * signed with it), the gateway then closed; `seen` holds that request. Made once for the file
 * (a gateway, an approval): each case gets a copy of the closed state directory, its files as
 * they were, and the project, whose server no case's call reaches.
 */
let approved: Promise<{ stateDir: string; project: Project; seen: Set<string> }> | undefined;
async function approvedOnce(): Promise<{ stateDir: string; project: Project; seen: Set<string> }> {
  approved ??= (async () => {
    const stateDir = newKeyringOnlyStateDir();
    const project = makeProject("A");
    shared.push(() => project.cleanup());
    const gw = await startInventory(project, [], { stateDir });
    shared.push(() => gw.close());
    await gw.client.listTools();
    const seen = new Set<string>();
    const first = gw.client.callTool({ name: "read_status", arguments: {} });
    await decideByCli(stateDir, "approve", (await nextStoredRequest(stateDir, seen)).request);
    await first;
    await gw.close();
    return { stateDir, project, seen };
  })();
  const { stateDir: original, project, seen } = await approved;
  const stateDir = join(tempDir("portcullis-approved-"), "state");
  cpSync(original, stateDir, { recursive: true });
  chmodSync(stateDir, 0o700);
  return { stateDir, project, seen: new Set(seen) };
}

describe("a chain that does not account for the store's history", () => {
  it("emptied: verify and doctor fail; a swapped keyring's approve pins nothing and decides nothing", async () => {
    const { stateDir, project, seen } = await approvedOnce();

    sql(stateDir, EMPTY_CHAIN);
    const verify = await runCli(["audit", "verify", "--state-dir", stateDir]);
    expect(verify.stdout).toMatch(
      /^audit chain broken at seq 1: the audit chain is empty, but the store holds 1 approval request, 1 grant: its records were deleted\n$/,
    );
    expect(verify.code).toBe(1);
    await viewsRefuse(stateDir, /broken at seq 1: the audit chain is empty, but the store holds/);
    await checkpointRefused(stateDir, /the audit chain is empty, but the store holds/);
    const doctor = await runCli(["doctor", "--json", "--state-dir", stateDir]);
    expect(doctor.code).toBe(1);
    const findings = (JSON.parse(doctor.stdout) as { findings: { ok: boolean; what: string }[] }).findings;
    expect(findings).toContainEqual(
      expect.objectContaining({ ok: false, what: expect.stringMatching(/the audit chain is empty, but/) }),
    );

    // the attacker's keyring in place, a request of its own approved with its own passphrase (the
    // gateway's records make the chain non-empty again: the human's signed grant still shows it)
    const { request, approve } = await approveAsAttacker(project, stateDir, seen);
    expect(approve.stderr).toMatch(
      /^portcullis approve: no approver key is pinned in the audit chain, and the keyring's \([0-9a-f]{32}\) will not be: the audit chain pins no approver key, but the store holds 1 decision signed with one: .*; restore the state directory .*; nothing was changed\.\n$/,
    );
    expect(approve.code).toBe(1);
    const db = new Database(join(stateDir, "portcullis.db"), { readonly: true });
    const state = db
      .prepare("SELECT state FROM approval_requests WHERE request = ?")
      .pluck()
      .get(request.request);
    db.close();
    expect(state).toBe("pending");
    expect(project.records().map((x) => x.tool)).toEqual(["read_status"]);
  });

  it("cut before its pin: verify fails; the keyring swapped in over a chain begun for another is not pinned", async () => {
    const { stateDir, project, seen } = await approvedOnce();
    // the chain from its pin on, deleted: what is left still verifies on its own
    sql(
      stateDir,
      `DROP TRIGGER audit_records_no_delete;
       DELETE FROM audit_records WHERE seq >= (SELECT min(seq) FROM audit_records
         WHERE instr(substr(record, 1, 512), CAST('"type":"approver_key_pinned"' AS BLOB)) > 0);`,
    );
    const verify = await runCli(["audit", "verify", "--state-dir", stateDir]);
    expect(verify.stdout).toMatch(
      /^audit chain broken at seq \d+: the audit chain pins no approver key, but the store holds 1 decision signed with one: the records from the pin on were cut from the chain\n$/,
    );
    expect(verify.code).toBe(1);
    await viewsRefuse(
      stateDir,
      /the audit chain pins no approver key, but the store holds 1 decision signed/,
    );
    await checkpointRefused(
      stateDir,
      /the audit chain pins no approver key, but the store holds 1 decision signed/,
    );

    // the signed decision's row gone too: the chain left was still begun for the human's keyring
    sql(stateDir, "DELETE FROM grants; UPDATE approval_requests SET decision_signature = NULL;");
    const { approve } = await approveAsAttacker(project, stateDir, seen);
    expect(approve.stderr).toMatch(
      /will not be: the audit chain was begun for another keyring \(its first record is sealed to audit key [0-9a-f]+, keyring.json's is [0-9a-f]+\): keyring.json was replaced;/,
    );
    expect(approve.code).toBe(1);
  });

  it("a fresh store: init pins, and a keyring with no pin yet over its own chain is pinned at the first approve", async () => {
    const stateDir = newKeyringOnlyStateDir(); // a keyring, no pin (as an init killed before its pin left it)
    // a first launch that failed leaves its gateway's row and no record: not deleted history
    const failed = await runCli(["run", "--label", "typo", "--", join(stateDir, "no-such-server")], {
      stateDir,
    });
    expect(failed.code).toBe(2);
    const rows = new Database(join(stateDir, "portcullis.db"), { readonly: true });
    expect(rows.prepare("SELECT count(*) FROM gateways").pluck().get()).toBe(1);
    expect(rows.prepare("SELECT count(*) FROM audit_records").pluck().get()).toBe(0);
    rows.close();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, [], { stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const call = gw.client.callTool({ name: "read_status", arguments: {} });
    const approved = await decideByCli(stateDir, "approve", (await nextStoredRequest(stateDir)).request);
    expect(approved.stderr).toMatch(/approver key [0-9a-f]{32} pinned in the audit chain/);
    await call;
    const verify = await runCli(["audit", "verify", "--state-dir", stateDir]);
    expect(verify.code).toBe(0);
    const fresh = join(tempDir("portcullis-fresh-"), "state");
    const init = await runCli(["init", "--state-dir", fresh], { env: passphraseEnv() });
    expect(init.code, init.stderr).toBe(0);
    expect((await runCli(["audit", "verify", "--state-dir", fresh])).code).toBe(0);
  });
});
