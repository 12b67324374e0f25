/** A usage or environment problem: one clear sentence on stderr, exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

export const EXIT_OK = 0;
export const EXIT_CHECK_FAILED = 1;
export const EXIT_USAGE = 2;

/**
 * A command group run without its subcommand (`portcullis audit`): its help goes to stdout, and
 * this one sentence to stderr, as for every usage error (exit 2).
 */
export function missingSubcommand(group: string, subcommands: readonly string[]): void {
  process.stderr.write(
    `portcullis${group ? ` ${group}` : ""}: give a ${group ? "subcommand" : "command"}${subcommands.length ? ` (${subcommands.join(", ")})` : ""}; the help above says what each does.\n`,
  );
}
