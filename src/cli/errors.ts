/** A usage or environment problem: one clear sentence on stderr, exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

export const EXIT_OK = 0;
export const EXIT_CHECK_FAILED = 1;
export const EXIT_USAGE = 2;
