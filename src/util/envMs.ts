/** SQLite keeps a busy timeout, and Node a timer's delay, in a signed 32-bit int. */
const MAX_MS = 2 ** 31 - 1;

/**
 * A duration in ms read from the environment variable `name`: its value when that is a whole
 * number from 1 to 2147483647 written in digits without a leading zero, else (unset, empty, 0,
 * negative, a fraction, `0x10`, `1e3`, `010`, not a number)
 * `fallback`, as the other PORTCULLIS_*_MS variables ignore a value they cannot use. Read when
 * called, not at load, so a process (a test) can set it for what it opens itself.
 */
export function envMs(name: string, fallback: number): number {
  // digits only, without a leading zero: Number() also took `0x10` (16), `1e3`, ` 5 ` and `010`
  // (10, where a reader or a shell's arithmetic may take it for 8), which no flag takes either
  const text = process.env[name] ?? "";
  if (!/^[1-9][0-9]*$/.test(text)) return fallback;
  const ms = Number(text);
  return ms <= MAX_MS ? ms : fallback;
}
