/**
 * `obj[key] = value` for a key a user, a client or a server chose: an own, enumerable entry even
 * when the key is "__proto__", which a plain assignment takes as the object's prototype and drops
 * (arguments `{"__proto__": {…}}` vanished from a review while the server received them; a tool
 * named "__proto__" given "per-call" ran with the default mode). Every copy of such an object
 * goes through it.
 */
export function setOwn<T>(obj: Record<string, T>, key: string, value: T): void {
  // A key found nowhere on the object or its prototypes (no setter, no entry to keep the
  // attributes of) is made by an assignment exactly as defineProperty makes it, many times
  // faster: defineProperty on every key of a copy (a 12 MB catalog's redacted inventory, its
  // audit record) cost seconds of a re-list. Any other key ("__proto__", "constructor", one the
  // object has) is defined.
  if (key !== "__proto__" && !(key in obj)) obj[key] = value;
  else Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}
