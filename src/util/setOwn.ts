/**
 * `obj[key] = value` for a key a user, a client or a server chose: an own, enumerable entry even
 * when the key is "__proto__", which a plain assignment takes as the object's prototype and drops
 * (arguments `{"__proto__": {…}}` vanished from a review while the server received them; a tool
 * named "__proto__" given "per-call" ran with the default mode). Every copy of such an object
 * goes through it.
 */
export function setOwn<T>(obj: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}
