// The connections to a server reached over Streamable HTTP (src/supervisor/remote.ts): kept-alive
// requests to its URL, each new connection's certificate chain compared with the epoch's before a
// byte of a request is written, and one fresh connection to learn the chain an epoch starts with.
import {
  type ClientRequest,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
} from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { Socket } from "node:net";
import { TLSSocket } from "node:tls";
import { chainDigest } from "../identity/index.js";
import { type Chain, listenerOfAnotherUser, probeChain } from "./remoteWire.js";

export class UpstreamConnections {
  private agent: HttpAgent;
  /** sockets whose certificate chain was compared with the epoch's */
  private verified = new WeakMap<Socket, string>();
  private readonly https: boolean;

  constructor(
    private readonly url: URL,
    private readonly connectTimeoutMs: number,
  ) {
    this.https = url.protocol === "https:";
    this.agent = this.newAgent();
  }

  private newAgent(): HttpAgent {
    // No resumed TLS sessions: each new connection shows its whole chain. The chain is verified
    // whatever the environment says (NODE_TLS_REJECT_UNAUTHORIZED=0 turns off only node's default).
    return this.https
      ? new HttpsAgent({ keepAlive: true, maxCachedSessions: 0, rejectUnauthorized: true })
      : new HttpAgent({ keepAlive: true });
  }

  /** A fresh connection to the server: its certificate chain (null for http://). */
  probe(): Promise<Chain> {
    return probeChain(this.url, this.connectTimeoutMs);
  }

  /**
   * A request to the server's URL (or `to`, a URL of the same origin: the older transport's
   * message endpoint) on a kept-alive connection; nothing is written yet.
   */
  request(method: string, headers: Record<string, string>, to: URL = this.url): ClientRequest {
    if (to.origin !== this.url.origin) throw new Error("a request to another origin than the server's");
    const fn = this.https ? httpsRequest : httpRequest;
    return fn(to, { method, headers, agent: this.agent });
  }

  /**
   * Runs `then` once `req`'s socket is known to present the certificate chain `chainSha256`. A
   * socket is looked at once (a kept-alive one was seen before); a different chain destroys the
   * request before a byte of it is written, and `differs` is told the chain it saw.
   */
  whenVerified(
    req: ClientRequest,
    chainSha256: string | null,
    then: () => void,
    differs: (digest: string | null) => void,
  ): void {
    if (!this.https) {
      // http:// reaches a loopback address (or, with --allow-insecure, anyone's): no certificate
      // says whose server answers, and loopback is this machine, not this user. A port the
      // server left free can be taken by another user's process, which would be sent the calls
      // and the configured headers (vault secrets among them): checked on each new connection.
      req.once("socket", (sock: Socket) => {
        const check = () => {
          if (this.verified.has(sock)) return then();
          const other = listenerOfAnotherUser(sock);
          if (other === null) {
            this.verified.set(sock, "this user's");
            return then();
          }
          req.destroy(new Error(other));
        };
        if (sock.connecting) sock.once("connect", check);
        else check();
      });
      return;
    }
    req.once("socket", (sock: Socket) => {
      const check = () => {
        if (this.verified.get(sock) === chainSha256) {
          then();
          return;
        }
        const chain = chainDigest((sock as TLSSocket).getPeerCertificate(true));
        const digest = chain?.digest ?? null;
        if (digest !== null && digest === chainSha256) {
          this.verified.set(sock, digest);
          return then();
        }
        req.destroy();
        differs(digest);
      };
      const tls = sock as TLSSocket;
      if (tls instanceof TLSSocket && tls.getPeerCertificate()?.raw) check();
      else sock.once("secureConnect", check);
    });
  }

  /** An epoch ended: its kept-alive connections are not reused by the next one. */
  renew(): void {
    this.agent.destroy();
    this.agent = this.newAgent();
  }

  close(): void {
    this.agent.destroy();
  }

  /**
   * Tells the server a session is over (DELETE with its headers), best effort and briefly, and
   * only on a connection that presents the session's chain `chainSha256`, like every other
   * request: the DELETE carries the session id and the configured headers, and at shutdown it is
   * often the first request on a new connection. On another chain nothing is written (a server
   * that presents it never had the session).
   */
  async deleteSession(headers: Record<string, string>, chainSha256: string | null): Promise<void> {
    await new Promise<void>((resolve) => {
      const fn = this.https ? httpsRequest : httpRequest;
      const req = fn(this.url, { method: "DELETE", headers, agent: this.agent, timeout: 1000 });
      req.on("response", (res: IncomingMessage) => {
        res.resume();
        resolve();
      });
      req.on("timeout", () => req.destroy());
      req.on("error", () => resolve());
      req.on("close", () => resolve());
      this.whenVerified(
        req,
        chainSha256,
        () => req.end(),
        () => resolve(),
      );
    });
  }
}
