/**
 * The `--for DURATION` of `portcullis unlock` (90s, 10m, 2h, 1h30m; at most 24h), one sentence for
 * every duration refused. Apart from unlock.ts: a parser with its own rules (and its own entry in
 * test/unit/regex-loops.test.ts).
 */
import { leadingZero } from "./args.js";
import { UsageError } from "./errors.js";

const MAX_UNLOCK_MS = 24 * 3600_000;

/** One sentence for every --for it refuses, a malformed one ("0", "ten") or one out of range ("0s", "25h"). */
const BAD_DURATION =
  "unlock: --for takes a duration more than 0 and at most 24h, such as 90s, 10m, 2h or 1h30m.";

export function parseDuration(text: string): number {
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text);
  if (!m || text === "" || (m[1] === undefined && m[2] === undefined && m[3] === undefined))
    throw new UsageError(BAD_DURATION);
  // `010m` was 10 minutes, where a reader (or a tool reading 0-prefixed numbers as octal) may take
  // it for 8: refused as every numeric flag refuses a leading zero (wholeNumber in args.ts)
  if ([m[1], m[2], m[3]].some((n) => n !== undefined && /^0[0-9]/.test(n)))
    throw new UsageError(`unlock: ${leadingZero("--for", "number")}.`);
  const ms = (Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0)) * 1000;
  if (ms <= 0 || ms > MAX_UNLOCK_MS) throw new UsageError(BAD_DURATION);
  return ms;
}
