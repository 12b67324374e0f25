/**
 * `portcullis unlock`: the passphrase opens the secrets (and the local CA's key), and a new
 * detached vault holder, replacing any running one, holds them until --for has passed. Apart from
 * `vault`: it starts a process; the holder's own code is vaultHolder.ts, its start
 * holderStart.ts, the --for parsing unlockDuration.ts.
 */
import { busyTimeoutMs } from "../store/db.js";
import { quotedCommand } from "../store/stateDir.js";
import { ensureEgressCa, openEgressCa } from "../vault/egress/ca.js";
import type { CaMaterial } from "../vault/egress/certs.js";
import { askHolder, clearStaleSocket, holderSocketPath, usableSocketPath } from "../vault/holder.js";
import { endHolders, holdersGone } from "../vault/holderProcs.js";
import { type OpenedSecret, openAllSecrets, VaultError } from "../vault/secrets.js";
import { parse, unexpectedArguments } from "./args.js";
import { EXIT_OK, UsageError } from "./errors.js";
import { guardStart, startHolder } from "./holderStart.js";
import { HOLDER_END_MS, sayNotHolders } from "./lock.js";
import { PASSPHRASE_HELP } from "./passphrase.js";
import { onlyForHeaders } from "./secretUses.js";
import { parseDuration } from "./unlockDuration.js";
import { guarded, lockVault, openExisting, unlockWithPassphrase } from "./vaultAccess.js";

/** Each its own short help: the vault's whole help (secrets, delivery) said little about them. */
export const UNLOCK_HELP = `usage: portcullis unlock [--for DURATION] [--state-dir DIR]

Asks for the passphrase, then lets running gateways use the vault's credentials until
DURATION has passed (default 30m; e.g. 90s, 10m, 2h, 1h30m; at most 24h). A detached vault
holder keeps them meanwhile. Replaces a running unlock (two at once take turns).
'portcullis lock' ends it sooner; 'portcullis vault --help' covers storing the secrets.

${PASSPHRASE_HELP}`;

const DEFAULT_UNLOCK_MS = 30 * 60_000;

export async function unlockCommand(args: string[], ctx: { stateDir: string }): Promise<number> {
  const { values, positionals } = parse("unlock", args, {
    for: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  // `unlock 10m` (the --for forgotten) was refused as any stray word, leaving the user to guess
  // that a duration has a flag; the word is still not shown (it may be the passphrase)
  if (positionals.length > 0)
    throw new UsageError(
      `unlock: ${unexpectedArguments(positionals.length)}; a duration is given with --for (portcullis unlock --for 10m), and the passphrase is typed when asked.`,
    );
  if (values.help) {
    process.stdout.write(`${UNLOCK_HELP}\n`);
    return EXIT_OK;
  }
  return guarded("unlock", async () => {
    const ms = values.for === undefined ? DEFAULT_UNLOCK_MS : parseDuration(values.for);
    const db = openExisting(ctx.stateDir);
    try {
      const dataKey = await unlockWithPassphrase(db, ctx.stateDir, "unlock the vault", "unlock");
      // One vault command at a time, from the read of the secrets to the new holder's answer: a
      // vault rm or a rotation finished meanwhile would not be in this holder's copy. Two unlocks
      // at once take turns (the second replaces the first's holder, as if run after it).
      let release: () => void;
      try {
        release = await lockVault("unlock", ctx.stateDir);
      } catch (e) {
        dataKey.fill(0);
        throw e;
      }
      let secrets: Map<string, OpenedSecret>;
      let ca: CaMaterial | null = null;
      try {
        secrets = openAllSecrets(db, dataKey);
        // HTTP delivery intercepts TLS with leaves of the local CA, whose key only the holder holds.
        // None is made for secrets what is found from here (the portcullis.json, the host entries'
        // --header-secret) uses only as remote servers' headers (onlyForHeaders); one made
        // before is handed over all the same.
        if ([...secrets.values()].some((s) => s.deliver === "http")) {
          const headerOnly = onlyForHeaders(ctx.stateDir);
          const forEgress = [...secrets].some(([name, s]) => s.deliver === "http" && !headerOnly(name));
          if (forEgress) await ensureEgressCa(ctx.stateDir, dataKey);
          const opened = openEgressCa(ctx.stateDir, dataKey);
          ca = opened.ca;
          if (!ca && forEgress)
            process.stderr.write(
              `portcullis unlock: ${opened.why}; HTTPS to declared hosts will be tunnelled without releasing credentials.\n`,
            );
        }
      } catch (e) {
        release();
        throw e;
      } finally {
        dataKey.fill(0);
      }
      if (!usableSocketPath(ctx.stateDir)) {
        release();
        ca?.keyPkcs8.fill(0);
        throw new VaultError(
          `the state directory's path is too long for the vault holder's Unix socket (${holderSocketPath(ctx.stateDir)}); use a shorter --state-dir or PORTCULLIS_HOME`,
        );
      }
      // One holder per state directory: a new unlock replaces the running one.
      const guard = guardStart();
      try {
        await askHolder(ctx.stateDir, { op: "lock", by: "unlock" });
        await clearStaleSocket(ctx.stateDir);
        // holders no socket leads to are ended too: after this, the one started now is the only one
        sayNotHolders("unlock", endHolders(ctx.stateDir));
        // each records its end as it goes: the new holder's vault_unlocked comes after
        await holdersGone(ctx.stateDir, busyTimeoutMs() + HOLDER_END_MS);
        const until = new Date(Date.now() + ms);
        const scopes = [...secrets.keys()].sort();
        // the holder records vault_unlocked itself, before it answers anyone
        await startHolder(ctx.stateDir, until, secrets, ca, guard, `portcullis unlock (pid ${process.pid})`);
        process.stdout.write(
          `vault unlocked until ${until.toISOString()} (${scopes.length} secret${scopes.length === 1 ? "" : "s"}); ${quotedCommand("lock", ctx.stateDir)} locks it now\n`,
        );
        // an empty vault unlocked releases nothing: said with the command that fills it, as
        // `vault list` says it (vault set hands a value to the running holder, no unlock again)
        if (scopes.length === 0)
          process.stdout.write(
            `no secret stored; add one with ${quotedCommand("vault set NAME --host HOST", ctx.stateDir)} (or --deliver env): the unlocked vault holds it at once\n`,
          );
        return EXIT_OK;
      } finally {
        guard.end();
        release();
      }
    } finally {
      db.close();
    }
  });
}
