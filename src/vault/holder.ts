import { chmodSync, existsSync, unlinkSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
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
 * {"op":"release","scope":S[,"host":H]}, {"op":"put","scope":S,"value":V,"deliver":D,"hosts":[…]},
 * {"op":"forget","scope":S}, {"op":"lock"}. Answers: {"ok":true,...} or {"ok":false,"error":...}.
 *
 * `release` hands a value out in clear, so it answers only for secrets stored with
 * `--deliver env`: whoever can connect (any process of the user) could ask, exactly as any
 * process of the user can read an env-delivered server's environment. A secret stored for
 * HTTP delivery leaves the holder in clear only with a `host` that is one of its declared
 * destinations: a gateway that sends it as a header to a server it reaches at that host
 * (`run --url`); any process of the user could ask the same.
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
}

export interface HolderOptions {
  socketPath: string;
  until: Date;
  secrets: Map<string, OpenedSecret>;
  /** called once when the holder stops (lock, expiry, or a signal) */
  onStop?: (reason: "locked" | "expired" | "signal") => void;
}

/** Runs the holder in this process until it is locked or expires. Resolves once listening. */
export async function runHolder(
  o: HolderOptions,
): Promise<{ stop(reason: "locked" | "expired" | "signal"): void }> {
  // Values are kept as Buffers so that locking can overwrite them (strings cannot be wiped).
  const held = new Map<string, { value: Buffer } & SecretPolicy>();
  for (const [k, v] of o.secrets)
    held.set(k, { value: Buffer.from(v.value, "utf8"), deliver: v.deliver, hosts: v.hosts });
  o.secrets.clear();
  let stopped = false;
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => serve(socket));
  const stop = (reason: "locked" | "expired" | "signal") => {
    if (stopped) return;
    stopped = true;
    clearTimeout(timer);
    for (const b of held.values()) b.value.fill(0);
    held.clear();
    server.close();
    for (const s of sockets) s.destroy();
    try {
      unlinkSync(o.socketPath);
    } catch {
      /* already gone */
    }
    o.onStop?.(reason);
  };
  const timer = setTimeout(() => stop("expired"), Math.max(0, o.until.getTime() - Date.now()));

  const answer = (req: Record<string, unknown>): Record<string, unknown> => {
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
        };
      case "release": {
        const v = typeof req.scope === "string" ? held.get(req.scope) : undefined;
        if (!v) return { ok: false, error: "credential_missing" };
        // With a host: a header value for a remote MCP server at that host, which an HTTP-delivered
        // secret may go to when the host is one of its declared destinations.
        const toHost = typeof req.host === "string" && v.deliver === "http" && v.hosts.includes(req.host);
        if (v.deliver !== "env" && !toHost) return { ok: false, error: "not_env_delivered" };
        return { ok: true, value: v.value.toString("utf8") };
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
        return { ok: true };
      }
      case "forget":
        if (typeof req.scope !== "string") return { ok: false, error: "bad_request" };
        held.get(req.scope)?.value.fill(0);
        held.delete(req.scope);
        return { ok: true };
      case "lock":
        setImmediate(() => stop("locked"));
        return { ok: true };
      default:
        return { ok: false, error: "unknown_op" };
    }
  };

  const serve = (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    let buf = "";
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
        let reply: Record<string, unknown>;
        try {
          const req = JSON.parse(line) as unknown;
          reply =
            typeof req === "object" && req !== null && !Array.isArray(req)
              ? answer(req as Record<string, unknown>)
              : { ok: false, error: "bad_request" };
        } catch {
          reply = { ok: false, error: "bad_request" };
        }
        if (!socket.destroyed) socket.write(`${JSON.stringify(reply)}\n`);
        nl = buf.indexOf("\n");
      }
    });
  };

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    // The socket is created 0600 (umask) so no other user can connect, even for an instant.
    const old = process.umask(0o177);
    server.listen(o.socketPath, () => {
      process.umask(old);
      server.off("error", reject);
      resolve();
    });
  });
  chmodSync(o.socketPath, 0o600);
  return { stop };
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
  };
}

/** Removes a socket file no holder answers on (a holder that was killed). */
export async function clearStaleSocket(stateDir: string): Promise<void> {
  const path = holderSocketPath(stateDir);
  if (!existsSync(path)) return;
  if ((await askHolder(stateDir, { op: "status" })) !== null) return;
  try {
    unlinkSync(path);
  } catch {
    /* raced with another cleaner */
  }
}
