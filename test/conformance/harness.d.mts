// Types for harness.mjs (plain JS so that run.mjs can use it without a build).
export interface ScenarioResult {
  passed: number;
  failed: number;
  ok: boolean;
}
export type Results = Record<string, ScenarioResult>;
export interface Row {
  name: string;
  direct: string;
  through: string;
  listen: string;
}
export const REPO: string;
export const PINNED: Record<string, string>;
export function ensureTools(): void;
export function parseSummary(out: string): Results;
export function runSide(side: "direct" | "through" | "listen"): Promise<{ results: Results; output: string }>;
export function runSides(): Promise<{
  direct: { results: Results; output: string };
  through: { results: Results; output: string };
  listen: { results: Results; output: string };
}>;
export function compare(
  direct: Results,
  through: Results,
  listen?: Results,
): { rows: Row[]; regressions: string[]; listenRegressions: string[] };
export function formatTable(rows: Row[]): string;
