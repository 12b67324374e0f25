import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { ServerConfig } from "../../config/config.js";
import type { EventSink } from "../../gateway/events.js";
import type { Store } from "../../store/db.js";
import { quotedCommand } from "../../store/stateDir.js";
import { envMs } from "../../util/envMs.js";
import { type Logger, scrubbedOr } from "../../util/log.js";
import type { ReleasedValues } from "../scrub.js";
import type { CallInFlight, EgressProxy } from "./proxy.js";

/**
 * The egress proxy of one gateway and the environment its server is started with: the one
 * setup shared by a stdio gateway and each HTTP session of `run --listen`.
 *
 * The release window is `calls`, read from the gateway the proxy belongs to, so a proxy releases
 * only for its own gateway's calls in flight, in its own gateway's current epoch. Under
 * `--listen` every session is a gateway of its own and gets a proxy of its own (see
 * src/cli/listen.ts for why not one shared proxy).
 */

export interface ServerEgressOptions {
  server: ServerConfig;
  stateDir: string;
  /** the gateway's id: names its directory of CA bundles, removed when the proxy closes */
  gatewayId: string;
  /** the environment the server would get (the user's, with the config's env and placeholders) */
  env: Record<string, string>;
  store: Store;
  events: EventSink;
  log: Logger;
  /** the scrubber learns each released value */
  released: ReleasedValues;
  /** that gateway's current epoch and calls in flight (`Gateway.callsInFlight`) */
  calls(): { epoch: string | null; inFlight: Iterable<CallInFlight> };
}

export interface ServerEgress {
  /** the proxy variables, CA bundles and preload to add to the server's environment at each spawn */
  env: Record<string, string>;
  url: string;
  /**
   * The gateway's next epoch is recorded: the requests its server made while no epoch was live
   * (booting, or after the previous process went down) are recorded under it.
   */
  epochStarted(epoch: string): void;
  /**
   * stops the proxy (its port closes, open tunnels are cut), writes the record, removes the
   * bundles; `brief`: the record's last write waits BRIEF_WAIT_MS at most for another process's
   * lock (an HTTP session ending while others serve), and what it cannot write is given up
   */
  close(o?: { brief?: boolean }): Promise<void>;
}

/** The proxy could not listen: said in one sentence (a usage error at `run`, a warning for a session). */
export class EgressStartError extends Error {
  override name = "EgressStartError";
}

/** Whether a server gets an egress proxy: a credential delivered over HTTP, or `egress` configured. */
export function needsEgress(server: ServerConfig): boolean {
  // a remote server is no process of ours: it has no environment to route through a proxy
  if (server.remote) return false;
  return server.credentialSpecs.some((c) => c.deliver === "http") || server.egress !== undefined;
}

/**
 * Starts the proxy before the server, so the server's first instruction already goes through it;
 * null when the server needs none.
 */
export async function startServerEgress(o: ServerEgressOptions): Promise<ServerEgress | null> {
  const { server, stateDir, env, log } = o;
  if (!needsEgress(server)) return null;
  // loaded only for a server that has a proxy: most gateways never need node:https, TLS and the rest
  const [{ startEgressProxy }, { egressEnv, readCaBundle }, { EgressRecorder }, { caCertPath }] =
    await Promise.all([import("./proxy.js"), import("./env.js"), import("./record.js"), import("./ca.js")]);
  const http = server.credentialSpecs.filter((c) => c.deliver === "http");
  // a host named after a released value (env-delivered ones included) is recorded redacted
  const recorder = new EgressRecorder(
    o.store,
    server.label,
    o.events,
    undefined,
    (host) => scrubbedOr((h) => o.released.scrubHost(h), host),
    log,
  );
  // read once, bounded (a FIFO or /dev/zero there hung the gateway): for the proxy and the bundle
  const userExtraCa = readCaBundle("NODE_EXTRA_CA_CERTS", env.NODE_EXTRA_CA_CERTS, (line) =>
    log.warn(`${line}; upstreams are verified against Node's roots only`),
  );
  const extraCa = userExtraCa || undefined;
  let proxy: EgressProxy;
  try {
    proxy = await startEgressProxy({
      stateDir,
      credentials: http,
      mode: server.egress ?? "record",
      calls: o.calls,
      extraCa,
      timeoutMs: envMs("PORTCULLIS_EGRESS_TIMEOUT_MS", 30_000),
      onRecord: (r) => recorder.record(r),
      onReleaseRecord: (r) =>
        o.events.emit({
          type: "credential_released",
          serverLabel: server.label,
          epoch: r.epoch,
          deliver: "http",
          scopes: [r.scope],
          host: r.host,
          call: r.call,
          ...(r.callKey !== undefined ? { callKey: r.callKey } : {}),
        }),
      // a server that echoes a released value back never shows it to the client
      onReleased: (scope, value) => o.released.add(scope, value),
      log,
      shownHost: (host) => scrubbedOr((h) => o.released.scrubHost(h), host),
    });
  } catch (e) {
    throw new EgressStartError(`the egress proxy could not start: ${(e as Error).message}`);
  }
  const caFile = caCertPath(stateDir);
  let caPem: string | null = null;
  try {
    caPem = readFileSync(caFile, "utf8");
  } catch {
    if (http.length > 0)
      log.warn(
        `no local CA yet (${caFile}): HTTPS to declared hosts is tunnelled unread; an unlock with a secret stored for HTTP delivery makes it (${quotedCommand("unlock", stateDir)}), then restart the gateway`,
      );
  }
  const declared = [...new Set(http.flatMap((c) => c.hosts))];
  const built = egressEnv({
    base: env,
    proxyUrl: proxy.url,
    caPem,
    dir: join(stateDir, "egress", o.gatewayId),
    declaredHosts: declared,
    extraCa: userExtraCa,
    warn: (line) => log.warn(line),
  });
  log.status(
    `egress proxy on ${proxy.url}${declared.length ? ` (credentials released only to ${declared.join(", ")})` : ""}${server.egress === "declared-only" ? "; other hosts refused" : ""}`,
  );
  let closed: Promise<void> | null = null;
  return {
    env: built.env,
    url: proxy.url,
    epochStarted: (epoch) => recorder.epochStarted(epoch),
    close: (c) => {
      closed ??= (async () => {
        await proxy.close();
        recorder.close(c);
        built.cleanup();
      })();
      return closed;
    },
  };
}
