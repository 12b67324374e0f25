/**
 * `portcullis vault rm`: a secret removed, the running holder told to forget it first (and even
 * when the store no longer lists it), under the vault lock. Apart from the other subcommands: its
 * order of writes is its own.
 */
import { askHolder } from "../vault/holder.js";
import { checkSecretName, removeSecret, secretNames } from "../vault/secrets.js";
import { parse } from "./args.js";
import { EXIT_OK, EXIT_USAGE, UsageError } from "./errors.js";
import { NOT_REPEATED, namesHere } from "./unnamed.js";
import { lockVault, openExisting, unlockWithPassphrase } from "./vaultAccess.js";
import { VAULT_HELP } from "./vaultHelp.js";

export const RM_OPTIONS = { help: { type: "boolean", short: "h" } } as const;

export async function vaultRm(args: string[], ctx: { stateDir: string }): Promise<number> {
  const { values, positionals } = parse("vault rm", args, RM_OPTIONS);
  if (values.help) {
    process.stdout.write(`${VAULT_HELP}\n`);
    return EXIT_OK;
  }
  if (positionals.length > 1)
    throw new UsageError(
      `vault rm: takes one secret NAME (${positionals.length} words were given, not shown).`,
    );
  if (positionals.length !== 1) throw new UsageError("vault rm: give one secret NAME.");
  const name = checkSecretName(positionals[0]!);
  const stateDir = ctx.stateDir;
  const db = openExisting(stateDir);
  // A name that names nothing is the input to fix (exit 2), as `passkey rm`, `revoke` and every
  // other command say it; exit 1 is a check that failed (README, "Commands").
  const noSuchSecret = () => {
    const stored = namesHere("stored", [...secretNames(db)].sort(), "none is stored");
    process.stderr.write(
      `portcullis vault rm: there is no secret by that name (${NOT_REPEATED}); ${stored}.\n`,
    );
    return EXIT_USAGE;
  };
  try {
    // Names are stored in clear (vault list shows them without the passphrase): a name that is
    // not there is said before the passphrase is typed for nothing. Removing still needs it. A
    // running holder is told to forget it all the same (taking authority away needs no
    // passphrase; `lock` needs none): an rm of another version, killed between the store and
    // the holder, left one releasing what the vault no longer lists.
    if (!secretNames(db).has(name)) {
      const release = await lockVault("vault rm", stateDir);
      try {
        await askHolder(stateDir, { op: "forget", scope: name });
      } finally {
        release();
      }
      return noSuchSecret();
    }
    const dataKey = await unlockWithPassphrase(db, stateDir, `remove the secret ${name}`, "vault rm");
    dataKey.fill(0);
    // One vault command at a time (takeVaultLock): a vault set between this forget and the
    // store's removal would hand the holder what the store no longer has.
    const release = await lockVault("vault rm", stateDir);
    try {
      // The holder first, then the store: killed between the two, the vault still lists a
      // secret the holder no longer releases (calls needing it are refused; rm again finishes),
      // never the other way round (a secret released that no list shows).
      await askHolder(stateDir, { op: "forget", scope: name });
      // (removed by another process while the passphrase was typed)
      if (!removeSecret(db, name)) return noSuchSecret();
    } finally {
      release();
    }
    process.stdout.write(`secret ${name} removed\n`);
    return EXIT_OK;
  } finally {
    db.close();
  }
}
