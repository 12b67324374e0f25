/** SQLite keeps a busy timeout, and Node a timer's delay, in a signed 32-bit int. */
const MAX_MS = 2 ** 31 - 1;

/**
 * A duration in ms read from the environment variable `name`: its value when that is a whole
 * number from 1 to 2147483647, else (unset, empty, 0, negative, a fraction, not a number)
 * `fallback`, as the other PORTCULLIS_*_MS variables ignore a value they cannot use. Read when
 * called, not at load, so a process (a test) can set it for what it opens itself.
 */
export function envMs(name: string, fallback: number): number {
  const ms = Number(process.env[name]);
  return Number.isInteger(ms) && ms >= 1 && ms <= MAX_MS ? ms : fallback;
}
