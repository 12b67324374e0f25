// A record whose export line would be longer than V8's longest string (536,870,888 characters:
// arguments recorded in clear under a raised --max-message-bytes) cannot be exported as a line.
// `audit export` used to make the line anyway: V8's "Cannot create a string longer than
// 0x1fffffe8 characters", an internal error with a stack, exit 70, and on stdout the lines before
// that record (or none), which `audit verify --file` called a good export. Now the log is
// checked before a line is written: exit 2, one sentence naming the record and what to do,
// nothing on stdout. Such a record costs gigabytes to make, so the real CLI runs here with the
// limit lowered (PORTCULLIS_EXPORT_MAX_LINE, for tests) and the records made by the real writer;
// the length the check computes is compared with the line's own for every record.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  AuditLog,
  exportRecords,
  MAX_EXPORT_LINE_BYTES,
  RecordTooLongToExportError,
  storedRecords,
} from "../../src/audit/index.js";
import { exportLine, exportLineLength } from "../../src/audit/record.js";
import { openStore } from "../../src/store/db.js";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { stateWithKeyring } from "./helpers.js";

const RUN = "01JQ7R1ZC2M7W1DXQ8Z2K9V4B6";

/** A log of a few records, the third a call whose clear arguments are `bytes` long. */
async function logWithLongCall(bytes: number): Promise<string> {
  const dir = await stateWithKeyring();
  const db = openStore(dir);
  const log = AuditLog.open(db, dir);
  log.append({ type: "run_started", run: RUN, serverLabel: "inv" });
  log.append({ type: "tool_called", run: RUN, tool: "big", arguments: { data: "x".repeat(bytes) } });
  for (let i = 0; i < 3; i++) log.append({ type: "tool_called", run: RUN, tool: `t${i}`, arguments: { i } });
  db.close();
  return dir;
}

function lines(dir: string): { seq: number; length: number }[] {
  const db = openStore(dir);
  try {
    return [...storedRecords(db)].map((r, i) => ({ seq: i + 1, length: exportLine(r).length }));
  } finally {
    db.close();
  }
}

describe("audit export of a record too long to be a line", () => {
  it("the length checked is the line's own, for every remainder of the sealed bytes by 3", async () => {
    const dir = await stateWithKeyring();
    const db = openStore(dir);
    const log = AuditLog.open(db, dir);
    for (let n = 0; n < 6; n++)
      log.append({ type: "tool_called", run: RUN, arguments: { d: "y".repeat(n) } });
    for (const r of storedRecords(db)) expect(exportLineLength(r)).toBe(exportLine(r).length);
    db.close();
  });

  it("is refused before a line is written: exit 2, one sentence naming the record and what to do", async () => {
    const dir = await logWithLongCall(100_000);
    const all = lines(dir);
    const long = all.reduce((a, b) => (b.length > a.length ? b : a));
    const limit = long.length - 1;
    const r = await runCli(["audit", "export"], {
      stateDir: dir,
      env: { PORTCULLIS_EXPORT_MAX_LINE: String(limit) },
    });
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      `portcullis audit export: record seq ${long.seq} cannot be exported: its line would be ${long.length.toLocaleString("en-US")} bytes, longer than ${limit.toLocaleString("en-US")}, the longest line an audit export can hold; nothing was written. The record is kept in the store as written: back up the state directory instead ('portcullis audit verify --state-dir' checks a copy), and record arguments as digests (the default) or lower --max-message-bytes so that new records can be exported.\n`,
    );
    expect(r.code).toBe(2);
    // the store is as it was
    const verify = await runCli(["audit", "verify"], { stateDir: dir });
    expect(verify.code, verify.stderr).toBe(0);
  });

  it("a line exactly as long as the limit is exported whole, and the export verifies", async () => {
    const dir = await logWithLongCall(100_000);
    const all = lines(dir);
    const limit = Math.max(...all.map((l) => l.length));
    const r = await runCli(["audit", "export"], {
      stateDir: dir,
      env: { PORTCULLIS_EXPORT_MAX_LINE: String(limit) },
    });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout.split("\n").map((l) => l.length)).toEqual([...all.map((l) => l.length), 0]);
    const file = join(tempDir(), "export.jsonl");
    writeFileSync(file, r.stdout);
    const verify = await runCli(["audit", "verify", "--file", file], { stateDir: dir });
    expect(verify.code, verify.stderr).toBe(0);
  });

  it("a limit written otherwise than in digits without a leading zero is ignored, as every PORTCULLIS_* number is", async () => {
    // Number() read `0x10` as 16 and `010` as 10, a limit every line here is longer than
    const dir = await logWithLongCall(100);
    const all = lines(dir);
    for (const limit of ["0x10", "010", "1e1", " 16"]) {
      const r = await runCli(["audit", "export"], {
        stateDir: dir,
        env: { PORTCULLIS_EXPORT_MAX_LINE: limit },
      });
      expect(r.stderr, JSON.stringify(limit)).toBe("");
      expect(r.code, JSON.stringify(limit)).toBe(0);
      expect(r.stdout.split("\n").length, JSON.stringify(limit)).toBe(all.length + 1);
    }
  });

  it("a record appended once the export has begun stops it where it is (exportRecords)", async () => {
    const dir = await logWithLongCall(100_000);
    const db = openStore(dir);
    try {
      const long = lines(dir).reduce((a, b) => (b.length > a.length ? b : a));
      const made: string[] = [];
      let thrown: unknown;
      try {
        for (const l of exportRecords(db, long.length - 1)) made.push(l);
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(RecordTooLongToExportError);
      expect((thrown as RecordTooLongToExportError).seq).toBe(long.seq);
      expect(made).toHaveLength(long.seq - 1);
    } finally {
      db.close();
    }
  });

  it("the default limit is V8's longest string", () => {
    expect(MAX_EXPORT_LINE_BYTES).toBe(536_870_888);
  });
});
