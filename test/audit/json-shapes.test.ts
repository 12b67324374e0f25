// `audit sessions --json` and `audit activity --json` print top-level arrays whose elements
// docs/audit-format.md describes member by member ("`sessions --json` and `activity --json`").
// Those tables are read here and held against the output of a real store: real gateways, a call
// approved by the real CLI, a gateway whose client sent nothing, one whose server keeps crashing.
// A member added to the output and not to the docs, documented and gone, or of another type than
// documented fails here.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { hostEnv, runCli, startInventory } from "../helpers/gateway.js";
import { CLI, fixtureCommand, NODE } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { REPO } from "./helpers.js";

type Shape = Map<string, Set<string>>;

const doc = readFileSync(join(REPO, "docs", "audit-format.md"), "utf8");
const SECTION = "### `sessions --json` and `activity --json`";

/** The documented members of one element kind: path → the types it may have. */
function documented(heading: string): Shape {
  const start = doc.indexOf(SECTION);
  expect(start, `docs/audit-format.md has a section ${SECTION}`).toBeGreaterThan(0);
  const from = doc.indexOf(`#### ${heading}`, start);
  expect(from, `docs/audit-format.md has "#### ${heading}"`).toBeGreaterThan(0);
  const end = doc.indexOf("\n#", from + 5);
  const shape: Shape = new Map();
  for (const line of doc.slice(from, end).split("\n")) {
    const row = /^\| `([^`]+)` \| ([^|]+) \|/.exec(line);
    if (!row) continue;
    const types = row[2]!.split(" or ").map((t) => t.trim().replace(/`/g, ""));
    shape.set(row[1]!, new Set(types));
  }
  expect(shape.size, `the table under "#### ${heading}"`).toBeGreaterThan(0);
  return shape;
}

function typeOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) {
    if (v.length === 0) return "[]";
    if (v.every((x) => typeof x === "string")) return "string[]";
    if (v.every((x) => typeof x === "object" && x !== null && !Array.isArray(x))) return "object[]";
    return "array";
  }
  return typeof v;
}

/** The documented members directly inside `prefix` (`""`, `counts.`, `revisions[].`). */
const childrenOf = (shape: Shape, prefix: string) =>
  [...shape.keys()].filter((k) => k.startsWith(prefix) && !/[.]/.test(k.slice(prefix.length)));

/**
 * One object of the output against the docs' rows for its members: exactly those members, each of
 * a documented type; an object (or array of objects) whose members the docs list is entered.
 */
function checkObject(value: Record<string, unknown>, shape: Shape, prefix: string, seen: Set<string>): void {
  const documentedHere = childrenOf(shape, prefix);
  const required = documentedHere.filter((k) => !shape.get(k)!.has("absent"));
  const name = (k: string) => k.slice(prefix.length);
  expect(
    Object.keys(value).filter((k) => !documentedHere.includes(`${prefix}${k}`)),
    `undocumented members of ${prefix || "an element"}`,
  ).toEqual([]);
  expect(
    required.map(name).filter((k) => !(k in value)),
    `documented members missing from ${prefix || "an element"}`,
  ).toEqual([]);
  for (const [key, v] of Object.entries(value)) {
    const path = `${prefix}${key}`;
    const allowed = shape.get(path)!;
    const type = typeOf(v);
    seen.add(`${path}: ${type}`);
    const ok = allowed.has(type) || (type === "[]" && [...allowed].some((t) => t.endsWith("[]")));
    expect(ok, `${path} is ${[...allowed].join(" or ")}, not ${type}`).toBe(true);
    if (type === "object[]" && childrenOf(shape, `${path}[].`).length > 0)
      for (const item of v as Record<string, unknown>[]) checkObject(item, shape, `${path}[].`, seen);
    if (type === "object" && childrenOf(shape, `${path}.`).length > 0)
      checkObject(v as Record<string, unknown>, shape, `${path}.`, seen);
  }
}

/** Every element as documented; and every documented member met at least once (no row describes nothing). */
function expectShape(elements: Record<string, unknown>[], shape: Shape): void {
  expect(elements.length).toBeGreaterThan(0);
  const seen = new Set<string>();
  for (const element of elements) checkObject(element, shape, "", seen);
  const met = (path: string) => [...seen].some((s) => s.startsWith(`${path}: `));
  // a member the OS gives only elsewhere (macOS's signing authorities) may be absent throughout
  expect([...shape.keys()].filter((p) => !met(p) && !shape.get(p)!.has("absent"))).toEqual([]);
}

let stateDir: string;
let sessions: Record<string, unknown>[];
let activity: Record<string, unknown>[];
const cleanup: (() => Promise<void> | void)[] = [];

/** `portcullis run` whose client sends nothing, its input then closed: a gateway without a run. */
async function gatewayWithoutRequest(label: string, command: string[], wait: RegExp): Promise<void> {
  const child = spawn(NODE, [CLI, "run", "--label", label, "--", ...command], {
    env: hostEnv({ PORTCULLIS_HOME: stateDir, PORTCULLIS_RESPAWN_BACKOFF_MS: "20" }),
    stdio: ["pipe", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  const exited = new Promise<number | null>((res) => child.on("close", (code) => res(code)));
  await waitFor(() => wait.test(stderr), 20_000, `gateway ${label}: ${wait}`);
  child.stdin.end();
  await exited;
}

beforeAll(async () => {
  stateDir = newStateDir();
  const project = makeProject("A");
  cleanup.push(() => project.cleanup());
  // a run: a call that waits for a human, approved for the session by the CLI, then answered
  const gw = await startInventory(project, ["--approval-timeout", "30000"], { credentials: true, stateDir });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  const call = gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "S-1", delta: 1 } });
  const request = await nextStoredRequest(stateDir);
  await decideByCli(stateDir, "approve", request.request, "--for", "session");
  await call;
  await gw.close();
  // a gateway that served and was stopped by its client's end, and one whose server crashes
  await gatewayWithoutRequest("quiet", fixtureCommand("echo"), /serving .* epoch=/);
  await gatewayWithoutRequest("crashy", [NODE, "-e", "process.exit(3)"], /supervision paused/);
  const s = await runCli(["audit", "sessions", "--json", "--state-dir", stateDir], { env: passphraseEnv() });
  expect(s.code, s.stderr).toBe(0);
  sessions = JSON.parse(s.stdout);
  const a = await runCli(["audit", "activity", "--json", "--state-dir", stateDir], { env: passphraseEnv() });
  expect(a.code, a.stderr).toBe(0);
  activity = JSON.parse(a.stdout);
}, 60_000);

afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

describe("audit sessions --json and audit activity --json, as docs/audit-format.md gives them", () => {
  it("sessions: an array of runs (run a string), then gateways without a run (run null)", () => {
    expect(Array.isArray(sessions)).toBe(true);
    const runs = sessions.filter((e) => e.run !== null);
    const idle = sessions.filter((e) => e.run === null);
    expect(sessions.indexOf(idle[0]!)).toBe(runs.length); // runs first
    expectShape(runs, documented("A run"));
    expectShape(idle, documented("A gateway without a run"));
  });

  it("activity: an array of calls", () => {
    expect(Array.isArray(activity)).toBe(true);
    expectShape(activity, documented("A call"));
  });
});
