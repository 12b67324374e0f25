import {
  chainFields,
  GENESIS_PREV,
  HEX64,
  parseExportLine,
  recordHash,
  type StoredRecord,
} from "./record.js";

/**
 * Verifying the chain needs no key: every check is over the header text and the
 * sealed bytes. A checkpoint (a record's seq and hash, kept elsewhere) adds what a
 * bare chain cannot show: that nothing after it was cut off or rewritten.
 */

export const CHECKPOINT_FORMAT = "portcullis-audit-checkpoint/1";

export interface Checkpoint {
  format: typeof CHECKPOINT_FORMAT;
  /** Number of records covered; the head record's seq (0 for an empty log). */
  seq: number;
  /** That record's hash (GENESIS_PREV for an empty log). */
  hash: string;
  /** When the checkpoint was made. */
  time: string;
  /** The audit key id the head record was sealed to, when there is one. */
  key?: string;
}

export type VerifyResult =
  | {
      ok: true;
      records: number;
      head: { seq: number; hash: string };
      checkpoint?: { seq: number; hash: string };
    }
  | { ok: false; seq: number; problem: string };

export class CheckpointFormatError extends Error {
  override name = "CheckpointFormatError";
}

/** Parses and checks a checkpoint document (the output of `portcullis audit checkpoint`). */
export function parseCheckpoint(text: string): Checkpoint {
  let c: unknown;
  try {
    c = JSON.parse(text);
  } catch {
    throw new CheckpointFormatError("the checkpoint is not JSON");
  }
  if (typeof c !== "object" || c === null || Array.isArray(c))
    throw new CheckpointFormatError("the checkpoint is not a JSON object");
  const twice = keyWrittenTwice(text);
  if (twice !== null)
    throw new CheckpointFormatError(
      `the checkpoint has ${CHECKPOINT_KEYS.has(twice) ? `the key "${twice}"` : "a key"} twice; a reader could take either, so it is not used`,
    );
  const { format, seq, hash, time, key } = c as Record<string, unknown>;
  if (format !== CHECKPOINT_FORMAT)
    throw new CheckpointFormatError(`the checkpoint format is not ${CHECKPOINT_FORMAT}`);
  if (!Number.isSafeInteger(seq) || (seq as number) < 0)
    throw new CheckpointFormatError("the checkpoint seq is not a count");
  if (typeof hash !== "string" || !HEX64.test(hash))
    throw new CheckpointFormatError("the checkpoint hash is not hex SHA-256");
  if (typeof time !== "string") throw new CheckpointFormatError("the checkpoint time is missing");
  if (key !== undefined && typeof key !== "string")
    throw new CheckpointFormatError("the checkpoint key is not a string");
  return c as Checkpoint;
}

/** The checkpoint's own keys, the only ones said back by name (another is text from the file). */
const CHECKPOINT_KEYS: ReadonlySet<string> = new Set(["format", "seq", "hash", "time", "key"]);

/**
 * The first key written twice among a JSON object's own members (`text` parsed already). JSON.parse
 * keeps the last and drops the first without a word, while other readers (a person, another
 * language's parser) may take the first: a checkpoint saying `"seq":5` and then `"seq":9` would be
 * one checkpoint to this verifier and another to them. A plain scan of the tokens: strings are
 * skipped whole, depth is counted, and only the keys of the outer object are compared.
 */
function keyWrittenTwice(text: string): string | null {
  const seen = new Set<string>();
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "{" || c === "[") {
      depth++;
      expectKey = depth === 1 && c === "{";
    } else if (c === "}" || c === "]") depth--;
    else if (c === "," && depth === 1) expectKey = true;
    else if (c === ":" && depth === 1) expectKey = false;
    else if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      if (depth === 1 && expectKey) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (seen.has(key)) return key;
        seen.add(key);
      }
      i = end;
    }
  }
  return null;
}

/** Checks records one by one, in order; the first problem ends the check. */
export class ChainVerifier {
  private count = 0;
  private prev = GENESIS_PREV;
  private failure: { ok: false; seq: number; problem: string } | null = null;
  /** A sequence gap whose kind the next record tells: a record missing, or records out of order. */
  private gap: { expected: number; found: number } | null = null;

  constructor(private readonly checkpoint?: Checkpoint) {
    if (checkpoint?.seq === 0 && checkpoint.hash !== GENESIS_PREV) {
      this.fail(0, "the checkpoint of an empty log does not hold the genesis value");
    }
  }

  /** Records verified so far: the seq of the last one. */
  get records(): number {
    return this.count;
  }

  /**
   * The next record; returns false once a problem was found. `claimedHash` is the
   * hash an export line states for the record, checked too when given.
   */
  push(record: StoredRecord, claimedHash?: string): boolean {
    if (this.failure) {
      if (this.gap) this.settleGap(chainFields(record)?.seqValue ?? null);
      return false;
    }
    const expected = this.count + 1;
    const h = chainFields(record);
    if (!h) return this.fail(expected, "the header is not a canonical v1 header");
    const seq = h.seqValue;
    if (seq > expected) {
      this.gap = { expected, found: seq };
      return this.fail(
        expected,
        `sequence mismatch: found seq ${seq} where seq ${expected} was expected (record ${expected} is missing, or the records are out of order)`,
      );
    }
    if (seq < expected)
      return this.fail(
        expected,
        `found seq ${seq} where seq ${expected} was expected (repeated or reordered record)`,
      );
    if (!holdsAt(record, h.prev, this.prev)) {
      return this.fail(
        expected,
        expected === 1
          ? "the first record does not start from the genesis value"
          : `prev does not match the hash of record ${expected - 1} (a record was inserted, removed or altered before this link)`,
      );
    }
    const digest = recordHash(record);
    if (claimedHash !== undefined && claimedHash !== digest) {
      return this.fail(expected, "the record does not match its stated hash (modified record)");
    }
    if (this.checkpoint && expected === this.checkpoint.seq && digest !== this.checkpoint.hash) {
      return this.fail(expected, `record ${expected} differs from the checkpoint (the log was rewritten)`);
    }
    this.count = expected;
    this.prev = digest;
    return true;
  }

  /**
   * The SHA-256 (hex) of the record last pushed, when that push verified it (returned true): the
   * Audit page reuses it rather than hashing the record again.
   */
  get lastHash(): string {
    return this.prev;
  }

  /**
   * After a sequence gap, whether the verifier wants the next record too: a seq that comes too
   * early is either a record missing or records out of order, and only what follows tells which.
   * It is only looked at, never counted as verified.
   */
  get wantsNext(): boolean {
    return this.gap !== null;
  }

  /** A line of an export that could not be read as a record. */
  pushUnreadable(problem: string): boolean {
    if (this.gap) {
      this.gap = null; // what follows is unreadable: the gap stays a plain mismatch
      return false;
    }
    return this.fail(this.count + 1, problem);
  }

  /** Names the gap once the record after it is known (null: there is none). */
  private settleGap(next: number | null): void {
    const gap = this.gap!;
    this.gap = null;
    const { expected, found } = gap;
    let problem: string | null = null;
    if (next === expected) problem = `records out of order: seq ${found} comes before seq ${expected}`;
    else if (next === null) problem = `record ${expected} is missing (the last record is seq ${found})`;
    else if (next === found + 1) problem = `record ${expected} is missing (the next record is seq ${found})`;
    if (problem && this.failure) this.failure = { ...this.failure, problem };
  }

  result(): VerifyResult {
    if (this.gap) this.settleGap(null);
    if (this.failure) return this.failure;
    const cp = this.checkpoint;
    if (cp && this.count < cp.seq) {
      const problem = `the log ends at seq ${this.count} but the checkpoint covers seq ${cp.seq} (records were cut off)`;
      return { ok: false, seq: this.count + 1, problem };
    }
    const head = { seq: this.count, hash: this.prev };
    return cp
      ? { ok: true, records: this.count, head, checkpoint: { seq: cp.seq, hash: cp.hash } }
      : { ok: true, records: this.count, head };
  }

  private fail(seq: number, problem: string): false {
    this.failure ??= { ok: false, seq, problem };
    return false;
  }
}

/** Whether bytes[at…] spell the ASCII string `s` (compared in place: no string is made). */
function holdsAt(bytes: Uint8Array, at: number, s: string): boolean {
  for (let i = 0; i < s.length; i++) if (bytes[at + i] !== s.charCodeAt(i)) return false;
  return true;
}

/** Verifies records in order: seq 1, 2, 3 … with no gap, each linked to the one before. */
export function verifyChain(
  records: Iterable<StoredRecord>,
  opts: { checkpoint?: Checkpoint } = {},
): VerifyResult {
  const v = new ChainVerifier(opts.checkpoint);
  for (const r of records) if (!v.push(r) && !v.wantsNext) break;
  return v.result();
}

/** Verifies an export, one JSONL line per record (a final empty line is allowed). */
export function verifyExport(
  lines: Iterable<string>,
  opts: { checkpoint?: Checkpoint; progress?: (records: number) => void } = {},
): VerifyResult {
  const v = new ChainVerifier(opts.checkpoint);
  let n = 0;
  let bytes = 0; // since progress was last told
  let blank = false;
  for (const line of lines) {
    if (blank) {
      v.pushUnreadable("an empty line in the middle of the export");
      break;
    }
    if (line === "") {
      blank = true;
      continue;
    }
    const r = parseExportLine(line);
    if (!(typeof r === "string" ? v.pushUnreadable(r) : v.push(r.record, r.hash)) && !v.wantsNext) break;
    // every 1,024 records, and every 64 MiB: an export of large records (clear arguments) shows
    // its progress too
    bytes += line.length;
    if ((++n & 1023) === 0 || bytes >= PROGRESS_BYTES) {
      opts.progress?.(v.records);
      bytes = 0;
    }
  }
  return v.result();
}

const PROGRESS_BYTES = 64 << 20;
