/**
 * `portcullis lock`: credentials stop at once, in every gateway. It asks the holder to lock, ends
 * every holder process the state directory's files name (only portcullis's own), and waits for
 * their records. `unlock` replaces a running holder the same way, and shares sayNotHolders and
 * HOLDER_END_MS from here.
 */
import { safeText } from "../catalog/text.js";
import { busyTimeoutMs } from "../store/db.js";
import { requireInitialized } from "../store/stateDir.js";
import { askHolder, clearStaleSocket, holderStatus } from "../vault/holder.js";
import { type EndedHolders, endHolders, holdersGone, notHolderNotice } from "../vault/holderProcs.js";
import { parse } from "./args.js";
import { EXIT_OK } from "./errors.js";

export const LOCK_HELP = `usage: portcullis lock [--state-dir DIR]

Credentials stop at once, in every gateway of the state directory: their next call that
needs one is refused vault_locked. Locking only takes authority away, so it does not ask
for the passphrase. 'portcullis unlock' lets them use credentials again.

It ends each vault holder process the state directory's vault-holder-PID.pid files
name, only when it is, by its command line, portcullis's own holder started then; a
file naming any other process is said on stderr, kept, and that process left alone.`;

export async function lockCommand(args: string[], ctx: { stateDir: string }): Promise<number> {
  if (parse("lock", args, { help: { type: "boolean", short: "h" } }, false).values.help) {
    process.stdout.write(`${LOCK_HELP}\n`);
    return EXIT_OK;
  }
  // Locking only removes authority: no passphrase.
  const before = await holderStatus(ctx.stateDir);
  // a holder that became ready between the two questions was unlocked too: its answer says so
  const answered = (await askHolder(ctx.stateDir, { op: "lock", by: "lock" }))?.ok === true;
  const was = { unlocked: before.unlocked || answered };
  await clearStaleSocket(ctx.stateDir);
  // Holders no socket leads to (one still starting, one whose unlock was interrupted) hold the
  // secrets too: ended by the files `unlock` keeps of them.
  const found = endHolders(ctx.stateDir);
  sayNotHolders("lock", found);
  const unreachable = found.ended;
  // Each holder records its own vault_locked as it ends (this command killed now leaves the chain
  // saying so all the same); waited for, so that the record is there once this says "locked".
  // What they held is wiped before they write it.
  await holdersGone(ctx.stateDir, busyTimeoutMs() + HOLDER_END_MS);
  // A directory init never set up, with no holder of it found: not a vault that "was already
  // locked" (`--state-dir ~` for the real one, whose vault stays unlocked) but a mistaken
  // directory, refused as status and the other commands refuse it. Only after the lock above, so
  // a holder whose keyring and store were deleted under it is still ended.
  if (!was.unlocked && unreachable === 0) requireInitialized(ctx.stateDir);
  process.stdout.write(
    was.unlocked
      ? "vault locked\n"
      : unreachable > 0
        ? `vault locked: ended ${unreachable} vault holder process${unreachable === 1 ? "" : "es"} that no gateway could reach\n`
        : "the vault was already locked\n",
  );
  return EXIT_OK;
}

/**
 * Says, on stderr, each holder file that names a live process that is not a portcullis vault
 * holder: left alone, so the human knows a file they did not expect names it (written by another
 * process of theirs, or a holder caught before it started running its command).
 */
export function sayNotHolders(command: string, found: EndedHolders): void {
  for (const named of found.notHolders)
    process.stderr.write(`portcullis ${command}: ${safeText(notHolderNotice(named))}\n`);
}

/** A holder's end once asked to lock, besides its record's wait for the store. */
export const HOLDER_END_MS = 5_000;
