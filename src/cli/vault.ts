/**
 * `portcullis vault`: the command group of the secrets (`vault set|list|rm`), read as every group
 * reads its subcommand (an option may come first), and each subcommand's failure named by it.
 * Only the dispatch lives here; each subcommand is its own file (vaultSet.ts, vaultList.ts,
 * vaultRm.ts), and `unlock`, `lock` and the holder process theirs (unlock.ts, lock.ts,
 * vaultHolder.ts), so that this file is the narrow face main.ts loads for `vault`.
 */
import { givenSubcommand, subcommandFirst, unknownSubcommand } from "./args.js";
import { EXIT_OK, EXIT_USAGE, missingSubcommand, UsageError } from "./errors.js";
import { guarded } from "./vaultAccess.js";
import { VAULT_HELP } from "./vaultHelp.js";
import { LIST_OPTIONS, vaultList } from "./vaultList.js";
import { RM_OPTIONS, vaultRm } from "./vaultRm.js";
import { SET_OPTIONS, vaultSet } from "./vaultSet.js";

/** The subcommands; each one's options come from its file (all of them may also come before the subcommand). */
const VAULT_SUBCOMMANDS = ["set", "list", "rm"] as const;

/**
 * The subcommand a `vault` line names, read as vaultCommand reads it (an option may come first),
 * from the words main.ts is given, `--state-dir` still among them: a failure met before the
 * subcommand runs (no state directory, a store that cannot be used, `--state-dir` given twice)
 * names it too ("portcullis vault set: …"). Null when none is given or the word is none.
 */
export function vaultSubcommand(args: string[]): string | null {
  const options = {
    ...SET_OPTIONS,
    ...LIST_OPTIONS,
    ...RM_OPTIONS,
    "state-dir": { type: "string" },
  } as const;
  return givenSubcommand(args, options, VAULT_SUBCOMMANDS);
}

export async function vaultCommand(args: string[], ctx: { stateDir: string }): Promise<number> {
  const [sub] = args;
  // an empty word (an unset `$SUB`) is refused as an unknown subcommand below, not taken as none
  if (sub === undefined || sub === "--help" || sub === "-h") {
    process.stdout.write(`${VAULT_HELP}\n`);
    if (!sub) missingSubcommand("vault", VAULT_SUBCOMMANDS);
    return sub ? EXIT_OK : 2;
  }
  // `vault --json list` is `vault list --json`, as in catalog and passkey
  const words = subcommandFirst("vault", args, { ...SET_OPTIONS, ...LIST_OPTIONS, ...RM_OPTIONS });
  if (words === null) {
    process.stdout.write(`${VAULT_HELP}\n`);
    missingSubcommand("vault", VAULT_SUBCOMMANDS);
    return EXIT_USAGE;
  }
  const [word, ...more] = words;
  // a failure names the subcommand it met ("portcullis vault rm: …"), as every command group's do
  const named = (VAULT_SUBCOMMANDS as readonly string[]).includes(word!) ? `vault ${word}` : "vault";
  return guarded(named, async () => {
    switch (word) {
      case "set":
        return vaultSet(more, ctx);
      case "list":
        return vaultList(more, ctx);
      case "rm":
        return vaultRm(more, ctx);
      default:
        throw new UsageError(`${unknownSubcommand("vault", word!, VAULT_SUBCOMMANDS)}.`);
    }
  });
}
