// This process's own limits, as Linux's /proc/self/limits says them (behind proc.ts).
import { readFileSync } from "node:fs";

/**
 * The soft limit on open descriptors ("Max open files"), or null where it cannot be read (not
 * Linux, no /proc) or is "unlimited". `text`: the file's contents, for tests.
 */
export function openFilesSoftLimit(text: string | null = readLimits()): number | null {
  if (text === null) return null;
  const line = text.split("\n").find((l) => l.startsWith("Max open files"));
  const soft = line
    ?.slice("Max open files".length)
    .trim()
    .split(" ")
    .find((f) => f !== "");
  if (soft === undefined) return null;
  const n = Number(soft);
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

function readLimits(): string | null {
  try {
    return readFileSync("/proc/self/limits", "utf8");
  } catch {
    return null;
  }
}
