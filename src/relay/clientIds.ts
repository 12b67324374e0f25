import { randomBytes } from "node:crypto";
import { rawBatchIdsOf, rawIdOf, rawRequestIdOf } from "./idScan.js";
import { idJson } from "./ids.js";
import type { Classified, Id } from "./jsonrpc.js";

/** Whether a request the gateway holds under this id (a stand-in or the id itself) is still open. */
export type IsOpen = (held: Id) => boolean;

/** Stand-ins remembered before the first sweep of those whose request ended (see `requestId`). */
const FIRST_SWEEP = 64;

/**
 * Keeps a client's request ids byte-exact. `JSON.parse` rounds a number above
 * 2^53 (9007199254740993 becomes …992) and forgets how a number or string was
 * spelled (`1.0`, `"\u0041"`); a client matches answers by its own id, so the
 * id must go back exactly as it came.
 *
 * An id whose text would not survive a parse/serialize round trip is replaced,
 * inside the gateway, by a stand-in string that carries the original text
 * behind a per-process random prefix (no peer can forge one); the transport
 * writes the original text back where the stand-in appears as a whole JSON
 * string. Ordinary ids (small integers, plain strings) are left alone.
 *
 * A cancellation names its request by the same id, but JSON does not make the
 * client spell it the same way twice: `"a\/b"` and `"a/b"` are one string, `1.0`
 * and `1` one number. So the stand-in of each open request is also remembered by
 * the id it stands for (`sameIdKey`), and a cancellation that names that id, however
 * spelled, is given the request's stand-in.
 */
export class ClientIds {
  private readonly prefix = `portcullis-raw-id/${randomBytes(8).toString("hex")}/`;
  /** the stand-in as it appears in serialized JSON, up to the raw text */
  private readonly needle = JSON.stringify(this.prefix).slice(0, -1);
  /**
   * Whether any stand-in was ever made: until then no message can hold one (the prefix is this
   * process's secret), and `restore` need not search every message written to the client.
   */
  private issued = false;

  /** Stand-ins given to requests, by the id they stand for (`sameIdKey`), until swept. */
  private readonly given = new Map<string, string>();
  private sweepAt = FIRST_SWEEP;

  /**
   * Swaps the message's id (and a cancellation's requestId) for stand-ins where needed. `rawId`:
   * the id's text when the caller already found it (else it is scanned for here). `isOpen`: which
   * of the requests it gave stand-ins to are still open (a cancellation finds only those).
   */
  adopt(c: Classified, text: string, rawId: string | undefined, isOpen: IsOpen): Classified {
    if (c.kind === "invalid") {
      if (c.batch !== undefined) return this.batchIds(c, text);
      if (c.id === null) return c;
      return { ...c, id: this.standIn(c.id, rawIdOf(text)) };
    }
    if (c.kind === "notification") {
      const params = c.msg.params as { requestId?: unknown } | undefined;
      const given = params?.requestId;
      if (
        c.msg.method !== "notifications/cancelled" ||
        (typeof given !== "number" && typeof given !== "string")
      )
        return c;
      const requestId = this.cancelledId(given, text, isOpen);
      return requestId === given ? c : { ...c, msg: { ...c.msg, params: { ...params, requestId } } };
    }
    if (c.kind === "response") {
      const id = c.msg.id;
      if (id === null) return c;
      const adopted = this.standIn(id, rawId ?? rawIdOf(text));
      return adopted === id ? c : { ...c, msg: { ...c.msg, id: adopted } };
    }
    const id = c.msg.id;
    const adopted = this.requestId(id, rawId ?? rawIdOf(text), isOpen);
    return adopted === id ? c : { ...c, msg: { ...c.msg, id: adopted } };
  }

  /**
   * A batch's ids as the client wrote them: a number JSON.parse rounds (beyond 2^53) gets its
   * stand-in, read from its request's text in the array, so that its refusal goes back under
   * that id (never under the rounded one, another request's) and an open request's stand-in is
   * recognised. Two requests of the batch written with the same id are refused once. The array
   * is scanned only when such a number is in it.
   */
  private batchIds(c: Extract<Classified, { kind: "invalid" }>, text: string): Classified {
    const batch = c.batch ?? [];
    const at = c.batchAt;
    if (at === undefined || !batch.some((id) => typeof id === "number" && !Number.isSafeInteger(id)))
      return c;
    const raws = rawBatchIdsOf(text, at[at.length - 1] ?? 0);
    const seen = new Set<string>();
    const ids: Id[] = [];
    batch.forEach((id, i) => {
      const held =
        typeof id === "number" && !Number.isSafeInteger(id) ? this.standIn(id, raws[at[i]!] ?? null) : id;
      const key = `${typeof held}:${String(held)}`;
      if (seen.has(key)) return;
      seen.add(key);
      ids.push(held);
    });
    return { ...c, batch: ids };
  }

  /**
   * The id a request is held under (`standIn`), its stand-in remembered for a cancellation. Those
   * of requests that ended are swept out once as many again were made since the last sweep, so
   * what is kept stays within twice what is open (plus a few), with no hook on a request's end.
   */
  requestId(id: Id, raw: string | null, isOpen: IsOpen): Id {
    const held = this.standIn(id, raw);
    if (held === id || raw === null || typeof held !== "string") return held;
    const key = sameIdKey(id, raw);
    if (key === null) return held;
    if (this.given.size >= this.sweepAt) {
      for (const [k, s] of this.given) if (!isOpen(s)) this.given.delete(k);
      this.sweepAt = Math.max(FIRST_SWEEP, 2 * this.given.size);
    }
    // an open request under this id, spelled otherwise, keeps it: this one is refused (in use)
    const before = this.given.get(key);
    if (before === undefined || before === held || !isOpen(before)) this.given.set(key, held);
    return held;
  }

  /**
   * Whether a request held under another id than `held` is open under the same id as JSON means
   * it (`sameIdKey`): `1.0` and `1`, `"a\/b"` and `"a/b"` are one id, and a cancellation naming
   * it could not tell them apart. The other is a stand-in (`given`) or the id's plain spelling,
   * held as itself.
   */
  sameIdOpen(held: Id, isOpen: IsOpen): boolean {
    const stood = this.standInText(held);
    // An id held as itself (no stand-in) reads back as itself: the plain spelling below is `held`,
    // so only a stand-in in `given` could be open under it, and with none given there is none.
    // (Keying a number is a regex and two BigInts: most of a relayed ping's id work.)
    if (stood === null && this.given.size === 0) return false;
    const raw = stood ?? JSON.stringify(held);
    const value = JSON.parse(raw) as Id;
    const key = sameIdKey(value, raw);
    if (key === null) return false;
    const other = this.given.get(key);
    if (other !== undefined && other !== held && isOpen(other)) return true;
    // the plain spelling, when it is this id (…993's is …992, another id)
    return value !== held && sameIdKey(value, JSON.stringify(value)) === key && isOpen(value);
  }

  /**
   * The id a cancellation's `params.requestId` (as parsed) names the request by: the stand-in of
   * an open request with that id however either spelled it, else the id as parsed when that is
   * the id the client wrote (a number whose text it rounds, `9007199254740993`, is not
   * …992: it gets a stand-in of its own, which names no other request). `text`: the
   * cancellation as written, for a number's text.
   */
  cancelledId(requestId: Id, text: string | undefined, isOpen: IsOpen): Id {
    const raw =
      typeof requestId === "string"
        ? JSON.stringify(requestId)
        : text === undefined
          ? null
          : rawRequestIdOf(text);
    const key = raw === null ? null : sameIdKey(requestId, raw);
    const held = key === null ? undefined : this.given.get(key);
    if (held !== undefined && isOpen(held)) return held;
    if (typeof requestId === "string" || raw === null) return requestId;
    return key === sameIdKey(requestId, JSON.stringify(requestId)) ? requestId : this.standIn(requestId, raw);
  }

  /** The stand-in for an id whose raw text differs from its serialized value; else the id. */
  standIn(id: Id, raw: string | null): Id {
    if (raw === null || idJson(id) === raw) return id;
    // the text must be of this very id (a message with two "id" members is read by its last one)
    if (JSON.parse(raw) !== id) return id;
    this.issued = true;
    return this.prefix + raw;
  }

  /** The client's text of an id the gateway holds when that is a stand-in (else the id's JSON is). */
  standInText(held: Id): string | null {
    return this.issued && typeof held === "string" && held.startsWith(this.prefix)
      ? held.slice(this.prefix.length)
      : null;
  }

  /** Writes original id texts back into one serialized message. */
  restore(json: string): string {
    if (!this.issued) return json;
    let at = json.indexOf(this.needle);
    if (at === -1) return json;
    let out = "";
    let from = 0;
    while (at !== -1) {
      const end = endOfJsonString(json, at);
      if (end === -1) break;
      const value = JSON.parse(json.slice(at, end)) as string;
      out += json.slice(from, at) + value.slice(this.prefix.length);
      from = end;
      at = json.indexOf(this.needle, from);
    }
    return out + json.slice(from);
  }
}

/** Index just past the closing quote of the JSON string starting at `start`, or -1. */
function endOfJsonString(json: string, start: number): number {
  for (let i = start + 1; i < json.length; i++) {
    const ch = json.charCodeAt(i);
    if (ch === 0x5c) i++;
    else if (ch === 0x22) return i + 1;
  }
  return -1;
}

/** The raw text of a cancellation's `params.requestId` when it is a number (see `rawRequestIdOf`). */
export function rawRequestId(text: string): string | null {
  const raw = rawRequestIdOf(text);
  return raw !== null && raw.charCodeAt(0) !== 0x22 ? raw : null;
}

/** Longest number text given a key: the id scanner keeps no longer id either. */
const MAX_NUMBER_TEXT = 1024;
const NUMBER = /^(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;

/**
 * One key per id as JSON means it, whatever its spelling: a string by its value (escapes do not
 * make another string), a number by the exact number its text writes, not by the double
 * `JSON.parse` rounds it to (`1.0`, `1e0` and `1` are one id; `9007199254740993` and
 * `9007199254740992` are two). `raw`: the id's JSON text, which must be of `value`; null when it
 * is not, or is a number text too long to be an id.
 */
export function sameIdKey(value: Id, raw: string): string | null {
  if (typeof value === "string") return `s:${value}`;
  if (raw.length > MAX_NUMBER_TEXT) return null;
  const m = NUMBER.exec(raw);
  if (!m || Number(raw) !== value) return null;
  // the decimal digits and the power of ten they are scaled by, without leading or trailing zeros
  const frac = m[3] ?? "";
  let digits = (m[2]! + frac).replace(/^0+/, "");
  if (digits === "") return "n:0"; // -0 is 0
  let exp = BigInt(m[4] ?? "0") - BigInt(frac.length);
  const trimmed = digits.replace(/0+$/, "");
  exp += BigInt(digits.length - trimmed.length);
  digits = trimmed;
  return `n:${m[1]}${digits}e${exp}`;
}

/**
 * The key a request is found under by a cancellation (`sameIdKey`): from the id's text when it is
 * known, else from its value. A number whose text gives no key (longer than an id may be, or not
 * the text of that value) is keyed by the text itself, so only the same text names it: never a
 * rounded neighbour.
 */
export function idKeyOf(value: Id, raw: string | null): string {
  const text = raw ?? JSON.stringify(value);
  return sameIdKey(value, text) ?? `t:${text}`;
}

/** The text of a cancellation's `params.requestId`, for `idKeyOf` (a string's spelling does not matter). */
export function cancelledIdText(requestId: Id, text: string | undefined): string | null {
  if (typeof requestId === "string" || text === undefined) return null;
  return rawRequestId(text);
}
