/** SQLite keeps a busy timeout, and Node a timer's delay, in a signed 32-bit int. */
const MAX_MS = 2 ** 31 - 1;

/**
 * The value of the environment variable `name` when it is a whole number from `min` to `max`
 * written in digits without a leading zero (`0` alone is zero), else undefined: unset, empty,
 * negative, a fraction, `0x10`, `1e3`, ` 5`, `010`, `3abc`, not a number. Every PORTCULLIS_*
 * number is read here, as every flag reads one. Read when called, not at load, so a process (a
 * test) can set it for what it opens itself.
 */
export function envWholeNumber(name: string, min: number, max: number): number | undefined {
  // digits only, without a leading zero: Number() also took `0x10` (16), `1e3`, ` 5 ` and `010`
  // (10, where a reader or a shell's arithmetic may take it for 8), and parseInt `3abc` (3),
  // which no flag takes either
  const text = process.env[name] ?? "";
  if (!/^(0|[1-9][0-9]*)$/.test(text)) return undefined;
  const n = Number(text);
  return n >= min && n <= max ? n : undefined;
}

/**
 * A duration in ms read from the environment variable `name`: its value when that is a whole
 * number from 1 to 2147483647 written in digits without a leading zero (envWholeNumber), else
 * `fallback`, as the other PORTCULLIS_*_MS variables ignore a value they cannot use.
 */
export function envMs(name: string, fallback: number): number {
  return envWholeNumber(name, 1, MAX_MS) ?? fallback;
}
