import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { recordLateChange } from "../approval/lateWrapping.js";
import type { AuditEvent } from "../audit/events.js";
import { AuditLog } from "../audit/log.js";
import { quotedName, safeText } from "../catalog/text.js";
import { ConfigError, findConfig, loadConfigFile, type ServerConfig } from "../config/config.js";
import { KeyringError, KeyringMissingError, keyringExists, unlockKeyring } from "../keyring/keyring.js";
import { type HostHeaderSecretUse, hostHeaderSecretUses } from "../onboard/hostHeaderSecrets.js";
import { busyTimeoutMs, openStore, openStoreToRead, type Store } from "../store/db.js";
import { quotedCommand, requireInitialized } from "../store/stateDir.js";
import { printableJson } from "../util/printableJson.js";
import type { CredentialSpec } from "../vault/credentials.js";
import { type CredentialPlace, credentialPlaceOf, deliveryMismatch } from "../vault/deliveryMismatch.js";
import { caCertPath as caCertPathOf, ensureEgressCa, openEgressCa } from "../vault/egress/ca.js";
import type { CaMaterial } from "../vault/egress/certs.js";
import { declaredHost, repeatedHost } from "../vault/egress/hosts.js";
import {
  askHolder,
  clearStaleSocket,
  HolderListenError,
  holderSocketPath,
  holderStatus,
  type LockedBy,
  runHolder,
  type StopReason,
  usableSocketPath,
} from "../vault/holder.js";
import {
  type EndedHolders,
  endHolders,
  forgetHolder,
  HOLDER_COMMAND,
  holdersGone,
  notHolderNotice,
  recordHolder,
  takeVaultLock,
} from "../vault/holderProcs.js";
import { resealVault } from "../vault/reseal.js";
import {
  checkSecretName,
  checkSecretValue,
  listSecrets,
  MAX_VALUE_BYTES,
  type OpenedSecret,
  openAllSecrets,
  putSecret,
  removeSecret,
  type SecretPolicy,
  secretNames,
  VaultError,
} from "../vault/secrets.js";
import { givenSubcommand, leadingZero, oneOf, parse, subcommandFirst, unknownSubcommand } from "./args.js";
import { EXIT_CHECK_FAILED, EXIT_OK, EXIT_USAGE, missingSubcommand, UsageError } from "./errors.js";
import { headerHostMismatch } from "./headerSecrets.js";
import { keyringEnding } from "./keyringAdvice.js";
import { PASSPHRASE_HELP, PassphraseError, readHiddenLine, readPassphrase } from "./passphrase.js";
import { sayReadWithoutWriting } from "./readWithoutWriting.js";
import { NOT_REPEATED, namesHere } from "./unnamed.js";

export const VAULT_HELP = `usage:
  portcullis vault set NAME [--from-stdin] --host HOST[:PORT]...
  portcullis vault set NAME [--from-stdin] --deliver env
                                             store or rotate a secret (asks for the passphrase):
                                             for HTTP delivery to those hosts (--deliver http,
                                             the default; each host once, compared by value),
                                             or for the environment
  portcullis vault list [--json]             names, sizes, created and rotated times, who uses them;
                                             unlocked, whether the running holder holds each
  portcullis vault rm NAME                   remove a secret (asks for the passphrase)
  portcullis unlock [--for DURATION]         running gateways may use credentials until then
                                             (default 30m; e.g. 90s, 10m, 2h, 1h30m; at most 24h);
                                             replaces a running unlock (two at once take turns)
  portcullis lock                            credentials stop at once, in every gateway

NAME is the credential scope that portcullis.json's "credentials" (or a "url" server's
"headers") name, and that grants,
reviews and the audit log show. The value is typed on the terminal with echo off (UTF-8 text: a
terminal sending other bytes is refused), or read from standard input with --from-stdin (UTF-8
text; one trailing newline is dropped); never from an argument. Values are sealed under the keyring's data key in the store.

How a secret may be handed out is decided here, with the passphrase, not by portcullis.json
(which an agent can edit): --deliver http (the default) keeps the value inside portcullis and
sends it only to the --host destinations; --deliver env lets a server receive it in its
environment at spawn, where it holds it for its life. The delivery must match portcullis.json:
a credential given as a plain name ("ENV": "NAME") is delivered in the environment and needs
--deliver env; the object form ({"secret": "NAME", "hosts": [...]}) is delivered over HTTP and
needs --host, and so does a header of a server reached by "url" ({"secret": "NAME", "format":
"Bearer {}"} in its "headers"): --host with its URL's host, and its port unless 443 or 80
('portcullis vault list' warns of a mismatch, and 'run' refuses to start with one).
The first HTTP-delivered secret creates
the state directory's local CA (egress-ca.pem; its key is sealed like the secrets), which the
servers' egress proxy uses to read HTTPS to the declared hosts.

Every one of these takes --state-dir DIR (default: $PORTCULLIS_HOME, else
$XDG_STATE_HOME/portcullis, else ~/.local/state/portcullis): the state directory whose vault it acts on.
An option may come before the subcommand: 'vault --json list' is 'vault list --json'.

${PASSPHRASE_HELP}`;

/** Each its own short help: the vault's whole help (secrets, delivery) said little about them. */
export const UNLOCK_HELP = `usage: portcullis unlock [--for DURATION] [--state-dir DIR]

Asks for the passphrase, then lets running gateways use the vault's credentials until
DURATION has passed (default 30m; e.g. 90s, 10m, 2h, 1h30m; at most 24h). A detached vault
holder keeps them meanwhile. Replaces a running unlock (two at once take turns).
'portcullis lock' ends it sooner; 'portcullis vault --help' covers storing the secrets.

${PASSPHRASE_HELP}`;

export const LOCK_HELP = `usage: portcullis lock [--state-dir DIR]

Credentials stop at once, in every gateway of the state directory: their next call that
needs one is refused vault_locked. Locking only takes authority away, so it does not ask
for the passphrase. 'portcullis unlock' lets them use credentials again.

It ends each vault holder process the state directory's vault-holder-PID.pid files
name, only when it is, by its command line, portcullis's own holder started then; a
file naming any other process is said on stderr, kept, and that process left alone.`;

const DEFAULT_UNLOCK_MS = 30 * 60_000;
const MAX_UNLOCK_MS = 24 * 3600_000;

/** The subcommands, and each one's options (all of them may also come before the subcommand). */
const VAULT_SUBCOMMANDS = ["set", "list", "rm"] as const;
const SET_OPTIONS = {
  "from-stdin": { type: "boolean" },
  deliver: { type: "string" },
  host: { type: "string", multiple: true },
  help: { type: "boolean", short: "h" },
} as const;
const LIST_OPTIONS = { json: { type: "boolean" }, help: { type: "boolean", short: "h" } } as const;
const RM_OPTIONS = { help: { type: "boolean", short: "h" } } as const;

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

export async function unlockCommand(args: string[], ctx: { stateDir: string }): Promise<number> {
  const { values } = parse(
    "unlock",
    args,
    { for: { type: "string" }, help: { type: "boolean", short: "h" } },
    false,
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
function sayNotHolders(command: string, found: EndedHolders): void {
  for (const named of found.notHolders)
    process.stderr.write(`portcullis ${command}: ${safeText(notHolderNotice(named))}\n`);
}

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

/** The vault lock (takeVaultLock), saying once on stderr that it waits for another command. */
function lockVault(command: string, stateDir: string): Promise<() => void> {
  return takeVaultLock(stateDir, (pid) =>
    process.stderr.write(`portcullis ${command}: waiting for another vault command (pid ${pid}) to finish\n`),
  );
}

/** A holder's start, besides its record's wait for the store. */
const HOLDER_START_MS = 10_000;
/** A holder's end once asked to lock, besides its record's wait for the store. */
const HOLDER_END_MS = 5_000;

const SIGNAL_EXIT: Record<string, number> = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 };

/** What an unlock under way must end if it is itself ended: the holder it started, until it is ready. */
interface StartGuard {
  pending: ChildProcess | null;
  end(): void;
}

/**
 * From here until `end`, this command's own signals (Ctrl-C) and its exit kill the holder it is
 * starting: the holder is detached (its own process group, so it can outlive the terminal) and
 * would otherwise live on with the secrets, unreachable, until --for ran out.
 */
function guardStart(): StartGuard {
  const abandon = () => {
    guard.pending?.kill("SIGTERM");
    guard.pending = null;
  };
  const onSignal = (sig: NodeJS.Signals) => {
    abandon();
    // the exit listeners run: the unlock lock is released
    process.exit(SIGNAL_EXIT[sig] ?? 1);
  };
  const signals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
  const guard: StartGuard = {
    pending: null,
    end: () => {
      abandon();
      for (const sig of signals) process.off(sig, onSignal);
      process.off("exit", abandon);
    },
  };
  for (const sig of signals) process.on(sig, onSignal);
  process.on("exit", abandon);
  return guard;
}

/**
 * Starts the detached holder and hands it the secrets; resolves once it says it is ready. A
 * holder that cannot listen says so, having wiped what it got, and exits; one that does not
 * answer within 10 s is killed.
 */
function startHolder(
  stateDir: string,
  until: Date,
  secrets: Map<string, OpenedSecret>,
  ca: CaMaterial | null,
  guard: StartGuard,
  by: string,
): Promise<void> {
  const main = fileURLToPath(new URL("./main.cjs", import.meta.url));
  const child = spawn(
    process.execPath,
    [main, HOLDER_COMMAND, "--state-dir", stateDir, "--until", until.toISOString()],
    { detached: true, stdio: ["pipe", "pipe", "ignore"] },
  );
  guard.pending = child;
  const payload = Buffer.from(
    JSON.stringify({
      secrets: Object.fromEntries(secrets),
      ca: ca ? { cert: ca.certPem, key: ca.keyPkcs8.toString("base64") } : null,
      by,
    }),
    "utf8",
  );
  secrets.clear();
  ca?.keyPkcs8.fill(0);
  try {
    // before it gets anything: whatever becomes of this command, `lock` can find it
    if (child.pid !== undefined) recordHolder(stateDir, child.pid);
  } catch (e) {
    payload.fill(0);
    return Promise.reject(e);
  }
  child.stdin.on("error", () => {}); // a holder that died at once: its exit says so
  child.stdin.end(payload, () => payload.fill(0));
  return new Promise<void>((resolve, reject) => {
    let line = "";
    const fail = (message: string) => {
      clearTimeout(timer);
      child.stdout.destroy();
      reject(new VaultError(message));
    };
    // (its vault_unlocked record may wait for another program's lock on the store)
    const startMs = busyTimeoutMs() + HOLDER_START_MS;
    const timer = setTimeout(
      () => fail(`the vault holder did not start within ${Math.round(startMs / 1000)} s`),
      startMs,
    );
    child.on("error", (e) => fail(`the vault holder could not be started (${e.message})`));
    child.once("exit", (code, signal) =>
      fail(`the vault holder exited at start (${signal ? `ended by ${signal}` : `code ${code}`})`),
    );
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => {
      line += chunk;
      const nl = line.indexOf("\n");
      if (nl < 0) return;
      const first = line.slice(0, nl);
      if (first !== "ready") {
        fail(
          first.startsWith("failed: ") ? first.slice("failed: ".length) : "the vault holder did not start",
        );
        return;
      }
      // from now on the holder outlives this command
      guard.pending = null;
      clearTimeout(timer);
      child.stdout.destroy();
      child.removeAllListeners("exit");
      child.unref();
      resolve();
    });
  });
}

/**
 * The subcommands read the state directory (resolved when first read: main.ts) only once their
 * flags are read, so that a mistyped flag is said before a missing state directory is.
 */
async function vaultSet(args: string[], ctx: { stateDir: string }): Promise<number> {
  const { values, positionals: names } = parse("vault set", args, SET_OPTIONS);
  if (values.help) {
    process.stdout.write(`${VAULT_HELP}\n`);
    return EXIT_OK;
  }
  const fromStdin = values["from-stdin"] === true;
  const policy: SecretPolicy = {
    deliver: oneOf("vault set", "deliver", values.deliver, ["http", "env"] as const) ?? "http",
    hosts: (values.host ?? []).map(checkHost),
  };
  // by position, as checkHost says a host it refuses: the word may be the secret in the wrong place
  const twice = repeatedHost(policy.hosts);
  if (twice)
    throw new UsageError(
      `vault set: --host number ${twice.at + 1} is the same host as number ${twice.first + 1} (hosts are compared by value, as requests are: letter case, a trailing dot and how an address is written make no difference); give each host once.`,
    );
  // two words or more: said as such (not "give one", which reads as if none was given), and
  // neither repeated: the second may be the value, typed where it never belongs
  if (names.length > 1)
    throw new UsageError(
      `vault set: takes one secret NAME (${names.length} words were given, not shown); the value is never an argument: it is typed when asked, or read with --from-stdin.`,
    );
  if (names.length !== 1) throw new UsageError("vault set: give one secret NAME.");
  if (policy.deliver === "env" && policy.hosts.length > 0)
    throw new UsageError(
      "vault set: --host is for --deliver http (an env-delivered secret goes wherever the server sends it).",
    );
  if (policy.deliver === "http" && policy.hosts.length === 0)
    throw new UsageError(
      "vault set: a secret delivered over HTTP needs at least one --host HOST[:PORT] it may be sent to (or --deliver env).",
    );
  const name = checkSecretName(names[0]!);
  const stateDir = ctx.stateDir;
  const db = openExisting(stateDir);
  try {
    const dataKey = await unlockWithPassphrase(db, stateDir, `store the secret ${name}`, "vault set");
    try {
      const value = checkSecretValue(fromStdin ? await readStdinValue() : await typedValue(name));
      // An environment variable cannot hold a NUL byte: spawn() would throw at every start of
      // the server, with the value itself in its message.
      if (policy.deliver === "env" && value.includes("\0"))
        throw new VaultError(
          "the value holds a NUL byte, which no environment variable can carry; nothing was stored",
        );
      // One vault command at a time, from the store to the holder's answer (takeVaultLock): a
      // vault rm between the two would be undone in the holder by this put, two rotations would
      // leave the store and the holder each with another value, two first HTTP secrets two CAs.
      const release = await lockVault("vault set", stateDir);
      try {
        return await storeAndHand(db, stateDir, dataKey, name, policy, value);
      } finally {
        release();
      }
    } finally {
      dataKey.fill(0);
    }
  } finally {
    db.close();
  }
}

/** vault set's writes, under the vault lock: the store, the local CA, the running holder. */
async function storeAndHand(
  db: Store,
  stateDir: string,
  dataKey: Buffer,
  name: string,
  policy: SecretPolicy,
  value: string,
): Promise<number> {
  // A rotation while unlocked: the holder lets go of the old value first (a value rotated is
  // often one that leaked). Killed after this, the holder holds nothing under the name (vault
  // list says so; calls needing it are refused), never the old value beside a new one stored.
  if (secretNames(db).has(name)) await askHolder(stateDir, { op: "forget", scope: name });
  const { rotated } = putSecret(db, dataKey, name, policy, value);
  let egressCa: { cert: string; key: string } | undefined;
  if (policy.deliver === "http") {
    if (!onlyForHeaders(stateDir)(name) && (await ensureEgressCa(stateDir, dataKey)))
      process.stdout.write(
        // the state directory's name may hold a control character (init names it escaped too)
        `created the local CA servers will trust for HTTP delivery: ${safeText(caCertPathOf(stateDir))}\n`,
      );
    const { ca } = openEgressCa(stateDir, dataKey);
    if (ca) egressCa = { cert: ca.certPem, key: ca.keyPkcs8.toString("base64") };
    ca?.keyPkcs8.fill(0);
  }
  // A running holder learns the new value, so an unlocked vault needs no second unlock.
  await askHolder(stateDir, {
    op: "put",
    scope: name,
    value,
    ...policy,
    ...(egressCa ? { egressCa } : {}),
  });
  process.stdout.write(
    `secret ${name} ${rotated ? "rotated" : "stored"} (deliver ${policy.deliver}${policy.hosts.length ? ` to ${policy.hosts.join(", ")}` : ""})\n`,
  );
  if (value.length < SHORT_VALUE)
    process.stderr.write(
      `portcullis vault set: note: a value of under ${SHORT_VALUE} characters is scrubbed from everything a server says wherever it appears, so it can collide with ordinary text.\n`,
    );
  return EXIT_OK;
}

function checkHost(h: string, i: number): string {
  // By position, not by value: a word that is no host name may be the secret in the wrong place.
  const d = declaredHost(h);
  if ("problem" in d) throw new UsageError(`vault set: --host number ${i + 1} ${d.problem}.`);
  return d.host;
}

async function vaultRm(args: string[], ctx: { stateDir: string }): Promise<number> {
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

interface Use {
  server: string;
  /** the environment variable of a `credentials` entry */
  env?: string;
  /** the header of a remote server's `headers` entry that takes the secret at each request */
  header?: string;
  /** http or env for a credential; "header" for a remote server's header */
  deliver: string;
  /**
   * the host file whose entry sends the header (`run --url … --header-secret`), the server being
   * its key there; absent for a use of the portcullis.json found from here
   */
  hostFile?: string;
  hosts: string[];
  /** when the server declares per-tool scopes: the tools that list this one (tools that declare none use every scope) */
  tools?: string[];
  /** the configured delivery is not the stored one: why the vault will never hand it out so, and the fix */
  mismatch?: string;
}

async function vaultList(args: string[], ctx: { stateDir: string }): Promise<number> {
  const { values } = parse("vault list", args, LIST_OPTIONS, false);
  if (values.help) {
    process.stdout.write(`${VAULT_HELP}\n`);
    return EXIT_OK;
  }
  const json = values.json === true;
  const stateDir = ctx.stateDir;
  // only reads: a store on a full disk, or under a file size limit, is read all the same, saying so
  if (!keyringExists(stateDir)) throw new KeyringMissingError(stateDir);
  const db = openStoreToRead(stateDir);
  try {
    sayReadWithoutWriting(db, "vault list");
    const { uses, configFile, configProblem } = configuredUses();
    // said, not hidden: "no server ... uses it" and no delivery warning would be untrue
    if (configProblem)
      process.stderr.write(
        `portcullis vault list: warning: ${safeText(configProblem)}; who uses each secret, and any delivery mismatch, cannot be shown.\n`,
      );
    // the host entries that send a secret as a header with `run --url … --header-secret`
    const hostUses = hostUsesOrSaid(stateDir);
    const status = await holderStatus(stateDir);
    // Who uses a secret is known only from a portcullis.json that loads: with none found, or one
    // that does not load, it is not known (null), which --json says as the text does, not as an
    // empty list ("no server uses it").
    const known = configFile !== null && configProblem === undefined;
    // What the running holder holds against what the store lists: they differ only after a
    // command was interrupted between the two (vault rm, vault set while unlocked).
    const held = status.unlocked ? new Set(status.scopes ?? []) : null;
    const stored = listSecrets(db);
    const storedNames = new Set(stored.map((s) => s.name));
    const heldNotStored = held === null ? [] : [...held].filter((n) => !storedNames.has(n)).sort();
    const secrets = stored.map((s) => ({
      ...s,
      held: held === null ? null : held.has(s.name),
      // not known (null) only when neither a portcullis.json that loads nor a host entry says
      usedBy:
        known || hostUses.some((u) => u.secret === s.name)
          ? [
              ...(uses.get(s.name) ?? []).map((u): Use => {
                if ("header" in u) {
                  const m = headerHostMismatch(u.server, u.header, s, stateDir);
                  return m ? { ...u.use, mismatch: m } : u.use;
                }
                const m = deliveryMismatch(u.spec, s, u.place, stateDir);
                return m ? { ...u.use, mismatch: `${m.why}; ${m.fix}` } : u.use;
              }),
              ...hostUses.filter((u) => u.secret === s.name).map((u) => hostUse(u, s, stateDir)),
            ]
          : null,
    }));
    if (json) {
      const config = { file: configFile, problem: configProblem ?? null };
      process.stdout.write(
        `${printableJson({ unlocked: status.unlocked, until: status.until ?? null, config, secrets, heldNotStored })}\n`,
      );
      return EXIT_OK;
    }
    process.stdout.write(status.unlocked ? `vault unlocked until ${status.until}\n` : "vault locked\n");
    if (secrets.length === 0)
      process.stdout.write(
        `no secret stored; add one with ${quotedCommand("vault set NAME --host HOST", stateDir)} (or --deliver env)\n`,
      );
    // Names, hosts and tool names come from the store and portcullis.json: terminal-safe.
    const t = (v: unknown) => safeText(String(v));
    for (const s of secrets) {
      const how = s.deliver === "env" ? "deliver env" : `deliver http to ${s.hosts.map(t).join(", ")}`;
      const used = (s.usedBy ?? []).map(
        (u) =>
          `${t(u.server)}${u.hostFile !== undefined ? ` in ${t(u.hostFile)}` : ""} (${u.header !== undefined ? `header ${t(u.header)}, sent` : `${t(u.env)}, ${t(u.deliver)}`}${u.hosts.length ? ` to ${u.hosts.map(t).join(", ")}` : ""}${
            u.tools
              ? `; tools ${u.tools.length ? u.tools.map(t).join(", ") : "(none by name)"} and any that declare no scopes`
              : ""
          })`,
      );
      process.stdout.write(
        `${t(s.name)}  ${how}  ${s.bytes} bytes  created ${t(s.createdAt)}${s.rotatedAt ? `  rotated ${t(s.rotatedAt)}` : ""}\n` +
          `  used by: ${used.length ? used.join("; ") : configProblem ? "not known (the portcullis.json found here does not load)" : configFile === null ? "not known (no portcullis.json found from here)" : "no server in the portcullis.json found here"}\n`,
      );
      // a use the vault will never serve as configured: said under it, with the fix
      for (const u of s.usedBy ?? []) if (u.mismatch) process.stdout.write(`  warning: ${t(u.mismatch)}\n`);
      if (s.held === false)
        process.stdout.write(
          `  warning: the running vault holder does not hold it (a command storing or removing it was interrupted): calls that need it are refused; ${quotedCommand("unlock", stateDir)} again hands it over, ${t(quotedCommand(`vault rm ${s.name}`, stateDir))} finishes a removal\n`,
        );
    }
    for (const name of heldNotStored)
      process.stdout.write(
        `warning: the running vault holder still releases ${t(name)}, which the vault no longer lists (its removal was interrupted): ${t(quotedCommand(`vault rm ${name}`, stateDir))} ends that\n`,
      );
    return EXIT_OK;
  } finally {
    db.close();
  }
}

/**
 * The host entries' `--header-secret` uses (hostHeaderSecretUses), or none, said on stderr, when
 * they could not be read: listing the secrets does not depend on them.
 */
function hostUsesOrSaid(stateDir: string): HostHeaderSecretUse[] {
  try {
    return hostHeaderSecretUses(process.cwd(), stateDir);
  } catch (e) {
    process.stderr.write(
      `portcullis vault list: warning: the host files found from here could not be read for the secrets their entries send as headers (${safeText((e as Error | null)?.message ?? String(e))}); those uses are not shown.\n`,
    );
    return [];
  }
}

/**
 * A host entry's `--header-secret` as vault list shows it: the entry's key and file, the header
 * and the URL's host, with the warning run stops on when the vault would never send the secret
 * there (stored for other hosts), the entry named by file and key.
 */
function hostUse(u: HostHeaderSecretUse, policy: SecretPolicy, stateDir: string): Use {
  const use: Use = {
    server: u.key,
    header: u.header,
    deliver: "header",
    hosts: [new URL(u.server.remote!.url).host],
    hostFile: u.file,
  };
  const m = headerHostMismatch(
    u.server,
    { name: u.header, secret: u.secret, fromFlag: true },
    policy,
    stateDir,
  );
  return m ? { ...use, mismatch: `${u.file}: server ${quotedName(u.key)}: ${m}` } : use;
}

/**
 * Whether what is found from here uses a secret, and only as a remote server's header: the
 * portcullis.json's `headers`, and the host entries' `run --url … --header-secret` of this state
 * directory (hostHeaderSecretUses, as vault list reads them). The gateway puts a header's value
 * in the request itself, no egress proxy intercepts TLS for it, so storing it is no reason for a
 * local CA servers are told to trust. Any other case (no use found, a portcullis.json that does
 * not load, host files that cannot be read, a launched server's credential, a secret neither
 * names) keeps the CA made here: a launched server's HTTP credential needs it before its first
 * request, and a gateway without it tunnels HTTPS to declared hosts unread.
 */
function onlyForHeaders(stateDir: string): (name: string) => boolean {
  // the files read once, whatever the number of secrets asked of
  const { uses, configProblem } = configuredUses();
  // a portcullis.json that does not load may use any secret for a launched server: no judging
  if (configProblem !== undefined) return () => false;
  let hostUses: HostHeaderSecretUse[] = [];
  try {
    hostUses = hostHeaderSecretUses(process.cwd(), stateDir);
  } catch {
    // not read: the host entries count for nothing, and the CA is made as before
  }
  return (name) => {
    const list = uses.get(name) ?? [];
    return (list.length > 0 || hostUses.some((u) => u.secret === name)) && list.every((u) => "header" in u);
  };
}

type ConfiguredUse =
  | { use: Use; spec: CredentialSpec; place: CredentialPlace }
  /** a remote server's vault header: its mismatch is judged by the holder's rule for headers */
  | { use: Use; header: { name: string; secret: string }; server: ServerConfig };

/**
 * Which servers of the portcullis.json found from here use each secret, and, when that file does
 * not load, why (its one sentence, naming the file and the key).
 */
function configuredUses(): {
  uses: Map<string, ConfiguredUse[]>;
  /** the portcullis.json found from the working directory, or null */
  configFile: string | null;
  configProblem?: string;
} {
  const out = new Map<string, ConfiguredUse[]>();
  const file = findConfig(process.cwd());
  if (!file) return { uses: out, configFile: null };
  try {
    for (const server of loadConfigFile(file).values()) {
      const perTool = Object.entries(server.tools ?? {}).filter(([, t]) => t.credentials !== undefined);
      for (const c of server.credentialSpecs) {
        const list = out.get(c.secret) ?? [];
        const tools = perTool.filter(([, t]) => t.credentials!.includes(c.secret)).map(([name]) => name);
        list.push({
          use: {
            server: server.label,
            env: c.env,
            deliver: c.deliver,
            hosts: c.hosts,
            ...(perTool.length > 0 ? { tools } : {}),
          },
          spec: c,
          place: credentialPlaceOf(server),
        });
        out.set(c.secret, list);
      }
      // A remote server's headers take secrets from the vault too: without them a secret only a
      // header uses was listed as used by no server, which invites its removal.
      for (const h of server.remote?.headers ?? []) {
        if (!("secret" in h)) continue;
        const list = out.get(h.secret) ?? [];
        const host = new URL(server.remote!.url).host;
        list.push({
          use: { server: server.label, header: h.name, deliver: "header", hosts: [host] },
          header: { name: h.name, secret: h.secret },
          server,
        });
        out.set(h.secret, list);
      }
    }
  } catch (e) {
    // best effort: listing the secrets does not depend on the file
    const why = e instanceof ConfigError ? e.message : `${file}: ${(e as Error).message ?? String(e)}`;
    return { uses: new Map(), configFile: file, configProblem: why.replace(/\.$/, "") };
  }
  return { uses: out, configFile: file };
}

/** One sentence for every --for it refuses, a malformed one ("0", "ten") or one out of range ("0s", "25h"). */
const BAD_DURATION =
  "unlock: --for takes a duration more than 0 and at most 24h, such as 90s, 10m, 2h or 1h30m.";

export function parseDuration(text: string): number {
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text);
  if (!m || text === "" || (m[1] === undefined && m[2] === undefined && m[3] === undefined))
    throw new UsageError(BAD_DURATION);
  // `010m` was 10 minutes, where a reader (or a tool reading 0-prefixed numbers as octal) may take
  // it for 8: refused as every numeric flag refuses a leading zero (wholeNumber in args.ts)
  if ([m[1], m[2], m[3]].some((n) => n !== undefined && /^0[0-9]/.test(n)))
    throw new UsageError(`unlock: ${leadingZero("--for", "number")}.`);
  const ms = (Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0)) * 1000;
  if (ms <= 0 || ms > MAX_UNLOCK_MS) throw new UsageError(BAD_DURATION);
  return ms;
}

async function typedValue(name: string): Promise<string> {
  try {
    return await readHiddenLine(`Value of ${name}: `);
  } catch (e) {
    if (e instanceof PassphraseError && /no terminal/.test(e.message))
      throw new VaultError(
        "there is no terminal to type the value on; give it on standard input with --from-stdin",
      );
    throw e;
  }
}

/** Values shorter than this are scrubbed too, but can collide with ordinary text (src/vault/scrub.ts). */
const SHORT_VALUE = 8;

async function readStdinValue(): Promise<string> {
  const chunks: Buffer[] = [];
  let read = 0;
  for await (const c of process.stdin) {
    chunks.push(c as Buffer);
    read += (c as Buffer).length;
    // Past the largest value (and its line break) nothing more is read: `< /dev/zero`, or a
    // large file given by mistake, was read whole into memory before being refused (for ever,
    // for a stream that does not end)
    if (read > MAX_VALUE_BYTES + 2) {
      for (const chunk of chunks) chunk.fill(0);
      throw new VaultError(`the value is over ${MAX_VALUE_BYTES} bytes; nothing was stored`);
    }
  }
  const bytes = Buffer.concat(chunks);
  for (const chunk of chunks) chunk.fill(0);
  try {
    // fatal: bytes that are not UTF-8 would otherwise each become U+FFFD, and a value other
    // than the one given would be stored (and delivered) without a word
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes).replace(/\r?\n$/, "");
  } catch {
    throw new VaultError(
      "standard input is not UTF-8 text, and a secret is stored as text (give binary data base64- or hex-encoded); nothing was stored",
    );
  } finally {
    bytes.fill(0);
  }
}

function openExisting(stateDir: string): Store {
  if (!keyringExists(stateDir)) throw new KeyringMissingError(stateDir);
  return openStore(stateDir);
}

/**
 * The data key, from the passphrase. Having the keyring open with it, and the store, the command
 * records late a passphrase change `portcullis passphrase` left unrecorded (killed, or the store
 * not writable then: src/approval/lateWrapping.ts), as every other command that takes the
 * passphrase does; it costs one look for the mark when there is none.
 */
async function unlockWithPassphrase(
  db: Store,
  stateDir: string,
  what: string,
  command: string,
): Promise<Buffer> {
  const passphrase = await readPassphrase(`Passphrase to ${what}: `);
  const unlocked = await unlockKeyring(stateDir, passphrase);
  await recordLateChange(db, stateDir, unlocked.auditPrivateKey, (line) =>
    process.stderr.write(`portcullis ${command}: ${safeText(line)}\n`),
  );
  // what a key rotation killed before its reseal left under an earlier data key: resealed now
  const resealed = resealVault(db, stateDir, unlocked.dataKey, unlocked.earlierDataKeys);
  for (const k of unlocked.earlierDataKeys) k.fill(0);
  if (resealed.secrets > 0 || resealed.egressCa)
    process.stderr.write(
      `portcullis ${command}: ${resealed.secrets} secret(s)${resealed.egressCa ? " and the egress CA key" : ""} still sealed under a data key a rotation replaced: resealed under the current one\n`,
    );
  return unlocked.dataKey;
}

/** Errors of these commands: one sentence on stderr; a wrong passphrase is a failed check (1). */
async function guarded(name: string, body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (e) {
    if (e instanceof UsageError) throw e;
    // a wrong passphrase, or a keyring whose parts were changed: a check that failed (README)
    const wrong =
      (e as Error).name === "WrongPassphraseError" || (e as Error).name === "KeyringTamperedError";
    if (e instanceof VaultError || e instanceof KeyringError || e instanceof PassphraseError) {
      // the message may quote a stored name that another program wrote there (the store is the user's)
      process.stderr.write(`portcullis ${name}: ${safeText(`${(e as Error).message}${keyringEnding(e)}`)}\n`);
      return wrong ? EXIT_CHECK_FAILED : 2;
    }
    throw e;
  }
}
