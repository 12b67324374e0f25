// `portcullis init` and `portcullis audit …` as real processes (the built command functions,
// run by children/cli.mjs the way the dispatcher calls them), with no controlling terminal
// unless a test gives them one.
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { type AuditEvent, AuditLog, argumentsDigest } from "../../src/audit/index.js";
import { keyringExists } from "../../src/keyring/keyringRead.js";
import { openStore, type Store } from "../../src/store/db.js";
import { exitWithOutput } from "../helpers/exitWithOutput.js";
import { runCli } from "../helpers/gateway.js";
import {
  CHILDREN,
  cli,
  PASSPHRASE,
  passphraseFile,
  type Ran,
  REPO,
  requireBuild,
  stateWithKeyring,
  tempDir,
} from "./helpers.js";

beforeAll(() => requireBuild());

const SECRET = "sk-live-51HvX9c2eZvKYlo2C0s3cr3tV4lu3";
const RUN = "01JQ7R1ZC2M7W1DXQ8Z2K9V4B6";

/** The gateway's side of a short session: what it would write, never the secret itself. */
function writeSession(db: Store, dir: string): void {
  const log = AuditLog.open(db, dir);
  const args = { sku: "A-100", apiKey: SECRET };
  const events: AuditEvent[] = [
    { type: "server_started", serverLabel: "inventory-local", epoch: "E-A" },
    { type: "run_started", run: RUN, serverLabel: "inventory-local" },
    { type: "catalog_served", run: RUN, epoch: "E-A", revision: 12 },
    {
      type: "approval_granted",
      run: RUN,
      epoch: "E-A",
      grant: "G1",
      tools: ["inventory_adjust"],
      mode: "session",
    },
    {
      type: "tool_called",
      run: RUN,
      requestId: 1,
      tool: "inventory_adjust",
      epoch: "E-A",
      revision: 12,
      grant: "G1",
      argumentsDigest: argumentsDigest(args),
    },
    { type: "credential_injected", run: RUN, requestId: 1, scope: "inventory-api-staging" },
    { type: "tool_result", run: RUN, requestId: 1, outcome: "ok" },
  ];
  for (const e of events) log.append(e);
  expect(() => log.append({ type: "credential_injected", run: RUN, credentialValue: SECRET })).toThrow(
    /never written/,
  );
  expect(() => log.append({ type: "tool_called", run: RUN, arguments: args })).toThrow(/apiKey/);
}

async function stateWithSession(): Promise<string> {
  const dir = await stateWithKeyring();
  const db = openStore(dir);
  writeSession(db, dir);
  db.close();
  return dir;
}

const withPass = (file = passphraseFile()) => ({ PORTCULLIS_PASSPHRASE_FILE: file });
const noPass = { PORTCULLIS_PASSPHRASE_FILE: undefined };
const oneSentence = (r: Ran) => {
  expect(r.stderr.trim().split("\n")).toHaveLength(1);
  // a subcommand's own usage error is named by it ("portcullis audit verify: …")
  expect(r.stderr).toMatch(/^portcullis (audit|init)( [a-z]+)?: .+\.\n$/);
};

describe("portcullis init", () => {
  it("creates the keyring from PORTCULLIS_PASSPHRASE_FILE, then refuses to overwrite it", async () => {
    const dir = tempDir();
    const r = await cli(dir, ["init"], withPass());
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Keyring created: .*keyring\.json\nAudit key id: [0-9a-f]{32}\n/);
    expect(keyringExists(dir)).toBe(true);
    const before = readFileSync(join(dir, "keyring.json"));
    const again = await cli(dir, ["init"], withPass(passphraseFile("another passphrase")));
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already exists.*never overwrites/);
    oneSentence(again);
    expect(readFileSync(join(dir, "keyring.json"))).toEqual(before);
  });

  it("needs a terminal or PORTCULLIS_PASSPHRASE_FILE, and a passphrase of 8 characters or more", async () => {
    const none = await cli(tempDir(), ["init"], noPass);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/no terminal.*PORTCULLIS_PASSPHRASE_FILE/);
    oneSentence(none);
    const short = await cli(tempDir(), ["init"], withPass(passphraseFile("short")));
    expect(short.code).toBe(2);
    expect(short.stderr).toMatch(/at least 8 characters/);
    const missing = await cli(tempDir(), ["init"], withPass("/nonexistent/passphrase"));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(
      /cannot read PORTCULLIS_PASSPHRASE_FILE \(\/nonexistent\/passphrase\): it does not exist; check the path \(ENOENT\)/,
    );
    const empty = join(tempDir(), "empty");
    writeFileSync(empty, "\nsecond line\n", { mode: 0o600 });
    expect((await cli(tempDir(), ["init"], withPass(empty))).stderr).toMatch(/first line .* is empty/);
  });

  it("documents the passphrase file and the passphrase's least length in --help, and takes no other argument", async () => {
    const help = await cli(tempDir(), ["init", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("PORTCULLIS_PASSPHRASE_FILE");
    // the length the refusal above names, said before the user types one
    expect(help.stdout).toContain("passphrase (at least\n8 characters)");
    expect(help.stdout).toMatch(/tests and CI/);
    const bad = await cli(tempDir(), ["init", "--force"]);
    expect(bad.code).toBe(2);
    oneSentence(bad);
  });
});

describe("portcullis audit (no key)", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await stateWithSession();
  });

  it("verify: exit 0 with a summary, --json for scripts", async () => {
    const r = await cli(dir, ["audit", "verify"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^audit chain ok: 7 records, head seq 7 hash [0-9a-f]{64}; records 1-6 are each held by the record after them, the head is covered only by a checkpoint \(none given: save one with 'portcullis audit checkpoint --state-dir \S+ > CHECKPOINT'.*\)\n$/,
    );
    // the commands it names act on this state directory, not the default one
    expect(r.stdout).toContain(`'portcullis audit verify --state-dir ${dir} --checkpoint CHECKPOINT'`);
    const j = await cli(dir, ["audit", "verify", "--json"]);
    expect(JSON.parse(j.stdout)).toMatchObject({
      ok: true,
      records: 7,
      head: { seq: 7 },
      headCovered: false,
    });
  });

  it("verify --json: every member is one docs/audit-format.md lists, each only where its row says", async () => {
    const doc = readFileSync(join(REPO, "docs", "audit-format.md"), "utf8");
    const table = /<!-- verify-json:begin -->([\s\S]*?)<!-- verify-json:end -->/.exec(doc)?.[1] ?? "";
    const rows = [...table.matchAll(/^\| `(\w+)` \| \w+ \| (.*) \|$/gm)].map((m) => ({
      member: m[1]!,
      when: m[2]!.startsWith("only when ok") ? true : m[2]!.startsWith("only when not ok") ? false : null,
    }));
    expect(rows.map((r) => r.member)).toContain("notAnExport");
    const work = tempDir();
    const cpFile = join(work, "checkpoint.json");
    writeFileSync(cpFile, (await runCli(["audit", "checkpoint"], { stateDir: dir })).stdout);
    const notExport = join(work, "not-export.jsonl");
    writeFileSync(notExport, "{}\n");
    const broken = join(work, "broken.jsonl");
    const lines = (await runCli(["audit", "export"], { stateDir: dir })).stdout.split("\n");
    writeFileSync(broken, [lines[1], lines[0], ...lines.slice(2)].join("\n"));
    // a keyring beside no store: the empty log verify says may be a store deleted
    const bare = tempDir();
    copyFileSync(join(dir, "keyring.json"), join(bare, "keyring.json"));
    const outputs = [
      [dir, []],
      [dir, ["--checkpoint", cpFile]],
      [dir, ["--file", notExport]],
      [dir, ["--file", broken]],
      [bare, []],
    ] as const;
    const seen = new Set<string>();
    for (const [stateDir, args] of outputs) {
      const r = await runCli(["audit", "verify", "--json", ...args], { stateDir });
      const out = JSON.parse(r.stdout) as Record<string, unknown>;
      expect(r.code, args.join(" ")).toBe(out.ok === true ? 0 : 1);
      for (const key of Object.keys(out)) {
        seen.add(key);
        const row = rows.find((x) => x.member === key);
        expect(row, `${key} is not in the table (${args.join(" ")})`).toBeDefined();
        if (row!.when !== null) expect(out.ok, `${key} with ok ${String(out.ok)}`).toBe(row!.when);
      }
    }
    // and every row is a member some output has
    expect(rows.map((r) => r.member).filter((m) => !seen.has(m))).toEqual([]);
  });

  it("verify: a chain of two says record 1 is held by the record after it", async () => {
    const d = await stateWithKeyring();
    const db = openStore(d);
    const log = AuditLog.open(db, d);
    log.append({ type: "server_started", serverLabel: "inventory-local", epoch: "E-A" });
    log.append({ type: "run_started", run: RUN, serverLabel: "inventory-local" });
    db.close();
    const r = await cli(d, ["audit", "verify"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("; record 1 is held by the record after it, the head is covered");
  });

  // Nothing links to the head record: a chain alone cannot show it was changed, and verify must
  // not claim it did. A checkpoint made before the change does show it.
  it("verify: a modified head passes the bare chain, says only a checkpoint covers it, and fails against one", async () => {
    const d = await stateWithSession();
    const cp = await cli(d, ["audit", "checkpoint"]);
    const cpFile = join(tempDir(), "checkpoint.json");
    writeFileSync(cpFile, cp.stdout);
    const covered = await cli(d, ["audit", "verify", "--checkpoint", cpFile]);
    expect(covered.code).toBe(0);
    expect(covered.stdout).toMatch(/matches the checkpoint at seq 7; .*, the checkpoint covers the head\n$/);
    const cj = await cli(d, ["audit", "verify", "--checkpoint", cpFile, "--json"]);
    expect(JSON.parse(cj.stdout)).toMatchObject({ ok: true, headCovered: true });

    const db = openStore(d);
    db.exec("DROP TRIGGER audit_records_no_update");
    // one byte of the sealed event flipped (set to a fixed value, it was already that value once
    // in 256 runs: nothing changed, and the checkpoint rightly passed)
    const record = db.prepare("SELECT record FROM audit_records WHERE seq = 7").pluck().get() as Buffer;
    const at = record.length - 10;
    record[at] = (record[at] as number) ^ 0xff;
    db.prepare("UPDATE audit_records SET record = ? WHERE seq = 7").run(record);
    db.close();
    const bare = await cli(d, ["audit", "verify"]);
    expect(bare.code).toBe(0);
    expect(bare.stdout).toContain("the head is covered only by a checkpoint (none given");
    const against = await cli(d, ["audit", "verify", "--checkpoint", cpFile]);
    expect(against.code).toBe(1);
    expect(against.stdout).toMatch(/^audit chain broken at seq 7: record 7 differs from the checkpoint/);
  });

  it("verify: two records swapped in an export are reported out of order, not missing", async () => {
    const exp = await cli(dir, ["audit", "export"]);
    const lines = exp.stdout.split("\n");
    [lines[3], lines[4]] = [lines[4]!, lines[3]!];
    const file = join(tempDir(), "swapped.jsonl");
    writeFileSync(file, lines.join("\n"));
    const r = await cli(dir, ["audit", "verify", "--file", file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("audit chain broken at seq 4: records out of order: seq 5 comes before seq 4\n");
    // a record taken out is still "missing", also when it was the last but one
    writeFileSync(
      file,
      [...exp.stdout.split("\n").slice(0, 3), ...exp.stdout.split("\n").slice(4)].join("\n"),
    );
    expect((await cli(dir, ["audit", "verify", "--file", file])).stdout).toMatch(
      /^audit chain broken at seq 4: record 4 is missing \(the next record is seq 5\)/,
    );
    writeFileSync(
      file,
      [...exp.stdout.split("\n").slice(0, 5), ...exp.stdout.split("\n").slice(6)].join("\n"),
    );
    expect((await cli(dir, ["audit", "verify", "--file", file])).stdout).toMatch(
      /^audit chain broken at seq 6: record 6 is missing \(the last record is seq 7\)/,
    );
  });

  it("verify --file: an export without its final newline verifies; an extra empty line does not", async () => {
    const exp = await cli(dir, ["audit", "export"]);
    const file = join(tempDir(), "nofinal.jsonl");
    writeFileSync(file, exp.stdout.replace(/\n$/, ""));
    const r = await cli(dir, ["audit", "verify", "--file", file]);
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toMatch(/^audit chain ok: 7 records/);
    writeFileSync(file, `${exp.stdout}\n`);
    expect((await cli(dir, ["audit", "verify", "--file", file])).code).toBe(1);
  });

  it("verify --file of no export at all says so: an empty file, a checkpoint, any JSON; a damaged first record is still a broken chain", async () => {
    // Before, an empty file was "audit chain ok: the log is empty" (exit 0) and a checkpoint given
    // as --file "audit chain broken at seq 1", which reads as tampering.
    const file = join(tempDir(), "given.jsonl");
    writeFileSync(file, "");
    const empty = await cli(dir, ["audit", "verify", "--file", file]);
    expect(empty.code).toBe(1);
    expect(empty.stdout).toBe(
      `audit verify: ${file} is empty, so it is no audit export (an export of a store set up by 'portcullis init' holds at least record 1, the approver key's pin); give the file 'portcullis audit export' wrote\n`,
    );
    const notExport = `audit verify: ${file} does not read as an audit export: its first line is not an export record (the file 'portcullis audit export' writes holds one {"hash":…} record a line)\n`;
    for (const text of [(await cli(dir, ["audit", "checkpoint"])).stdout, "{}\n", "not json\n"]) {
      writeFileSync(file, text);
      const r = await cli(dir, ["audit", "verify", "--file", file]);
      expect(r.code, text).toBe(1);
      expect(r.stdout, text).toBe(notExport);
    }
    // --json keeps the shape of a failed verification, and says what the file was in a member of
    // its own: a script reading `ok` and `seq` alone would take it for a chain broken at seq 1
    const json = JSON.parse((await cli(dir, ["audit", "verify", "--file", file, "--json"])).stdout);
    expect(json).toEqual({
      ok: false,
      seq: 1,
      problem: expect.stringContaining("does not read as an audit export"),
      notAnExport: true,
    });
    writeFileSync(file, "");
    expect(JSON.parse((await cli(dir, ["audit", "verify", "--file", file, "--json"])).stdout)).toEqual({
      ok: false,
      seq: 1,
      problem: expect.stringContaining("is empty, so it is no audit export"),
      notAnExport: true,
    });
    // an export whose first record was changed is what it was: a chain broken at seq 1
    const exp = (await cli(dir, ["audit", "export"])).stdout;
    writeFileSync(
      file,
      exp.replace(/"hash":"[0-9a-f]/, (m) => `${m.slice(0, -1)}${m.endsWith("0") ? "1" : "0"}`),
    );
    expect((await cli(dir, ["audit", "verify", "--file", file])).stdout).toMatch(
      /^audit chain broken at seq 1: /,
    );
    const broken = JSON.parse((await cli(dir, ["audit", "verify", "--file", file, "--json"])).stdout);
    expect(broken).toMatchObject({ ok: false, seq: 1 });
    expect(broken).not.toHaveProperty("notAnExport");
  });

  it("export, checkpoint, and verify of the export against the checkpoint", async () => {
    const exp = await cli(dir, ["audit", "export"]);
    expect(exp.code).toBe(0);
    const lines = exp.stdout.split("\n");
    expect(lines).toHaveLength(8);
    expect(lines[7]).toBe("");
    const cp = await cli(dir, ["audit", "checkpoint"]);
    expect(cp.code).toBe(0);
    const checkpoint = JSON.parse(cp.stdout);
    expect(checkpoint).toMatchObject({ format: "portcullis-audit-checkpoint/1", seq: 7 });
    expect(checkpoint.hash).toBe(JSON.parse(lines[6]!).hash);

    const work = tempDir();
    const file = join(work, "export.jsonl");
    const cpFile = join(work, "checkpoint.json");
    writeFileSync(file, exp.stdout);
    writeFileSync(cpFile, cp.stdout);
    const ok = await cli(dir, ["audit", "verify", "--file", file, "--checkpoint", cpFile]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/7 records.*matches the checkpoint at seq 7/);

    writeFileSync(file, lines.slice(0, 5).join("\n") + "\n");
    const cut = await cli(dir, ["audit", "verify", "--file", file, "--checkpoint", cpFile, "--json"]);
    expect(cut.code).toBe(1);
    expect(JSON.parse(cut.stdout)).toMatchObject({ ok: false, seq: 6 });

    const altered = exp.stdout.replace(/"type":"tool_result"/, '"type":"tool_resulx"');
    writeFileSync(file, altered);
    const bad = await cli(dir, ["audit", "verify", "--file", file]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/^audit chain broken at seq 7: /);
  });

  it("verify --checkpoint: a key written twice is refused, naming it; a key's text inside a value is no key", async () => {
    // JSON.parse keeps the last of two members under one key, where a person reading the file (or
    // another verifier) may take the first: this checkpoint says seq 9 first, and verified as the
    // seq 7 written after it.
    const cp = JSON.parse((await cli(dir, ["audit", "checkpoint"])).stdout) as Record<string, unknown>;
    const file = join(tempDir(), "checkpoint.json");
    const body = `"time":${JSON.stringify(cp.time)},"key":${JSON.stringify(cp.key)}`;
    writeFileSync(
      file,
      `{"format":"portcullis-audit-checkpoint/1","seq":9,"hash":"${"ab".repeat(32)}",${body},"seq":7,"hash":"${cp.hash}"}`,
    );
    const twice = await cli(dir, ["audit", "verify", "--checkpoint", file]);
    expect(twice.code).toBe(2);
    expect(twice.stdout).toBe("");
    expect(twice.stderr).toBe(
      `portcullis audit verify: ${file}: the checkpoint has the key "seq" twice; a reader could take either, so it is not used.\n`,
    );
    // a key of the file's own, not a checkpoint's, is not said back (it is text from the file)
    writeFileSync(file, `${JSON.stringify(cp).slice(0, -1)},"note\\u001b":1,"note\\u001b":2}`);
    expect((await cli(dir, ["audit", "verify", "--checkpoint", file])).stderr).toBe(
      `portcullis audit verify: ${file}: the checkpoint has a key twice; a reader could take either, so it is not used.\n`,
    );
    // a value holding what looks like a key, and an object nested in a member, are not keys of it
    writeFileSync(file, JSON.stringify({ ...cp, note: '","seq":1,"', extra: { seq: 1, hash: "x" } }));
    const ok = await cli(dir, ["audit", "verify", "--checkpoint", file]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/matches the checkpoint at seq 7/);
  });

  it("verify: exit 1 naming the first bad seq when the store was tampered with", async () => {
    const d = await stateWithSession();
    const db = openStore(d);
    db.exec("DROP TRIGGER audit_records_no_delete");
    db.prepare("DELETE FROM audit_records WHERE seq = 4").run();
    db.close();
    const r = await cli(d, ["audit", "verify"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^audit chain broken at seq 4: record 4 is missing/);
    const cp = await cli(d, ["audit", "checkpoint"]);
    expect(cp.code).toBe(1);
    expect(cp.stderr).toMatch(/broken at seq 4/);
    const s = await cli(d, ["audit", "sessions"], withPass());
    expect(s.code).toBe(1);
    expect(s.stdout).toBe("");
    // the decrypting commands tell it as verify does: nothing after it is taken for the end
    expect(s.stderr).toMatch(/record 4 is missing \(the next record is seq 5\)/);
  });

  it("activity: two records swapped in the store are out of order, not missing", async () => {
    const d = await stateWithSession();
    const db = openStore(d);
    db.exec("DROP TRIGGER audit_records_no_update");
    const [a, b] = [4, 5].map(
      (seq) =>
        (db.prepare("SELECT record FROM audit_records WHERE seq = ?").get(seq) as { record: Buffer }).record,
    );
    db.prepare("UPDATE audit_records SET record = ? WHERE seq = 4").run(b);
    db.prepare("UPDATE audit_records SET record = ? WHERE seq = 5").run(a);
    db.close();
    const v = await cli(d, ["audit", "verify"]);
    expect(v.stdout).toMatch(/records out of order: seq 5 comes before seq 4/);
    const r = await cli(d, ["audit", "activity"], withPass());
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/records out of order: seq 5 comes before seq 4/);
    expect(r.stderr).not.toMatch(/missing|last record/);
  });

  it("show: a number past 2^53 is refused as typed, not read as another number", async () => {
    const r = await cli(dir, ["audit", "show", "99999999999999999999"], withPass());
    expect(r.code).toBe(2);
    oneSentence(r);
    expect(r.stderr).toContain("99999999999999999999 is larger than any record number");
    expect(r.stderr).not.toContain("100000000000000000000");
  });

  it("usage errors exit 2 with one sentence", async () => {
    for (const args of [
      ["audit", "bogus"],
      ["audit", "verify", "--nope"],
      ["audit", "export", "--json", "x"],
      ["audit", "show"],
      ["audit", "show", "0"],
      ["audit", "show", "1", "2"],
      ["audit", "verify", "--file", "/nonexistent.jsonl"],
      ["audit", "verify", "--checkpoint", "/nonexistent.json"],
      // a directory opens, and failed at the first read with a stack trace (exit 70)
      ["audit", "verify", "--file", tempDir()],
      ["audit", "verify", "--checkpoint", tempDir()],
    ]) {
      const r = await cli(dir, args);
      expect(r.code, args.join(" ")).toBe(2);
      oneSentence(r);
    }
    const notCp = join(tempDir(), "cp.json");
    writeFileSync(notCp, '{"seq": 3}');
    const r = await cli(dir, ["audit", "verify", "--checkpoint", notCp]);
    expect(r.code).toBe(2);
    // the file is named: checkpoints are kept elsewhere, often several
    expect(r.stderr).toBe(
      `portcullis audit verify: ${notCp}: the checkpoint format is not portcullis-audit-checkpoint/1.\n`,
    );
    const help = await cli(dir, ["audit", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/PORTCULLIS_PASSPHRASE_FILE/);
    expect((await cli(dir, ["audit"])).code).toBe(2);
  });
});

describe("portcullis audit (decrypting)", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await stateWithSession();
  });

  it("sessions, activity and show read the passphrase from PORTCULLIS_PASSPHRASE_FILE", async () => {
    const s = await cli(dir, ["audit", "sessions"], withPass());
    expect(s.code).toBe(0);
    expect(s.stdout).toContain(`run ${RUN}  server inventory-local`);
    expect(s.stdout).toMatch(/revisions {2}12 \(epoch E-A\)/);
    const sj = await cli(dir, ["audit", "sessions", "--json"], withPass());
    expect(JSON.parse(sj.stdout)).toMatchObject([{ run: RUN, epochs: ["E-A"], calls: 1 }]);
    const a = await cli(dir, ["audit", "activity"], withPass());
    expect(a.code).toBe(0);
    expect(a.stdout).toMatch(
      /^SEQ +TIME +RUN +CALL +SERVER +TOOL +EPOCH +REV +GRANT +DECISION +OUTCOME +CREDENTIALS\n/,
    );
    // each row starts with the record number that audit show opens: the call's record
    expect(a.stdout).toMatch(/\n5 +\S+ +\S+ +1 +- +inventory_adjust /);
    expect(a.stdout).toMatch(/inventory_adjust +E-A +12 +G1 +allowed +ok +inventory-api-staging\n$/);
    const aj = await cli(dir, ["audit", "activity", "--json"], withPass());
    expect(JSON.parse(aj.stdout)).toMatchObject([{ tool: "inventory_adjust", outcome: "ok" }]);
    const show = await cli(dir, ["audit", "show", "5", "--json"], withPass());
    expect(show.code).toBe(0);
    expect(JSON.parse(show.stdout)).toMatchObject({
      seq: 5,
      header: { type: "tool_called" },
      event: { tool: "inventory_adjust" },
    });
    const human = await cli(dir, ["audit", "show", "2"], withPass());
    expect(human.stdout).toMatch(/^seq {5}2\nhash .*\ntype {4}run_started\n/s);
    const none = await cli(dir, ["audit", "show", "99"], withPass());
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/no record 99 \(the log has 7\)/);
  });

  it("refuses a wrong passphrase (exit 1, a check failed), a missing terminal, a missing keyring (exit 2)", async () => {
    const wrong = await cli(dir, ["audit", "activity"], withPass(passphraseFile("not the passphrase")));
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/wrong passphrase/);
    oneSentence(wrong);
    const none = await cli(dir, ["audit", "sessions"], noPass);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/no terminal.*PORTCULLIS_PASSPHRASE_FILE/);
    const bare = tempDir();
    const noKeyring = await cli(bare, ["audit", "sessions"], withPass());
    expect(noKeyring.code).toBe(2);
    expect(noKeyring.stderr).toMatch(/no keyring.*portcullis init/);
    expect(existsSync(join(bare, "portcullis.db"))).toBe(false);
  });

  it("never lets the passphrase or a secret reach the store, its WAL, the export or any output", async () => {
    const d = tempDir();
    const pass = passphraseFile();
    const outputs: Ran[] = [await cli(d, ["init"], withPass(pass))];
    const db = openStore(d); // kept open so the WAL stays on disk while it is read
    writeSession(db, d);
    for (const args of [
      ["audit", "verify"],
      ["audit", "export"],
      ["audit", "checkpoint"],
      ["audit", "sessions", "--json"],
      ["audit", "activity"],
      ["audit", "show", "5"],
      ["audit", "show", "6", "--json"],
    ]) {
      outputs.push(await cli(d, args, withPass(pass)));
    }
    outputs.push(await cli(d, ["audit", "sessions"], withPass(passphraseFile(`${PASSPHRASE}x`))));
    expect(outputs.map((o) => o.code)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 1]);
    const wal = join(d, "portcullis.db-wal");
    expect(existsSync(wal)).toBe(true);
    const files = [join(d, "portcullis.db"), wal, join(d, "keyring.json")].map((f) => readFileSync(f));
    db.close();
    files.push(readFileSync(join(d, "portcullis.db")));
    const texts = [...files, ...outputs.flatMap((o) => [Buffer.from(o.stdout), Buffer.from(o.stderr)])];
    for (const needle of [PASSPHRASE, SECRET]) {
      for (const form of [
        needle,
        Buffer.from(needle).toString("hex"),
        Buffer.from(needle).toString("base64"),
      ]) {
        for (const t of texts) expect(t.includes(form), form).toBe(false);
      }
    }
  });
});

const hasScript = spawnSync("script", ["--version"]).status === 0 && process.platform === "linux";

describe.runIf(hasScript)("the passphrase on a terminal", () => {
  /** Runs the CLI under `script` (a pseudo-terminal), typing `keys` after each prompt. */
  function onTerminal(
    dir: string,
    args: string[],
    keys: string[],
  ): Promise<{ code: number | null; screen: string }> {
    const command = [process.execPath, join(CHILDREN, "cli.mjs"), dir, ...args]
      .map((a) => `'${a}'`)
      .join(" ");
    const env = { ...process.env };
    delete env.PORTCULLIS_PASSPHRASE_FILE;
    const child = spawn("script", ["-qec", command, "/dev/null"], { env });
    let screen = "";
    let prompts = 0;
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      screen += d;
      const seen = screen.split(/passphrase: /i).length - 1;
      while (prompts < seen && prompts < keys.length) {
        const k = keys[prompts++]!;
        setTimeout(() => child.stdin.write(k), 50); // after raw mode is on, as a person would
      }
    });
    // the screen read to its end, not only the exit: the last of it can still be in the pipe
    return exitWithOutput(child, [child.stdout]).then(({ code }) => ({ code, screen }));
  }

  it("is read with echo off, and can be corrected with backspace", async () => {
    const dir = await stateWithSession();
    const r = await onTerminal(dir, ["audit", "sessions"], [`x\u007f${PASSPHRASE}\r`]);
    expect(r.code).toBe(0);
    expect(r.screen).toContain(`run ${RUN}`);
    expect(r.screen).not.toContain(PASSPHRASE.slice(0, 8));
  });

  it("init asks twice, asks again when the two differ, gives up after three; Ctrl-C cancels", async () => {
    const dir = tempDir();
    const differ = await onTerminal(
      dir,
      ["init"],
      [1, 2, 3].flatMap((i) => [`${PASSPHRASE}\r`, `${PASSPHRASE}${"!".repeat(i)}\r`]),
    );
    expect(differ.code).toBe(2);
    expect(differ.screen.match(/the two passphrases differ; type it again/g)).toHaveLength(2);
    expect(differ.screen).toMatch(/the two passphrases differed 3 times/);
    expect(keyringExists(dir)).toBe(false);
    // a slip in the repetition: asked again, and the second pair makes the keyring
    const other = tempDir();
    const slipped = await onTerminal(
      other,
      ["init"],
      [`${PASSPHRASE}\r`, `${PASSPHRASE}x\r`, `${PASSPHRASE}\r`, `${PASSPHRASE}\r`],
    );
    expect(slipped.code).toBe(0);
    expect(slipped.screen).toMatch(/the two passphrases differ; type it again/);
    expect(keyringExists(other)).toBe(true);
    const cancelled = await onTerminal(dir, ["init"], ["abc\u0003"]);
    expect(cancelled.code).toBe(2);
    expect(cancelled.screen).toMatch(/cancelled/);
    const made = await onTerminal(dir, ["init"], [`${PASSPHRASE}\r`, `${PASSPHRASE}\r`]);
    expect(made.code).toBe(0);
    expect(made.screen).not.toContain(PASSPHRASE.slice(0, 8));
    expect(keyringExists(dir)).toBe(true);
  });
});
