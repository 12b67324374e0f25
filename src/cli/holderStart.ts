/**
 * How `unlock` starts the detached vault holder: spawned, recorded so that `lock` can find it,
 * handed the secrets on stdin, and waited for until it says `ready` (or why not). Until then a
 * signal or exit of the unlock kills it (guardStart), so that no holder lives on unreachable with
 * the secrets. Apart from unlock.ts: the unlock's side of a process's start is its own concern.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { busyTimeoutMs } from "../store/db.js";
import type { CaMaterial } from "../vault/egress/certs.js";
import { HOLDER_COMMAND, recordHolder } from "../vault/holderProcs.js";
import { type OpenedSecret, VaultError } from "../vault/secrets.js";

/** A holder's start, besides its record's wait for the store. */
const HOLDER_START_MS = 10_000;

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
export function guardStart(): StartGuard {
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
export function startHolder(
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
