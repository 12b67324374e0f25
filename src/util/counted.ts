/**
 * A count with its noun, singular for exactly one: "1 tool", "2 tools", "0 tools". Nouns whose
 * plural is not the singular plus "s" pass it as `plural`.
 */
export function counted(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}
