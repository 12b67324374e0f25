import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Where a running `run --listen` can be reached, for `portcullis status`:
 * `<stateDir>/listen/<label>.<pid>.json`, written at start and removed at the end. It names the
 * token's file, never the token (status reads the token from that file for its user).
 */
export interface ListenInfo {
  label: string;
  url: string;
  pid: number;
  /**
   * The process's start time (src/identity/proc.ts), so that a pid reused by another process
   * after the front was killed (its file left behind) is not taken for it; absent in files of
   * earlier versions
   */
  pidStart?: string | null;
  /** "bearer", or "none" (--no-auth, loopback only) */
  auth: "bearer" | "none";
  tokenFile: string | null;
  startedAt: string;
}

function dir(stateDir: string): string {
  return join(stateDir, "listen");
}

export function writeListenInfo(
  stateDir: string,
  label: string,
  info: Omit<ListenInfo, "label" | "startedAt">,
): string {
  mkdirSync(dir(stateDir), { recursive: true, mode: 0o700 });
  const file = join(dir(stateDir), `${label.replace(/[^A-Za-z0-9._-]/g, "-")}.${info.pid}.json`);
  const full: ListenInfo = { label, ...info, startedAt: new Date().toISOString() };
  writeFileSync(file, `${JSON.stringify(full, null, 2)}\n`, { mode: 0o600 });
  return file;
}

export function clearListenInfo(file: string): void {
  rmSync(file, { force: true });
}

/** Every listen front recorded in the state directory (the caller checks which are alive). */
export function readListenInfos(stateDir: string): ListenInfo[] {
  let names: string[];
  try {
    names = readdirSync(dir(stateDir)).filter((n) => n.endsWith(".json"));
  } catch {
    return [];
  }
  const out: ListenInfo[] = [];
  for (const n of names) {
    try {
      out.push(JSON.parse(readFileSync(join(dir(stateDir), n), "utf8")) as ListenInfo);
    } catch {
      // half-written or removed meanwhile
    }
  }
  return out;
}

/** The token in a token file (its first line), or null when it cannot be read. */
export function readTokenFile(path: string): string | null {
  try {
    return readFileSync(path, "utf8").split(/\r?\n/)[0]!.trim() || null;
  } catch {
    return null;
  }
}
