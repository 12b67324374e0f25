import { existsSync, statSync } from "node:fs";
import { createConnection, type Socket } from "node:net";
import { holderSocketPath } from "../holder.js";

/**
 * The egress proxy's connection to the vault holder, kept open between requests: a release is
 * asked once per call, scope and host, a leaf once per host, and a new Unix socket connection
 * each time would cost more than the question; its closing also tells the proxy that the holder
 * is gone. The holder answers the requests of one connection in order, so answers are matched
 * to questions first in, first out. Any trouble (no holder, a closed or silent socket) answers
 * null, as a locked vault does, and the next question connects again.
 */
export class HolderClient {
  private socket: Socket | null = null;
  private buf = "";
  private waiting: { resolve: (v: Record<string, unknown> | null) => void; timer: NodeJS.Timeout }[] = [];
  private readonly gone: (() => void)[] = [];
  private readonly changed: (() => void)[] = [];
  private readonly path: string;

  constructor(
    stateDir: string,
    private readonly timeoutMs = 2000,
  ) {
    this.path = holderSocketPath(stateDir);
  }

  ask(req: Record<string, unknown>): Promise<Record<string, unknown> | null> {
    const socket = this.connected();
    if (!socket) return Promise.resolve(null);
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.reset(), this.timeoutMs);
      this.waiting.push({ resolve, timer });
      socket.write(`${JSON.stringify(req)}\n`);
    });
  }

  close(): void {
    this.reset();
  }

  /**
   * `f` runs whenever the holder says a secret was stored or removed (`{"changed":N}`, a line that
   * answers no question, sent before it answers the change on a connection it released a value on
   * for a `release-http` that asked for it with `"changes":true`).
   */
  onChanged(f: () => void): void {
    this.changed.push(f);
  }

  /** `f` runs whenever the connection to the holder is lost (the holder locked, expired or died). */
  onGone(f: () => void): void {
    this.gone.push(f);
  }

  /**
   * The holder's generation as its socket file shows it (its modification time, in seconds), or
   * null when there is no socket (locked). The holder sets it when it starts and whenever a secret
   * is stored or removed, before it answers; `lock` removes the file before it answers. One
   * `stat`, no round trip: what lets a released value be used again, exactly until it must not.
   * Any process of the user can set the file's time: `onChanged` is what it cannot undo.
   */
  generation(): number | null {
    try {
      const st = statSync(this.path, { throwIfNoEntry: false });
      return st ? st.mtimeMs / 1000 : null;
    } catch {
      return null;
    }
  }

  private connected(): Socket | null {
    if (this.socket && !this.socket.destroyed) return this.socket;
    if (!existsSync(this.path)) return null;
    const socket = createConnection(this.path);
    this.socket = socket;
    this.buf = "";
    socket.setEncoding("utf8");
    socket.unref();
    socket.on("data", (chunk: string) => {
      this.buf += chunk;
      for (let nl = this.buf.indexOf("\n"); nl >= 0; nl = this.buf.indexOf("\n")) {
        const line = this.buf.slice(0, nl);
        this.buf = this.buf.slice(nl + 1);
        let parsed: Record<string, unknown> | null = null;
        try {
          const v = JSON.parse(line) as unknown;
          if (v && typeof v === "object" && !Array.isArray(v)) parsed = v as Record<string, unknown>;
        } catch {
          parsed = null;
        }
        // the holder's news of a change answers no question
        if (parsed && !("ok" in parsed) && typeof parsed.changed === "number") {
          for (const f of this.changed) f();
          continue;
        }
        const w = this.waiting.shift();
        if (!w) continue;
        clearTimeout(w.timer);
        w.resolve(parsed);
      }
    });
    const gone = () => {
      if (this.socket === socket) this.reset();
    };
    socket.on("error", gone);
    socket.on("close", gone);
    return socket;
  }

  /** Drops the connection; every question still waiting is answered null. */
  private reset(): void {
    const s = this.socket;
    this.socket = null;
    s?.destroy();
    if (s) for (const f of this.gone) f();
    for (const w of this.waiting.splice(0)) {
      clearTimeout(w.timer);
      w.resolve(null);
    }
  }
}
