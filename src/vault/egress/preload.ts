/**
 * Loaded into a Node server with `--import` (NODE_OPTIONS) when its gateway runs an egress proxy.
 * Node 20's global fetch ignores the proxy variables, and so do node:http and node:https: this
 * sends all three through the proxy named by HTTPS_PROXY / HTTP_PROXY (NO_PROXY respected).
 * It must never break a server: on any error it does nothing.
 */
import http from "node:http";
import https from "node:https";
import { isIP, connect as netConnect, type Socket } from "node:net";

function noProxy(host: string): boolean {
  const list = (process.env.NO_PROXY ?? process.env.no_proxy ?? "")
    .split(",")
    .map((e) => e.trim().toLowerCase().replace(/:\d+$/, ""))
    .filter(Boolean);
  const h = host.toLowerCase().replace(/^\[|\]$/g, "");
  return list.some(
    (e) => e === "*" || h === e.replace(/^\*?\./, "") || h.endsWith(e.startsWith(".") ? e : `.${e}`),
  );
}

function hostPort(host: string, port: number): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

type AgentOptions = { host?: string | null; hostname?: string | null; port?: number | string | null };

function targetOf(options: AgentOptions, defaultPort: number): { host: string; port: number } {
  const host = String(options.hostname ?? options.host ?? "localhost").replace(/^\[|\]$/g, "");
  return { host, port: Number(options.port) || defaultPort };
}

// Node's Agent methods, called on our agents (typed loosely: @types/node does not list addRequest).
type Loose = Record<string, (...args: unknown[]) => unknown>;

/** node:http through the proxy: absolute-form requests on a kept-alive connection to it. */
function proxyHttpAgent(proxy: URL): http.Agent {
  const agent = new http.Agent({ keepAlive: true });
  const base = (http.Agent.prototype as unknown as Loose).addRequest!;
  (agent as unknown as Loose).addRequest = (req: unknown, options: unknown) => {
    const o = options as http.RequestOptions & AgentOptions;
    const t = targetOf(o, 80);
    if (noProxy(t.host)) return base.call(agent, req, options);
    (req as http.ClientRequest).path =
      `http://${hostPort(t.host, t.port)}${(req as http.ClientRequest).path}`;
    return base.call(agent, req, {
      ...o,
      host: proxy.hostname,
      hostname: proxy.hostname,
      port: Number(proxy.port) || 80,
    });
  };
  return agent;
}

/** node:https through the proxy: a CONNECT tunnel, then TLS to the real host inside it. */
function proxyHttpsAgent(proxy: URL): https.Agent {
  const agent = new https.Agent({ keepAlive: true });
  const base = (https.Agent.prototype as unknown as Loose).createConnection!;
  (agent as unknown as Loose).createConnection = (options: unknown, cbArg: unknown) => {
    const o = options as https.RequestOptions & AgentOptions;
    const cb = cbArg as (e: Error | null, s?: unknown) => void;
    const t = targetOf(o, 443);
    if (noProxy(t.host)) return base.call(agent, options, cbArg);
    const s: Socket = netConnect({ host: proxy.hostname, port: Number(proxy.port) || 80 });
    let buf = Buffer.alloc(0);
    const fail = (e: Error) => {
      s.destroy();
      cb(e);
    };
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) {
        if (buf.length > 16384) fail(new Error("egress proxy: oversized CONNECT answer"));
        return;
      }
      s.off("data", onData);
      s.off("error", fail);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(buf.subarray(0, end).toString("latin1"))?.[1]);
      if (status !== 200) {
        const body = buf
          .subarray(end + 4)
          .toString("utf8")
          .trim();
        s.destroy();
        return cb(
          new Error(
            `egress proxy refused CONNECT ${hostPort(t.host, t.port)}: ${status}${body ? ` ${body}` : ""}`,
          ),
        );
      }
      s.pause();
      try {
        cb(null, base.call(agent, { ...o, socket: s, servername: isIP(t.host) ? undefined : t.host }));
      } catch (e) {
        cb(e as Error);
      }
    };
    s.on("data", onData);
    s.once("error", fail);
    s.write(`CONNECT ${hostPort(t.host, t.port)} HTTP/1.1\r\nHost: ${hostPort(t.host, t.port)}\r\n\r\n`);
    return undefined;
  };
  return agent;
}

try {
  const raw =
    process.env.HTTPS_PROXY ?? process.env.https_proxy ?? process.env.HTTP_PROXY ?? process.env.http_proxy;
  if (raw) {
    const proxy = new URL(raw);
    try {
      const undici = await import("undici");
      // EnvHttpProxyAgent warns that it is experimental: not the server's concern, kept off its stderr
      const emit = process.emitWarning;
      process.emitWarning = () => {};
      try {
        undici.setGlobalDispatcher(new undici.EnvHttpProxyAgent());
      } finally {
        process.emitWarning = emit;
      }
    } catch {
      /* without undici, fetch goes direct (and the proxy sees nothing of it) */
    }
    try {
      (http as unknown as { globalAgent: http.Agent }).globalAgent = proxyHttpAgent(proxy);
      (https as unknown as { globalAgent: https.Agent }).globalAgent = proxyHttpsAgent(proxy);
    } catch {
      /* a frozen module namespace: node:http(s) go direct */
    }
  }
} catch {
  /* never break the server */
}
