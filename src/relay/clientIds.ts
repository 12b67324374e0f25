import { randomBytes } from "node:crypto";
import { rawIdOf } from "./idScan.js";
import type { Classified, Id } from "./jsonrpc.js";

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

  /**
   * Swaps the message's id (and a cancellation's requestId) for stand-ins where needed. `rawId`:
   * the id's text when the caller already found it (else it is scanned for here).
   */
  adopt(c: Classified, text: string, rawId?: string): Classified {
    if (c.kind === "invalid") {
      if (c.id === null) return c;
      return { ...c, id: this.standIn(c.id, rawIdOf(text)) };
    }
    if (c.kind === "notification") {
      const params = c.msg.params as { requestId?: unknown } | undefined;
      if (c.msg.method !== "notifications/cancelled" || typeof params?.requestId !== "number") return c;
      const requestId = this.cancelledId(params.requestId, text);
      return requestId === params.requestId
        ? c
        : { ...c, msg: { ...c.msg, params: { ...params, requestId } } };
    }
    const id = c.msg.id;
    if (id === null) return c;
    const adopted = this.standIn(id, rawId ?? rawIdOf(text));
    return adopted === id ? c : ({ ...c, msg: { ...c.msg, id: adopted } } as Classified);
  }

  /** The stand-in for a cancellation's `params.requestId` (as parsed), read from its text. */
  cancelledId(requestId: Id, text: string): Id {
    return typeof requestId === "number" ? this.standIn(requestId, rawRequestId(text)) : requestId;
  }

  /** The stand-in for an id whose raw text differs from its serialized value; else the id. */
  standIn(id: Id, raw: string | null): Id {
    if (raw === null || JSON.stringify(id) === raw) return id;
    // the text must be of this very id (a message with two "id" members is read by its last one)
    if (JSON.parse(raw) !== id) return id;
    this.issued = true;
    return this.prefix + raw;
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

/** The raw text of a cancellation's numeric `params.requestId` (a small message: a pattern will do). */
export function rawRequestId(text: string): string | null {
  const m = /"requestId"\s*:\s*(-?[0-9][0-9.eE+-]*)/.exec(text);
  return m ? m[1]! : null;
}
