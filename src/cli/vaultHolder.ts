/**
 * The detached vault holder process (`portcullis __vault-holder`), the holder's side of what
 * holderStart.ts starts: it reads the secrets `unlock` hands it, serves them (src/vault/holder.ts)
 * until --until or a lock, and writes its own vault_unlocked and vault_locked records. Apart from
 * unlock.ts: it runs in another process, for the holder's whole life.
 */
import type { AuditEvent } from "../audit/events.js";
import { AuditLog } from "../audit/log.js";
import { openStore } from "../store/db.js";
import {
  HolderListenError,
  holderSocketPath,
  type LockedBy,
  runHolder,
  type StopReason,
} from "../vault/holder.js";
import { forgetHolder } from "../vault/holderProcs.js";
import type { OpenedSecret } from "../vault/secrets.js";
import { EXIT_OK, UsageError } from "./errors.js";

/**
 * The detached holder process (`portcullis __vault-holder`): secrets arrive on stdin as JSON. Its
 * first line on stdout tells the unlock that started it how the start went: `ready`, or
 * `failed: SENTENCE` (then it exits 2 at once, holding nothing).
 */
export async function holderProcess(args: string[], ctx: { stateDir: string }): Promise<number> {
  // `unlock` recorded this process so that `lock` can end it; the record goes with it
  process.once("exit", () => forgetHolder(ctx.stateDir, process.pid));
  const until = new Date(args[args.indexOf("--until") + 1] ?? "");
  if (Number.isNaN(until.getTime())) throw new UsageError("__vault-holder: --until needs an ISO time.");
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks);
  const payload = holderPayload(raw);
  raw.fill(0);
  for (const c of chunks) c.fill(0);
  if (payload === null) {
    // run by hand, or fed something else than what `unlock` writes: said without quoting any of
    // it (it may hold secrets), and nothing is held
    process.stdout.write(
      "failed: the vault holder is started by 'portcullis unlock', which hands it the opened secrets; what it read is not that\n",
    );
    return 2;
  }
  if (until.getTime() <= Date.now()) {
    process.stdout.write("failed: --until is already past\n");
    return 2;
  }
  const secrets = new Map(Object.entries(payload.secrets));
  const scopes = [...secrets.keys()].sort();
  const by = typeof payload.by === "string" ? payload.by : "portcullis unlock";
  const ca = payload.ca
    ? { certPem: payload.ca.cert, keyPkcs8: Buffer.from(payload.ca.key, "base64") }
    : null;
  let resolveDone: (code: number) => void = () => {};
  const done = new Promise<number>((r) => {
    resolveDone = r;
  });
  let holder: Awaited<ReturnType<typeof runHolder>>;
  // The holder, not its unlock, writes both records: it alone knows when it serves and when it
  // stops. An unlock killed once the holder runs (after `ready`, or while its record waited for
  // the store) would otherwise leave a vault unlocked with nothing in the chain saying so, and a
  // `lock` killed after the holder locked, the chain saying it still was.
  /** vault_unlocked is recorded: from then on the holder's end is recorded too */
  let recorded = false;
  try {
    holder = await runHolder({
      socketPath: holderSocketPath(ctx.stateDir),
      until,
      secrets,
      ca,
      beforeServing: () => {
        try {
          appendVaultRecord(ctx.stateDir, { type: "vault_unlocked", until: until.toISOString(), scopes, by });
        } catch (e) {
          throw new UnrecordedUnlock((e as Error).message);
        }
        recorded = true;
      },
      onStop: (reason, lockedBy) => {
        if (recorded) recordLocked(ctx.stateDir, lockReason(reason, lockedBy));
        resolveDone(EXIT_OK);
      },
    });
  } catch (e) {
    // runHolder wiped what it was given; the unlock reports the sentence
    if (e instanceof HolderListenError) process.stdout.write(`failed: ${e.message}\n`);
    else if (e instanceof UnrecordedUnlock)
      process.stdout.write(
        `failed: the vault was not unlocked: its record could not be written to the audit log (${e.message.replaceAll("\n", " ")})\n`,
      );
    else throw e;
    return 2;
  }
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.once(sig, () => holder.stop("signal"));
  // An unlock that went away before reading this told its user nothing was unlocked: so be it
  // (the chain says it was unlocked, then locked, `unreachable`).
  process.stdout.on("error", () => holder.stop("unreachable"));
  process.stdout.write("ready\n", (err) => {
    if (err) holder.stop("unreachable");
  });
  return done;
}

/** What `unlock` hands its holder, or null when `raw` is not that (never quoted: it holds secrets). */
function holderPayload(raw: Buffer): {
  secrets: Record<string, OpenedSecret>;
  ca: { cert: string; key: string } | null;
  by?: unknown;
} | null {
  let p: unknown;
  try {
    p = JSON.parse(raw.toString("utf8"));
  } catch {
    return null;
  }
  if (typeof p !== "object" || p === null) return null;
  const { secrets, ca } = p as { secrets?: unknown; ca?: unknown };
  if (typeof secrets !== "object" || secrets === null || Array.isArray(secrets)) return null;
  for (const v of Object.values(secrets)) {
    const s = v as Partial<OpenedSecret> | null;
    if (typeof s !== "object" || s === null || typeof s.value !== "string") return null;
    if ((s.deliver !== "env" && s.deliver !== "http") || !Array.isArray(s.hosts)) return null;
    if (s.hosts.some((h) => typeof h !== "string")) return null;
  }
  if (ca !== null) {
    const c = ca as { cert?: unknown; key?: unknown } | undefined;
    if (typeof c !== "object" || typeof c.cert !== "string" || typeof c.key !== "string") return null;
  }
  return p as { secrets: Record<string, OpenedSecret>; ca: { cert: string; key: string } | null };
}

/** The holder's vault_unlocked record could not be written: it serves nobody. */
class UnrecordedUnlock extends Error {}

/** The `reason` of a holder's vault_locked record. */
function lockReason(reason: StopReason, by: LockedBy | undefined): string {
  if (reason !== "locked") return reason;
  return by === "unlock" ? "replaced by a new portcullis unlock" : "portcullis lock";
}

function appendVaultRecord(stateDir: string, event: AuditEvent): void {
  const db = openStore(stateDir);
  try {
    AuditLog.open(db, stateDir).append(event);
  } finally {
    db.close();
  }
}

function recordLocked(stateDir: string, reason: string): void {
  try {
    appendVaultRecord(stateDir, { type: "vault_locked", reason });
  } catch {
    /* the lock itself happened (what the holder held is wiped); the record is best effort here */
  }
}
