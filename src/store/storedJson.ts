/**
 * Reading a JSON column of the store. Any process of the user can write any column of the
 * embedded store (`{`, `null`, a number where a list was): a reader that parsed such a column
 * unprotected threw, and one damaged row stopped a command (exit 70, "internal error") or a
 * gateway's call. Readers parse through here instead: they get the value, or one phrase naming
 * the table and column and what is wrong with it, and then treat the row as granting nothing
 * (deny first) while the other rows keep working.
 */

/** What a column must hold to be read: a test and, for the message, its name in words. */
export interface StoredShape<T> {
  is: (v: unknown) => v is T;
  /** "a list of names", "an object"… */
  words: string;
}

export type StoredJson<T> = { ok: true; value: T } | { ok: false; why: string };

/** Longest part of a damaged column's parse error repeated in a message. */
const WHY_CHARS = 120;

/** `text` (the column `table.column`) parsed, when it is JSON of `shape`; else why not. */
export function storedJson<T>(
  text: unknown,
  table: string,
  column: string,
  shape: StoredShape<T>,
): StoredJson<T> {
  const where = `${table}.${column}`;
  if (typeof text !== "string") return { ok: false, why: `${where} holds no text` };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    const m = e instanceof Error ? e.message : String(e);
    return {
      ok: false,
      why: `${where} is not JSON (${m.length > WHY_CHARS ? `${m.slice(0, WHY_CHARS)}…` : m})`,
    };
  }
  return shape.is(value) ? { ok: true, value } : { ok: false, why: `${where} is not ${shape.words}` };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export const LIST_OF_NAMES: StoredShape<string[]> = {
  is: (v): v is string[] => Array.isArray(v) && v.every((x) => typeof x === "string"),
  words: "a list of names",
};

export const AN_OBJECT: StoredShape<Record<string, unknown>> = { is: isObject, words: "an object" };

/** A list of objects each with a string `name` (tool scopes, a catalog's tools). */
export const LIST_OF_NAMED: StoredShape<{ name: string }[]> = {
  is: (v): v is { name: string }[] =>
    Array.isArray(v) && v.every((x) => isObject(x) && typeof x.name === "string"),
  words: "a list of named entries",
};

export const LIST_OF_OBJECTS: StoredShape<Record<string, unknown>[]> = {
  is: (v): v is Record<string, unknown>[] => Array.isArray(v) && v.every(isObject),
  words: "a list of objects",
};

/** An object whose every value is an object or null (a grant's tool definitions by name). */
export const OBJECTS_BY_NAME: StoredShape<Record<string, Record<string, unknown> | null>> = {
  is: (v): v is Record<string, Record<string, unknown> | null> =>
    isObject(v) && Object.values(v).every((x) => x === null || isObject(x)),
  words: "tool definitions by name",
};
