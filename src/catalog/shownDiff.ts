/**
 * A catalog diff as it is shown (`catalog diff`, text and --json): every piece that came from the
 * server redacted on its own, never the rendered text as a whole.
 *
 * Redacting the rendered text read the diff's own structure as secrets: `name: value` after a
 * secret-like name is a credential in free text, so `inputSchema.properties.passwordLength:
 * property added` became `…passwordLength: [redacted] added`, `secret_key now required` lost its
 * `required` and `api_token: default "…"` its `default`, and `Token` followed by a word hid that
 * word (a tool named `token`: `token  expands`). Here each tool name, path, change and value is
 * redacted alone (redactText; values also by their keys, as redactSchemaDefaults already did for
 * the defaults of secret-like properties), and a detail line's property name apart from what
 * follows it. The classification is the diff's, made on the tools as the server listed them.
 */

import { isSecretName, REDACTED, redactText, redactValueUnder } from "../util/redact.js";
import { setOwn } from "../util/setOwn.js";
import { fieldName } from "./schemaPath.js";
import type { CatalogDiff, FieldChange } from "./types.js";

export function shownDiff(d: CatalogDiff): CatalogDiff {
  return {
    ...d,
    entries: d.entries.map((e) => ({
      ...e,
      tool: redactText(e.tool),
      ...(e.renameCandidate === undefined ? {} : { renameCandidate: redactText(e.renameCandidate) }),
      changes: e.changes.map(shownChange),
    })),
    renameCandidates: d.renameCandidates.map((r) => ({
      from: redactText(r.from),
      to: redactText(r.to),
      similarity: redactText(r.similarity),
    })),
  };
}

function shownChange(c: FieldChange): FieldChange {
  const out: FieldChange = { ...c, path: redactText(c.path), change: redactText(c.change) };
  // a value under a secret-like name goes whole, the property the path names included: the
  // gateway writes its diffs so already, but the store can be rewritten by any process of the user
  const under = fieldName(c.path) || null;
  if (c.before !== undefined) out.before = shownValue(redactValueUnder(under, c.before));
  if (c.after !== undefined) out.after = shownValue(redactValueUnder(under, c.after));
  if (c.detail !== undefined) out.detail = shownDetail(c.detail, c.path);
  return out;
}

/** A value: every string in it as text, keys included (a key is the server's too). */
function shownValue(v: unknown): unknown {
  if (typeof v === "string") return redactText(v);
  if (Array.isArray(v)) return v.map(shownValue);
  if (typeof v !== "object" || v === null) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) setOwn(out, redactText(k), shownValue(x));
  return out;
}

/**
 * A detail line: `NAME: what` or `NAME now required` for the property its path ends in, the name
 * and the rest redacted apart (the name alone is no `name: value` pair); any other line whole.
 */
function shownDetail(detail: string, path: string): string {
  const name = fieldName(path);
  for (const sep of [": ", " "]) {
    if (name !== "" && detail.startsWith(`${name}${sep}`)) {
      const rest = detail.slice(name.length + sep.length);
      // of a secret-like property, the values quoted in the line (a default, a const, an enum)
      return `${redactText(name)}${sep}${redactText(isSecretName(name) ? quotedRedacted(rest) : rest)}`;
    }
  }
  return redactText(detail);
}

/** `text` with every double-quoted string in it (JSON escapes read) replaced by the marker. */
function quotedRedacted(text: string): string {
  let out = "";
  let at = 0;
  for (;;) {
    const open = text.indexOf('"', at);
    if (open < 0) return out + text.slice(at);
    let close = open + 1;
    while (close < text.length && text[close] !== '"') close += text[close] === "\\" ? 2 : 1;
    out += `${text.slice(at, open)}"${REDACTED}"`;
    if (close >= text.length) return out; // an unterminated quote: the rest goes with it
    at = close + 1;
  }
}
