/** A duration for people, in seconds to a tenth: "7.5 s", "30 s". */
export function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}
