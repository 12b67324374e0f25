import { randomInt } from "node:crypto";
import { chmodSync, existsSync, lstatSync, unlinkSync, utimesSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import type { CaMaterial, LeafMaterial } from "./egress/certs.js";
import { hostDeclared, hostMatches, hostValue, parseAuthority } from "./egress/hosts.js";
import type { OpenedSecret, SecretPolicy } from "./secrets.js";

/**
 * The vault holder: while the vault is unlocked, the opened secrets live in ONE process, this
 * one, and nowhere else. `portcullis unlock` opens them with the passphrase, hands them to a
 * detached holder over a pipe (never argv or the environment), and forgets them; the holder
 * answers on a Unix socket in the state directory (mode 0600 inside the 0700 directory, so only
 * the user's own processes can connect) until its time is up or `portcullis lock` asks it to
 * stop. Running gateways never see the passphrase or the data key: they ask the holder whether
 * the vault is unlocked and, for `deliver: "env"` scopes, for a value at spawn.
 *
 * Protocol: one JSON object per line each way. Requests: {"op":"status"},
 * {"op":"release","scope":S}, {"op":"put","scope":S,"value":V,"deliver":D,"hosts":[…]},
 * {"op":"forget","scope":S}, {"op":"lock"}, {"op":"leaf","host":H},
 * {"op":"release-http","scope":S,"host":"H:PORT","changes":true?}. Answers: {"ok":true,...} or
 * {"ok":false,"error":...}, one per request, in order; the only other line is `{"changed":N}` (below),
 * and only on a connection that asked for it.
 *
 * `leaf` mints (and caches for its day of life) a TLS certificate for a host that some
 * HTTP-delivered secret's stored policy names, signed by the state directory's local CA, whose
 * key only the holder holds; `release-http` hands out an HTTP-delivered value for a request to one
 * of the hosts its stored policy names (the egress proxy asks once per call, scope and host, while
 * a call covering the scope is in flight).
 *
 * The holder's generation is a counter in its memory (a random start, one more each time a secret
 * is stored or removed), given by `status` and sent with every `release-http` value, and shown as
 * its socket file's modification time (whole seconds, set before the answer): the egress proxy
 * keeps a value for the call it was released for and uses it again only while the file still
 * shows that generation (one `stat`, no round trip). A file's time can be set by any process of the
 * user, so the holder also tells every connection it released a value on with `"changes":true`
 * in the request, before it answers a store or a removal: `{"changed":GENERATION}`, a line that
 * answers no question, upon which the proxy drops what it kept. A connection that never asked
 * (a gateway of an older version, still running, reads one line per question) gets no such line.
 * `lock` removes the file before it answers, so no request read after `lock` returns finds a value
 * to use.
 *
 * `release` hands a value out in clear, so it answers only for secrets stored with
 * `--deliver env`: whoever can connect (any process of the user) could ask, exactly as any
 * process of the user can read an env-delivered server's environment. `release-http` answers
 * only for the hosts the stored policy names; it, too, answers whoever can connect (see
 * docs/security.md, "What a same-user attacker can still do").
 */

export const HOLDER_SOCKET = "vault.sock";
/** A request line longer than this is refused and the connection closed. */
const MAX_REQUEST_BYTES = 128 * 1024;

/** Unix socket paths are limited to 108 bytes on Linux (104 on macOS), the terminating NUL included. */
const MAX_SOCKET_PATH_BYTES = 103;

export function holderSocketPath(stateDir: string): string {
  return join(stateDir, HOLDER_SOCKET);
}

/** The socket path, or null when the state directory's path is too long for a Unix socket. */
export function usableSocketPath(stateDir: string): string | null {
  const path = holderSocketPath(stateDir);
  return Buffer.byteLength(path) <= MAX_SOCKET_PATH_BYTES ? path : null;
}

export interface HolderStatus {
  unlocked: boolean;
  /** ISO time the vault locks by itself */
  until?: string;
  /** names of the secrets the holder holds (never values) */
  scopes?: string[];
  /** those of them that may be delivered in a server's environment */
  envScopes?: string[];
  /** the holder's generation (a counter in its memory, also shown as its socket file's time), when it keeps one: it changes with every set or rm */
  generation?: number;
}

/**
 * Why a holder stopped. `unreachable`: its socket file was removed or replaced by another
 * process's, or the unlock that started it went away before hearing it was ready; no one could
 * lock it any more, so it locks itself.
 */
export type StopReason = "locked" | "expired" | "signal" | "unreachable";

/** Who asked a holder to lock (`{"op":"lock","by":…}`); anything else counts as `lock`. */
export type LockedBy = "lock" | "unlock";

/** How often a holder checks that its socket file is still its own, and its time (until) by the wall clock. */
const SOCKET_CHECK_MS = 1000;

/** The holder could not listen on its socket (another process holds the path): it holds nothing now. */
export class HolderListenError extends Error {
  constructor(
    readonly code: string,
    path: string,
  ) {
    super(
      code === "EADDRINUSE"
        ? `another process holds the vault holder's socket ${path}`
        : `the vault holder could not listen on ${path} (${code})`,
    );
    this.name = "HolderListenError";
  }
}

export interface HolderOptions {
  socketPath: string;
  until: Date;
  secrets: Map<string, OpenedSecret>;
  /** the local CA, opened by `unlock`; without it no leaf is minted (HTTPS is then tunnelled untouched) */
  ca?: CaMaterial | null;
  /**
   * Called once the socket listens, before any request is read: what must be true before the
   * holder answers anyone (its `vault_unlocked` record). If it throws, the holder wipes what it
   * was given and runHolder rejects with that error.
   */
  beforeServing?: () => void;
  /**
   * Called once when the holder stops (lock, expiry, a signal, or its socket is gone), after it
   * wiped what it held; `by` names who asked, for a lock: a `lock` or a new `unlock`.
   */
  onStop?: (reason: StopReason, by?: LockedBy) => void;
}

/**
 * Runs the holder in this process until it is locked or expires. Resolves once listening; when
 * it cannot listen it wipes what it was given and rejects (HolderListenError), leaving nothing
 * behind that keeps the process alive.
 */
export async function runHolder(o: HolderOptions): Promise<{ stop(reason: StopReason): void }> {
  // Values are kept as Buffers so that locking can overwrite them (strings cannot be wiped).
  const held = new Map<string, { value: Buffer } & SecretPolicy>();
  for (const [k, v] of o.secrets)
    held.set(k, { value: Buffer.from(v.value, "utf8"), deliver: v.deliver, hosts: v.hosts });
  o.secrets.clear();
  let ca: CaMaterial | null = o.ca ?? null;
  const leaves = new Map<string, Promise<LeafMaterial>>();
  let stopped = false;
  /** `lock` was asked: nothing more is released, and the socket file is already gone */
  let locking = false;
  let lockedBy: LockedBy | undefined;
  // whole seconds between 2001 and 2030: a date every filesystem keeps exactly
  let generation = randomInt(1_000_000_000, 1_900_000_000);
  /** false when the socket file's time cannot be set: values are then not marked, and not kept */
  let marked = false;
  const mark = (): void => {
    try {
      utimesSync(o.socketPath, generation, generation);
      marked = true;
    } catch {
      marked = false;
    }
  };
  /** the device and inode of the socket file this holder made, once it listens */
  let own: string | null = null;
  const socketFile = (): string | null => {
    try {
      const st = lstatSync(o.socketPath);
      return `${st.dev}:${st.ino}`;
    } catch {
      return null;
    }
  };
  const removeSocket = (): void => {
    // the path may already be another holder's (a new unlock): only our own file goes
    if (own === null || socketFile() !== own) return;
    try {
      unlinkSync(o.socketPath);
    } catch {
      /* already gone */
    }
  };
  const sockets = new Set<Socket>();
  /** the connections a value was released on with a generation that asked to be told of every change (see above) */
  const keepers = new Set<Socket>();
  const changed = (): void => {
    for (const k of keepers) if (!k.destroyed) k.write(`${JSON.stringify({ changed: generation })}\n`);
  };
  const server: Server = createServer((socket) => serve(socket));
  let timer: NodeJS.Timeout | undefined;
  let watch: NodeJS.Timeout | undefined;
  /** Overwrites everything opened this holder holds (strings aside, which cannot be wiped). */
  const wipe = (): void => {
    for (const b of held.values()) b.value.fill(0);
    held.clear();
    ca?.keyPkcs8.fill(0);
    ca = null;
    leaves.clear();
  };
  const stop = (reason: StopReason) => {
    if (stopped) return;
    stopped = true;
    clearTimeout(timer);
    clearInterval(watch);
    wipe();
    server.close();
    for (const s of sockets) s.destroy();
    if (!locking) removeSocket();
    o.onStop?.(reason, lockedBy);
  };

  /**
   * Whether `until` has passed by the wall clock. The expiry timer counts the process's monotonic
   * time, which stands still while the machine sleeps (macOS, and Linux's CLOCK_MONOTONIC): an
   * `unlock --for 1h` before a night's suspend would release for up to an hour the next morning,
   * while `vault list` said it had locked at the time given. So every answer, and the check
   * each second, compare the time now with `until` as the human was told it.
   */
  const pastUntil = (): boolean => Date.now() >= o.until.getTime();

  const httpHosts = (): string[] =>
    [...held.values()].filter((v) => v.deliver === "http").flatMap((v) => v.hosts);

  const leafFor = async (host: string): Promise<Record<string, unknown>> => {
    if (!ca) return { ok: false, error: "no_ca" };
    if (!hostDeclared(httpHosts(), host)) return { ok: false, error: "host_not_declared" };
    let p = leaves.get(host);
    // a leaf lives a day; a new one is minted when less than an hour is left
    const fresh = async (l: Promise<LeafMaterial>) => (await l).notAfter.getTime() - Date.now() > 3600_000;
    if (!p || !(await fresh(p).catch(() => false))) {
      // loaded when first needed: X.509 is a large library, and most holders never mint
      const current = ca;
      p = import("./egress/certs.js").then((m) => m.mintLeaf(current, host));
      leaves.set(host, p);
    }
    try {
      const l = await p;
      return { ok: true, cert: l.certPem, key: l.keyPem, notAfter: l.notAfter.toISOString() };
    } catch {
      leaves.delete(host);
      return { ok: false, error: "mint_failed" };
    }
  };

  const answer = async (req: Record<string, unknown>, socket: Socket): Promise<Record<string, unknown>> => {
    if (locking) return { ok: false, error: "locked" };
    if (pastUntil()) {
      // the timer has not fired yet, but --until has passed by the wall clock (see pastUntil)
      stop("expired");
      return { ok: false, error: "locked" };
    }
    switch (req.op) {
      case "status":
        return {
          ok: true,
          unlocked: true,
          until: o.until.toISOString(),
          scopes: [...held.keys()].sort(),
          envScopes: [...held]
            .filter(([, v]) => v.deliver === "env")
            .map(([k]) => k)
            .sort(),
          ...(marked ? { generation } : {}),
        };
      case "release": {
        const v = typeof req.scope === "string" ? held.get(req.scope) : undefined;
        if (!v) return { ok: false, error: "credential_missing" };
        if (v.deliver !== "env") return { ok: false, error: "not_env_delivered" };
        return { ok: true, value: v.value.toString("utf8") };
      }
      case "release-http": {
        const v = typeof req.scope === "string" ? held.get(req.scope) : undefined;
        const dest = typeof req.host === "string" ? parseAuthority(req.host) : null;
        if (!dest) return { ok: false, error: "bad_request" };
        if (!v) return { ok: false, error: "credential_missing" };
        if (v.deliver !== "http") return { ok: false, error: "not_http_delivered" };
        // The stored policy decides, not the gateway's configuration: a host the passphrase
        // holder did not name gets nothing, whatever portcullis.json says.
        if (!hostMatches(v.hosts, dest)) return { ok: false, error: "host_not_allowed" };
        // told of changes only when it asked: a client of an older version reads one line per
        // question, and would take the news for the answer to its next one
        if (marked && req.changes === true) keepers.add(socket);
        return { ok: true, value: v.value.toString("utf8"), ...(marked ? { generation } : {}) };
      }
      case "leaf": {
        // minted for the host by value: the address a client connects to, in the form it checks
        const host = typeof req.host === "string" ? hostValue(req.host) : null;
        if (host === null) return { ok: false, error: "bad_request" };
        return leafFor(host);
      }
      case "put": {
        const hosts = req.hosts ?? [];
        if (
          typeof req.scope !== "string" ||
          typeof req.value !== "string" ||
          req.value === "" ||
          (req.deliver !== "env" && req.deliver !== "http") ||
          !Array.isArray(hosts) ||
          hosts.some((h) => typeof h !== "string")
        )
          return { ok: false, error: "bad_request" };
        held.get(req.scope)?.value.fill(0);
        held.set(req.scope, {
          value: Buffer.from(req.value, "utf8"),
          deliver: req.deliver,
          hosts: hosts as string[],
        });
        // `vault set --deliver http` may have just created the CA: a running holder takes it.
        const given = req.egressCa as { cert?: unknown; key?: unknown } | undefined;
        if (!ca && typeof given?.cert === "string" && typeof given.key === "string")
          ca = { certPem: given.cert, keyPkcs8: Buffer.from(given.key, "base64") };
        generation++;
        mark();
        changed();
        return { ok: true };
      }
      case "forget":
        if (typeof req.scope !== "string") return { ok: false, error: "bad_request" };
        held.get(req.scope)?.value.fill(0);
        held.delete(req.scope);
        generation++;
        mark();
        changed();
        return { ok: true };
      case "lock":
        // the file goes before the answer: once `lock` has its answer, no proxy finds the mark
        // its kept values need, and no new connection reaches this holder
        locking = true;
        lockedBy = req.by === "unlock" ? "unlock" : "lock";
        removeSocket();
        setImmediate(() => stop("locked"));
        return { ok: true };
      default:
        return { ok: false, error: "unknown_op" };
    }
  };

  const serve = (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => {
      sockets.delete(socket);
      keepers.delete(socket);
    });
    socket.on("error", () => socket.destroy());
    let buf = "";
    // answers go out in the order the requests came, even when one (a leaf) takes a while
    let chain: Promise<void> = Promise.resolve();
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      buf += chunk;
      if (buf.length > MAX_REQUEST_BYTES) {
        socket.end(`${JSON.stringify({ ok: false, error: "too_large" })}\n`);
        return;
      }
      let nl = buf.indexOf("\n");
      while (nl >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        chain = chain.then(async () => {
          let reply: Record<string, unknown>;
          try {
            const req = JSON.parse(line) as unknown;
            reply =
              typeof req === "object" && req !== null && !Array.isArray(req)
                ? await answer(req as Record<string, unknown>, socket)
                : { ok: false, error: "bad_request" };
          } catch {
            reply = { ok: false, error: "bad_request" };
          }
          if (!socket.destroyed) socket.write(`${JSON.stringify(reply)}\n`);
        });
        nl = buf.indexOf("\n");
      }
    });
  };

  try {
    await listen(server, o.socketPath);
  } catch (e) {
    // Another holder (or any process) has the path: this one could never be asked or locked.
    // Nothing is armed yet, so once the secrets are wiped nothing keeps the process alive.
    stopped = true;
    wipe();
    server.close();
    throw new HolderListenError((e as NodeJS.ErrnoException).code ?? "error", o.socketPath);
  }
  own = socketFile();
  try {
    chmodSync(o.socketPath, 0o600);
    mark();
    o.beforeServing?.();
  } catch (e) {
    // nothing was read yet: nobody got anything from this holder
    stopped = true;
    wipe();
    server.close();
    removeSocket();
    throw e;
  }
  // Armed only now: a holder that never listened must not live on until `until`.
  timer = setTimeout(() => stop("expired"), Math.max(0, o.until.getTime() - Date.now()));
  // A holder whose socket file was removed or replaced can be reached by no gateway and no
  // `lock`: it locks itself rather than hold the secrets for nothing.
  watch = setInterval(() => {
    if (pastUntil()) stop("expired");
    else if (!locking && socketFile() !== own) stop("unreachable");
  }, SOCKET_CHECK_MS);
  return { stop };
}

function listen(server: Server, path: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    // The socket is created 0600 (umask) so no other user can connect, even for an instant.
    const old = process.umask(0o177);
    const failed = (e: Error) => {
      process.umask(old);
      reject(e);
    };
    server.once("error", failed);
    server.listen(path, () => {
      process.umask(old);
      server.off("error", failed);
      resolve();
    });
  });
}

/** One request to the holder; null when no holder answers (the vault is locked). */
export function askHolder(
  stateDir: string,
  req: Record<string, unknown>,
  timeoutMs = 2000,
): Promise<Record<string, unknown> | null> {
  const path = holderSocketPath(stateDir);
  if (!existsSync(path)) return Promise.resolve(null);
  return new Promise((resolve) => {
    let done = false;
    let buf = "";
    const finish = (v: Record<string, unknown> | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(v);
    };
    const socket = createConnection(path);
    const timer = setTimeout(() => finish(null), timeoutMs);
    socket.setEncoding("utf8");
    socket.on("connect", () => socket.write(`${JSON.stringify(req)}\n`));
    socket.on("data", (chunk: string) => {
      buf += chunk;
      const nl = buf.indexOf("\n");
      if (nl < 0) return;
      try {
        finish(JSON.parse(buf.slice(0, nl)) as Record<string, unknown>);
      } catch {
        finish(null);
      }
    });
    socket.on("error", () => finish(null));
    socket.on("close", () => finish(null));
  });
}

export async function holderStatus(stateDir: string): Promise<HolderStatus> {
  const r = await askHolder(stateDir, { op: "status" });
  if (r?.ok !== true) return { unlocked: false };
  return {
    unlocked: true,
    until: typeof r.until === "string" ? r.until : undefined,
    scopes: Array.isArray(r.scopes) ? (r.scopes as string[]) : [],
    envScopes: Array.isArray(r.envScopes) ? (r.envScopes as string[]) : [],
    ...(typeof r.generation === "number" ? { generation: r.generation } : {}),
  };
}

/**
 * Removes a socket file no process listens on (a holder that was killed). A slow or silent
 * listener is left alone: removing its file would leave a live holder no one can reach.
 */
export async function clearStaleSocket(stateDir: string): Promise<void> {
  const path = holderSocketPath(stateDir);
  if (!existsSync(path)) return;
  if (await someoneListens(path)) return;
  try {
    unlinkSync(path);
  } catch {
    /* raced with another cleaner */
  }
}

/** Whether a connection to the Unix socket `path` is accepted; only a refusal or no file says no. */
function someoneListens(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection(path);
    const done = (live: boolean) => {
      socket.destroy();
      resolve(live);
    };
    socket.once("connect", () => done(true));
    socket.once("error", (e: NodeJS.ErrnoException) =>
      done(e.code !== "ECONNREFUSED" && e.code !== "ENOENT" && e.code !== "ENOTSOCK"),
    );
  });
}
