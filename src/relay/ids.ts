import type { Id } from "./jsonrpc.js";

/**
 * An id's JSON text, as `JSON.stringify` writes it: a finite number's is its `String` (the same
 * text by JSON's definition), which spares a call into the serialiser on every relayed message.
 */
export function idJson(id: Id): string {
  return typeof id === "number" && Number.isFinite(id) ? String(id) : JSON.stringify(id);
}

/** Key for a peer's id: 1 and "1" are different ids. */
export function idKey(id: Id): string {
  return typeof id === "number" ? `n:${id}` : `s:${id}`;
}

/**
 * Ids the gateway puts on the wire toward one peer. They are its own counter,
 * so the gateway's own requests and remapped ones can never collide, and a
 * replaced worker never receives an id that an older one still owes.
 */
export class IdMap<T> {
  private next = 1;
  /**
   * Each map holds one entry that names nothing, so that it never empties: wire id 0 (`next`
   * starts at 1) and peer key "" (`idKey` never makes it). V8 gives a Map whose last entry is
   * deleted a new table (it shrinks one with under a quarter of its slots in use), and with one
   * request at a time that was every answer, in both maps.
   */
  private readonly byWire = new Map<number, T | undefined>([[0, undefined]]);
  private readonly byPeer = new Map<string, number>([["", 0]]);

  /** `dropped`: told of each entry deleted, for an index kept beside the map (InFlight's tokens). */
  constructor(private readonly dropped?: (entry: T) => void) {}

  /**
   * A new wire id for `entry`, found again by `peerId` when given. A peer id that still names a
   * live entry is never taken over: the older request's answer or cancellation would reach the
   * newer one, and its own end would be lost. Callers refuse such a request before it gets
   * here; reaching this is a bug, so it throws rather than overwrite.
   */
  add(entry: T, peerId?: Id): number {
    // (the key made once: every relayed request comes here)
    const key = peerId === undefined ? undefined : idKey(peerId);
    if (key !== undefined && this.byPeer.has(key))
      throw new Error(`peer id ${JSON.stringify(peerId)} already names an entry in flight`);
    const wire = this.next++;
    this.byWire.set(wire, entry);
    if (key !== undefined) this.byPeer.set(key, wire);
    return wire;
  }
  get(wire: Id | null): T | undefined {
    return typeof wire === "number" ? this.byWire.get(wire) : undefined;
  }
  wireFor(peerId: Id): number | undefined {
    return this.byPeer.get(idKey(peerId));
  }
  delete(wire: number, peerId?: Id): void {
    const entry = this.byWire.get(wire);
    if (entry !== undefined && this.byWire.delete(wire)) this.dropped?.(entry);
    if (peerId === undefined) return;
    const key = idKey(peerId);
    if (this.byPeer.get(key) === wire) this.byPeer.delete(key);
  }
  /**
   * `peerId` no longer finds the entry at `wire`, which stays (its wire id is still owed an
   * answer): the peer may use the id again, and the late answer still reaches only this entry.
   */
  release(wire: number, peerId: Id): void {
    if (this.byPeer.get(idKey(peerId)) === wire) this.byPeer.delete(idKey(peerId));
  }
  entries(): [number, T][] {
    const out: [number, T][] = [];
    for (const [wire, entry] of this.byWire) if (entry !== undefined) out.push([wire, entry]);
    return out;
  }
  get size(): number {
    return this.byWire.size - 1;
  }
}

/**
 * Key for a peer's id as it wrote it (`writtenIdOf`): a number by its text, since JSON.parse makes
 * 9007199254740993 and 9007199254740992 (or 1e2 and 100) one number, a string by its value (a
 * string's escapes do not make another id). Used as the peer id of an `IdMap` entry.
 */
export function writtenIdKey(id: Id, written: string): string {
  return typeof id === "number" ? `n:${written}` : `s:${id}`;
}
