import type { CredentialSpec } from "../credentials.js";
import type { HolderClient } from "./holderClient.js";
import { type Destination, destinationText, hostMatches } from "./hosts.js";

/**
 * The release rule, per request to a declared host: each placeholder in the URL or a header is
 * replaced by its value only when the scope is an HTTP-delivered credential of this server that
 * declares the destination, a call of the current epoch covering the scope is in flight, and the
 * holder (unlocked, its stored policy naming the host) hands the value out. Otherwise it stays.
 * The value lives only in the rewritten request: nothing here keeps it.
 */

const PLACEHOLDER = /portcullis-placeholder(?::|%3[aA])([A-Za-z0-9][A-Za-z0-9._-]{0,127})/g;

interface Options {
  credentials: readonly CredentialSpec[];
  /** the current epoch and the calls in flight, with the scopes each may have released */
  calls(): {
    epoch: string | null;
    inFlight: Iterable<{ callId: string; epoch: string; scopes: readonly string[] }>;
  };
  onReleased?(scope: string, value: string): void;
  onReleaseRecord?(r: { scope: string; host: string; call: string; epoch: string }): void;
  holder: HolderClient;
}

/** Replaces the placeholders it may in `parts` (in place); says what was released and what was left. */
export function releaser(o: Options) {
  const holder = o.holder;
  return async (
    dest: Destination,
    parts: { url: string; headers: string[] },
  ): Promise<{ released: string[]; withheld: string[]; call: string | null; epoch: string | null }> => {
    const seen = new Set<string>();
    for (const text of [parts.url, ...parts.headers])
      for (const m of text.matchAll(PLACEHOLDER)) seen.add(m[1]!);
    const window = o.calls();
    const out = {
      released: [] as string[],
      withheld: [] as string[],
      call: null as string | null,
      epoch: window.epoch,
    };
    if (seen.size === 0) return out;
    const inFlight = [...window.inFlight];
    for (const scope of [...seen].sort()) {
      const spec = o.credentials.find((c) => c.secret === scope && c.deliver === "http");
      const call = inFlight.find((c) => c.epoch === window.epoch && c.scopes.includes(scope));
      let value: string | null = null;
      if (spec && call && hostMatches(spec.hosts, dest)) {
        const r = await holder.ask({ op: "release-http", scope, host: destinationText(dest) });
        if (r?.ok === true && typeof r.value === "string") value = r.value;
      }
      if (value === null || !call) {
        out.withheld.push(scope);
        continue;
      }
      const re = new RegExp(
        `portcullis-placeholder(?::|%3[aA])${scope.replace(/[.]/g, "\\.")}(?![A-Za-z0-9._-])`,
        "g",
      );
      parts.url = parts.url.replace(re, () => encodeURIComponent(value));
      parts.headers = parts.headers.map((h) => h.replace(re, () => value));
      out.released.push(scope);
      out.call = call.callId;
      o.onReleased?.(scope, value);
      o.onReleaseRecord?.({ scope, host: destinationText(dest), call: call.callId, epoch: call.epoch });
    }
    return out;
  };
}
