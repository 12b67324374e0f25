import type { CredentialSpec } from "../credentials.js";
import { type Spelling, spellingsOf } from "./echo.js";
import type { HolderClient } from "./holderClient.js";
import { type Destination, destinationText, hostMatches } from "./hosts.js";

/**
 * The release rule, per request to a declared host: each placeholder in the URL or a header is
 * replaced by its value only when the scope is an HTTP-delivered credential of this server that
 * declares the destination, a call of the current epoch covering the scope is in flight, and the
 * holder (unlocked, its stored policy naming the host) hands the value out. Otherwise it stays.
 *
 * The holder is asked once per (call, scope, destination), not per request: its answer is kept
 * for that call only, and used again only while
 * - that very call is still in flight, in the epoch it was released in (the window is read
 *   again for every request, and entries of calls that ended or of an old epoch are dropped);
 * - the holder's socket file is the one that answered, unchanged: `lock` and expiry remove it
 *   before `lock` gets its answer, and a secret stored or removed while unlocked changes its
 *   modification time (the holder's generation, sent with each value), so a request read after
 *   any of them finds the mark changed, drops every kept value and asks again (one `stat`); the
 *   holder also says so on the connection it released the value on (`onChanged`), which another
 *   process setting the file's time back cannot undo;
 * - the connection to the holder is open (a holder that goes away drops them all).
 *
 * Apart from those, every value released for a call is remembered (`given`) until that call ends
 * or the epoch changes, whatever the holder does meanwhile (a value already sent stays sent): while
 * one is, every answer the proxy reads is scrubbed of it (echoes, exchange.ts, proxy.ts), from any
 * host, the answers to requests that carried no placeholder too. An upstream may hand the key back
 * to any request of the call, not only to the one that carried it; and another host of the same
 * service (declared for this scope or another, or not at all) may hold it for the account too.
 */

const PLACEHOLDER = /portcullis-placeholder(?::|%3[aA])([A-Za-z0-9][A-Za-z0-9._-]{0,127})/g;

interface InFlight {
  callId: string;
  /** the call's `callKey` in the audit, carried by what is recorded of a release for it */
  callKey?: number;
  epoch: string;
  scopes: readonly string[];
  /** unique per forwarded call in this gateway (a client may use one request id twice) */
  key?: string;
}

interface Options {
  credentials: readonly CredentialSpec[];
  /** the current epoch and the calls in flight, with the scopes each may have released */
  calls(): { epoch: string | null; inFlight: Iterable<InFlight> };
  onReleased?(scope: string, value: string): void;
  onReleaseRecord?(r: { scope: string; host: string; call: string; callKey?: number; epoch: string }): void;
  holder: HolderClient;
}

export interface Released {
  released: string[];
  withheld: string[];
  call: string | null;
  /** the `callKey` of the call released for (with `call`), when the gateway named one */
  callKey?: number;
  epoch: string | null;
}

interface Kept {
  value: string;
  call: string;
  epoch: string;
  /** the holder's generation when it released the value (its socket file's mtime, in seconds) */
  generation: number;
}

/** Whether a request head holds a placeholder at all (the common case is no). */
export function hasPlaceholder(text: string): boolean {
  return text.includes("portcullis-placeholder");
}

/** What a kept value is filed under: the call, unique in this gateway (its wire id), else its id text. */
const keptKey = (c: InFlight) => c.key ?? c.callId;

/** A scope's placeholder, in a header or URL-encoded in the URL (made once per scope). */
const placeholders = new Map<string, RegExp>();
function placeholderOf(scope: string): RegExp {
  let re = placeholders.get(scope);
  if (!re) {
    re = new RegExp(
      `portcullis-placeholder(?::|%3[aA])${scope.replace(/[.]/g, "\\.")}(?![A-Za-z0-9._-])`,
      "g",
    );
    placeholders.set(scope, re);
  }
  return re;
}

/** Replaces the placeholders it may in `parts` (in place); says what was released and what was left. */
export function releaser(o: Options) {
  const holder = o.holder;
  const kept = new Map<string, Kept>();
  const forget = () => kept.clear();
  /** call key, scope, host → the value released for that call: kept until the call ends */
  const given = new Map<string, { value: string; scope: string; host: string; epoch: string }>();
  /** the spellings of every value given (echoes), made again when `given` changes; undefined: not made */
  let spellings: Spelling[] | null | undefined;
  const forgetGiven = (k: string) => {
    if (given.delete(k)) spellings = undefined;
  };
  holder.onGone(forget);
  // a secret stored or removed, as the holder says it: a file's time set back cannot hide that
  holder.onChanged(forget);
  // values of calls that ended are dropped even when no request comes to notice it
  let sweeper: NodeJS.Timeout | null = null;
  const sweepSoon = () => {
    if (sweeper) return;
    sweeper = setInterval(() => {
      sweep(o.calls());
      if (kept.size === 0 && given.size === 0 && sweeper) {
        clearInterval(sweeper);
        sweeper = null;
      }
    }, 1000);
    sweeper.unref();
  };
  const sweep = (window: { epoch: string | null; inFlight: Iterable<InFlight> }): InFlight[] => {
    const inFlight = [...window.inFlight];
    if (kept.size === 0 && given.size === 0) return inFlight;
    const live = new Set(inFlight.filter((c) => c.epoch === window.epoch).map(keptKey));
    for (const [k, v] of kept)
      if (v.epoch !== window.epoch || !live.has(k.slice(0, k.indexOf("\n")))) kept.delete(k);
    for (const [k, v] of given)
      if (v.epoch !== window.epoch || !live.has(k.slice(0, k.indexOf("\n")))) forgetGiven(k);
    return inFlight;
  };

  /** `parts.values`, when given, is told each value put in (for headWithoutValues; never recorded) */
  const release = async (
    dest: Destination,
    parts: { url: string; headers: string[]; values?: Map<string, string> },
  ): Promise<Released> => {
    const seen = new Set<string>();
    for (const text of [parts.url, ...parts.headers])
      if (hasPlaceholder(text)) for (const m of text.matchAll(PLACEHOLDER)) seen.add(m[1]!);
    const window = o.calls();
    const out: Released = { released: [], withheld: [], call: null, epoch: window.epoch };
    if (seen.size === 0) return out;
    const inFlight = sweep(window);
    // lock, expiry, a secret stored or removed: the holder's mark changed, nothing kept is good
    if (kept.size > 0) {
      const mark = holder.generation();
      for (const [k, v] of kept) if (v.generation !== mark) kept.delete(k);
    }
    const host = destinationText(dest);
    for (const scope of [...seen].sort()) {
      const spec = o.credentials.find((c) => c.secret === scope && c.deliver === "http");
      const call = inFlight.find((c) => c.epoch === window.epoch && c.scopes.includes(scope));
      let value: string | null = null;
      if (spec && call && hostMatches(spec.hosts, dest)) {
        const k = `${keptKey(call)}\n${scope}\n${host}`;
        value = kept.get(k)?.value ?? null;
        if (value === null) {
          // `changes`: this client understands the holder's `{"changed":N}` lines (`onChanged`)
          const r = await holder.ask({ op: "release-http", scope, host, changes: true });
          if (r?.ok === true && typeof r.value === "string") {
            value = r.value;
            o.onReleased?.(scope, value);
            o.onReleaseRecord?.({
              scope,
              host,
              call: call.callId,
              ...(call.callKey !== undefined ? { callKey: call.callKey } : {}),
              epoch: call.epoch,
            });
            // a holder that sends no generation cannot say when a value stops being good: ask each time
            if (typeof r.generation === "number") {
              kept.set(k, { value, call: call.callId, epoch: call.epoch, generation: r.generation });
              sweepSoon();
            }
          }
        }
      }
      if (value === null || !call) {
        out.withheld.push(scope);
        continue;
      }
      const k = `${keptKey(call)}\n${scope}\n${host}`;
      if (given.get(k)?.value !== value) {
        given.set(k, { value, scope, host, epoch: call.epoch });
        spellings = undefined;
        sweepSoon();
      }
      const re = placeholderOf(scope);
      const v = value;
      parts.url = parts.url.replace(re, () => encodeURIComponent(v));
      parts.headers = parts.headers.map((h) => (hasPlaceholder(h) ? h.replace(re, () => v) : h));
      parts.values?.set(scope, v);
      out.released.push(scope);
      out.call = call.callId;
      if (call.callKey !== undefined) out.callKey = call.callKey;
    }
    return out;
  };
  /**
   * The spellings of every value released for a call still in flight in the current epoch, to
   * whichever host (echo.ts), or null when there is none: what every answer the proxy reads is
   * scrubbed of, whatever host it comes from. A value is the vault's, sent to the hosts its policy
   * names; a host it was not sent to may still hold it (another host of the same service, which
   * keeps the account's keys) and hand it back, and the server reads every answer alike.
   */
  const echoes = (): Spelling[] | null => {
    if (given.size === 0) return null;
    sweep(o.calls());
    if (spellings === undefined) {
      // (a scope released for two calls has one value; should they differ, both are looked for)
      const values: [string, string][] = [];
      for (const v of given.values())
        if (!values.some(([sc, va]) => sc === v.scope && va === v.value)) values.push([v.scope, v.value]);
      spellings = values.length === 0 ? null : spellingsOf(values);
    }
    return spellings;
  };
  return Object.assign(release, {
    echoes,
    close() {
      if (sweeper) clearInterval(sweeper);
      sweeper = null;
      forget();
      given.clear();
      spellings = undefined;
    },
  });
}
