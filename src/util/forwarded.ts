import type { IncomingHttpHeaders } from "node:http";

/**
 * The headers a proxy adds when it passes a request on. The console and `run --listen` check
 * `Host` against their own loopback address (DNS rebinding), and a reverse proxy on this machine
 * that rewrites `Host` to theirs (a dev server's proxy with "change origin") would pass a rebound
 * page's request on with an allowed Host: only these headers would still say where it came from.
 * Neither server is meant to sit behind a proxy (`run --listen` identifies its client by the
 * connecting socket, which would be the proxy's), so a request carrying one is refused rather
 * than its value weighed: a browser or an MCP client talking to them directly never sends one.
 */
function isForwarding(name: string): boolean {
  return (
    name === "forwarded" || name === "x-real-ip" || (name.startsWith("x-forwarded-") && name.length > 12)
  );
}

/** The first forwarding header of a request, as clients commonly spell it, or null when none. */
export function forwardingHeader(headers: IncomingHttpHeaders): string | null {
  for (const name of Object.keys(headers)) {
    if (!isForwarding(name)) continue;
    return name
      .split("-")
      .map((w) => (w === "ip" ? "IP" : w.charAt(0).toUpperCase() + w.slice(1)))
      .join("-");
  }
  return null;
}
