/** Small pure helpers of the gateway that say something about a message. */

/** Top-level fields the schema's defaults filled in: shown to reviewers and recorded. */
export function defaultsApplied(args: unknown, effective: Record<string, unknown>): Record<string, unknown> {
  const given = typeof args === "object" && args !== null ? (args as Record<string, unknown>) : {};
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(effective)) if (!(k in given)) out[k] = v;
  return out;
}

export function preview(text: string): string {
  const t = text.length > 80 ? `${text.slice(0, 80)}…` : text;
  return JSON.stringify(t);
}
