// Races in the guarded call path, searched by fast-check against one real gateway process (one
// per file: a gateway started per sequence would cost more than the sequences themselves). Its server is the
// inventory project (revisions B and C: byte-identical tool lists, different code, so a rebuild
// changes the epoch and never the catalog) under onChange restart; slow_write needs a per-call
// approval, adjust_inventory none. A sequence interleaves, without waiting for answers: calls of
// both tools (some under an id still in flight), cancellations of calls sent before, approvals and
// denials by the CLI (some racing the next steps, some waited for until the gateway took them
// up), rebuilds, the release of slow_write's wait (it holds a call at the server), and the
// cancellation of a slow_write held at the server (found held, or sent, approved and waited for
// until the server has it), with the release just before or after it, then a rebuild or a call
// under the cancelled id. Then it settles (every pending request decided, every call the client
// did not cancel answered, every intent closed, every call the audit ended by its result answered)
// and checks, from the client's answers, the audit and what the server received (the fixture
// records the id each call came under at the server, and the cancellations it received):
//   - every call the server received has exactly one intent that was not closed "not forwarded",
//     under an epoch whose server_started (and server_identified, if any) came before it, whose
//     process is the one that received the call, covered by a grant given for that epoch and tool
//     (slow_write) or none needed (adjust_inventory); no call reaches the server twice;
//   - a result the client got is the answer to the call under that very id, and that call reached
//     the server; a refusal (denied, stale, …) of an id used once means the call never got there;
//   - no id gets more answers than requests sent under it, nor fewer than those sent less the
//     cancelled; every intent has exactly one end, under its epoch (a rebuild's restart lets a
//     call at the server answer within the grace, so its result comes from the old process); an
//     intent ended by its result was answered, with that call's result; no call gets two results;
//   - a call ended cancelled after it was sent (call_interrupted cancelled/unknown) reached the
//     server, whose process received one cancellation naming the id it received that call under,
//     and the client got no result for it (the gateway drops an answer to a cancelled request);
//     a call ended cancelled gets no answer at all; every cancellation the server received is
//     for such a call; progress the gateway sends while a call waits for a human goes up, and
//     stops once the call is answered.
// The search must meet a cancellation at the server (asserted over a run of 15 sequences or more).
// The gateway's state carries over from one sequence to the next, so nothing is shrunk: a failure
// prints its sequence, which PORTCULLIS_RACE_STEPS='[…]' replays alone on a fresh gateway.
// PORTCULLIS_RACE_RUNS=N runs N sequences instead of 15 (about 2 s each on 2 CPUs; 300 found
// nothing); PORTCULLIS_RACE_SEED=S replays a seed;
// PORTCULLIS_RACE_SHOW=1 prints what the search went through (calls, ends, refusals, and how
// often a cancellation met its call at the server).
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { argumentsDigest } from "../../src/audit/events.js";
import {
  auditActivity,
  auditEvents,
  storedPending,
  verifiedAuditEvents,
  waitForPending,
} from "../helpers/approvals.js";
import { sleep, waitFor } from "../helpers/files.js";
import { runCli, type WireMessage } from "../helpers/gateway.js";
import { NODE } from "../helpers/paths.js";
import { IGNORES_CANCEL, makeProject, type Project } from "../helpers/project.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { passphraseEnv } from "../helpers/state.js";

type Step =
  | { kind: "call"; tool: "slow" | "adjust"; reuse: number | null }
  | { kind: "cancel"; target: number }
  | { kind: "decide"; verdict: "approve" | "deny"; pick: number; wait: boolean }
  | { kind: "rebuild" }
  | { kind: "release" }
  | { kind: "pause"; ms: number }
  | {
      kind: "cancelHeld";
      /**
       * the release (the server answers, unless it obeyed the cancellation first) or a rebuild (the
       * process holding the call is restarted), `ms` before the cancellation or `ms` after it
       */
      around: "none" | "release-before" | "release-after" | "rebuild-before" | "rebuild-after";
      ms: number;
      /** right after: a call under the cancelled id (its id is free at once) */
      next: "none" | "reuse-slow" | "reuse-adjust";
      /** the server obeys the cancellation (never answers), or ignores it and answers once released */
      server: "obeys" | "ignores";
    };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("call" as const),
      tool: fc.constantFrom("slow" as const, "slow" as const, "adjust" as const),
      // mostly a fresh id; one call in five under an id of the sequence, maybe still in flight
      reuse: fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.nat(20) }),
    }),
  },
  {
    weight: 3,
    // -1: the newest slow_write, the call most likely to be at the server (or waiting for a human)
    arbitrary: fc.record({
      kind: fc.constant("cancel" as const),
      target: fc.oneof(fc.constant(-1), fc.nat(20)),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("decide" as const),
      verdict: fc.constantFrom("approve" as const, "deny" as const),
      pick: fc.nat(5),
      // waited for, the steps after it meet the approved call at the server (slow_write holds
      // it there until released); not waited for, the decision races them
      wait: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.constant({ kind: "rebuild" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "release" as const }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("pause" as const), ms: fc.integer({ min: 0, max: 200 }) }),
  },
  {
    weight: 2,
    // a cancellation that meets its call at the server, held there (slow_write waits for its
    // release): the other steps reach that moment only by chance (2-3 times in 150 sequences)
    arbitrary: fc.record({
      kind: fc.constant("cancelHeld" as const),
      around: fc.constantFrom(
        "none" as const,
        "release-before" as const,
        "release-after" as const,
        "rebuild-before" as const,
        "rebuild-after" as const,
      ),
      // slow_write looks for its release every 20 ms: a few ms either way races its answer
      ms: fc.integer({ min: 0, max: 40 }),
      next: fc.constantFrom("none" as const, "reuse-slow" as const, "reuse-adjust" as const),
      server: fc.constantFrom("obeys" as const, "ignores" as const),
    }),
  },
);

interface Sent {
  id: string;
  tag: string;
  tool: "slow_write" | "adjust_inventory";
  args: Record<string, unknown>;
  /** a cancellation of its id was sent after it */
  cancelled?: boolean;
}

type AuditEvent = { seq: number; type: string; [k: string]: unknown };

let project: Project;
let gw: RawGateway;
/** every request sent so far, in order, and the cancellations by id */
const sent: Sent[] = [];
const cancels = new Map<string, number>();
/** what the CLI said when a decision failed other than by losing a race (shown on failure) */
const cliTrouble: string[] = [];
let sequence = 0;
/** cancelHeld steps, and how many of them found their call held at the server as they cancelled */
const heldSteps = { steps: 0, held: 0 };

beforeAll(async () => {
  project = makeProject("B");
  writeFileSync(
    join(project.dir, "portcullis.json"),
    JSON.stringify({
      servers: {
        inventory: {
          command: NODE,
          args: ["dist/server.js"],
          env: { ...project.env, INVENTORY_API_KEY: project.credentialEnv.INVENTORY_API_KEY! },
          onChange: "restart",
          approval: { default: "none", tools: { slow_write: "per-call" } },
          // the intents carry the arguments, whose tag names the call they belong to
          audit: { arguments: "clear" },
        },
      },
    }),
  );
  gw = rawGateway({ args: ["inventory"], cwd: project.dir, env: { PORTCULLIS_NO_CONSOLE: "1" } });
  await gw.initialize({}, 20_000);
  await gw.request("tools/list", {}, 20_000);
}, 60_000);

afterAll(async () => {
  await gw?.close();
  project?.cleanup();
});

const answersTo = (id: string): WireMessage[] =>
  gw.messages().filter((m) => m.id === id && m.method === undefined);

/**
 * Whether sequence `seq` sent a slow_write, the only tool that asks for approval. Without one it
 * has no pending request to decide (the settling of the sequence before denied those left), and
 * none can come: looking for them would only wait out the bound.
 *
 * The pending requests are read in the test process (`storedPending`), never by `approvals
 * --json`: the listing is not what races here (a process of its own each, about 0.2 s of CPU, 30
 * and more of them a run); the decisions are, and they stay the CLI's.
 */
const slowSentIn = (seq: number) => sent.some((s) => s.tool === "slow_write" && s.tag.startsWith(`t${seq}-`));

/**
 * Decides one pending request (`pick` among them), waiting a little for one to be made (the call
 * was just sent): none may come (no slow_write, or refused first). Losing a race to the gateway is
 * fine.
 */
async function decideOne(verdict: "approve" | "deny", pick: number): Promise<void> {
  if (!slowSentIn(sequence)) return;
  const list = await waitForPending(
    gw.stateDir,
    (l) => (l.length > 0 ? l : null),
    2_000,
    "a pending request",
    storedPending,
  ).catch(() => []);
  if (list.length === 0) return;
  const request = list[pick % list.length]!.request;
  const r = await runCli([verdict, request, "--state-dir", gw.stateDir], { env: passphraseEnv() });
  if (r.code !== 0 && /\n\s+at .+:\d+:\d+|internal error/i.test(r.stderr)) cliTrouble.push(r.stderr);
}

/**
 * Sends a call (under `id`, or a fresh one); `progress`: with a progress token, its tag; `deaf`:
 * a slow_write whose server ignores a cancellation of it (its note, the tag, says so).
 */
function sendCall(
  seq: number,
  ids: string[],
  kind: "slow" | "adjust",
  id: string | null,
  options: { progress?: boolean; deaf?: boolean } = {},
): Sent {
  const n = sent.length;
  const callId = id ?? `q${seq}-${n}`;
  const tag = `t${seq}-${n}${options.deaf ? IGNORES_CANCEL : ""}`;
  const tool = kind === "slow" ? "slow_write" : "adjust_inventory";
  const args = kind === "slow" ? { note: tag } : { sku: tag, warehouse: "w" };
  if (!ids.includes(callId)) ids.push(callId);
  const call: Sent = { id: callId, tag, tool, args };
  sent.push(call);
  const params = {
    name: tool,
    arguments: args,
    ...(options.progress ? { _meta: { progressToken: tag } } : {}),
  };
  gw.send({ jsonrpc: "2.0", id: callId, method: "tools/call", params });
  return call;
}

function cancel(id: string): void {
  cancels.set(id, (cancels.get(id) ?? 0) + 1);
  for (const s of sent) if (s.id === id) s.cancelled = true;
  gw.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason: "race" } });
}

/** The tags the client got a result for. */
function answeredTags(): Set<string> {
  const counts = new Map(
    project
      .records()
      .filter((r) => r.count !== undefined)
      .map((r) => [r.count!, tagOf(r.args)]),
  );
  const tags = gw
    .messages()
    .filter((m) => m.method === undefined)
    .map((m) => resultTag(m, counts));
  return new Set(tags.filter((t): t is string => t !== null));
}

/** When the last rebuild was written (Date.now()): a process that received a call before it is being restarted. */
let rebuiltAt = 0;

/**
 * The newest slow_write of this sequence that the server holds (received since the last rebuild,
 * not answered, not cancelled), if any, of those that ignore a cancellation (`deaf`) or of those
 * that obey it.
 */
function heldAtServer(ids: string[], deaf: boolean): Sent | undefined {
  const received = new Set(
    project
      .records()
      .filter((r) => Date.parse(r.at) >= rebuiltAt)
      .map((r) => tagOf(r.args)),
  );
  const answered = answeredTags();
  return sent
    .filter(
      (s) =>
        s.tool === "slow_write" &&
        s.tag.endsWith(IGNORES_CANCEL) === deaf &&
        ids.includes(s.id) &&
        !s.cancelled &&
        received.has(s.tag) &&
        !answered.has(s.tag),
    )
    .at(-1);
}

/**
 * A slow_write held at the server, for a cancellation to meet there: the release is taken back
 * (a call released already has answered, or is about to), then one already held is taken, or a
 * new one is sent with a progress token (the gateway names its approval request on it), approved
 * and waited for until the server received it (bounded: a rebuild may have made it ask again, a
 * refusal may have answered it; the cancellation then meets it wherever it is).
 */
async function holdOne(seq: number, ids: string[], deaf: boolean): Promise<Sent> {
  rmSync(project.releaseFile, { force: true });
  const held = heldAtServer(ids, deaf);
  if (held) return held;
  const call = sendCall(seq, ids, "slow", null, { progress: true, deaf });
  const approved = new Set<string>();
  await waitFor(async () => {
    if (project.records().some((r) => tagOf(r.args) === call.tag)) return true;
    if (answersTo(call.id).length > 0) return true; // refused
    const asked = gw
      .messages()
      .filter((m) => m.method === "notifications/progress")
      .map((m) => m.params as { progressToken?: unknown; message?: string })
      .filter((p) => p.progressToken === call.tag)
      .map((p) => /approval of (\S+)/.exec(p.message ?? "")?.[1])
      .filter((r): r is string => r !== undefined && !approved.has(r));
    for (const request of asked) {
      approved.add(request);
      // no terminal here: the reach is given (the one approve ID would default to on one)
      const mode = storedPending(gw.stateDir).find((p) => p.request === request)?.mode;
      const r = await runCli(
        ["approve", request, "--for", mode === "per-call" ? "call" : "session", "--state-dir", gw.stateDir],
        { env: passphraseEnv() },
      );
      if (r.code !== 0 && /\n\s+at .+:\d+:\d+|internal error/i.test(r.stderr)) cliTrouble.push(r.stderr);
    }
    return false;
  }, 3_000).catch(() => undefined);
  return call;
}

/** Runs one sequence without waiting for any answer (a decision not waited for goes on beside the next steps). */
async function drive(steps: Step[]): Promise<string[]> {
  const seq = ++sequence;
  rmSync(project.releaseFile, { force: true });
  const ids: string[] = [];
  const decisions: Promise<void>[] = [];
  const rebuild = () => {
    rebuiltAt = Date.now();
    project.rebuild(project.revision() === "B" ? "C" : "B");
  };
  const release = () => writeFileSync(project.releaseFile, "released\n");
  for (const s of steps) {
    switch (s.kind) {
      case "call":
        sendCall(seq, ids, s.tool, s.reuse !== null && ids.length > 0 ? ids[s.reuse % ids.length]! : null);
        break;
      case "cancel": {
        const slow = sent.filter((c) => c.tool === "slow_write" && ids.includes(c.id)).at(-1);
        const id = s.target === -1 ? slow?.id : ids[s.target % ids.length];
        if (id !== undefined) cancel(id);
        break;
      }
      case "cancelHeld": {
        const deaf = s.server === "ignores";
        const call = await holdOne(seq, ids, deaf);
        heldSteps.steps++;
        if (heldAtServer(ids, deaf) === call) heldSteps.held++;
        const [what, when] = s.around.split("-") as ["release" | "rebuild", "before" | "after"];
        const around = what === "release" ? release : rebuild;
        if (s.around !== "none" && when === "before") {
          around();
          await sleep(s.ms);
        }
        cancel(call.id);
        if (s.around !== "none" && when === "after") {
          await sleep(s.ms);
          around();
        }
        if (s.next !== "none") sendCall(seq, ids, s.next === "reuse-slow" ? "slow" : "adjust", call.id);
        break;
      }
      case "decide":
        if (s.wait) {
          const answers = () => gw.messages().filter((m) => m.method === undefined).length;
          const before = { received: project.records().length, answers: answers() };
          await decideOne(s.verdict, s.pick);
          // until the gateway took the decision up (a call reached the server, or was answered):
          // bounded, and not a check, since the decision may have been for a call gone already
          await waitFor(
            () => project.records().length > before.received || answers() > before.answers,
            2_000,
          ).catch(() => undefined);
        } else decisions.push(decideOne(s.verdict, s.pick));
        break;
      case "rebuild":
        rebuild();
        break;
      case "release":
        release();
        break;
      case "pause":
        await sleep(s.ms);
        break;
    }
  }
  await Promise.all(decisions);
  return ids;
}

/** Lets everything end: slow_write released, pending requests approved, every call answered. */
async function settle(ids: string[]): Promise<AuditEvent[]> {
  writeFileSync(project.releaseFile, "released\n");
  const owed = (id: string) => sent.filter((s) => s.id === id).length - (cancels.get(id) ?? 0);
  await waitFor(
    async () => {
      if (ids.every((id) => answersTo(id).length >= owed(id))) return true;
      // a call waiting for a human (also one asking again after a rebuild) is let through
      for (const p of storedPending(gw.stateDir)) {
        const forWhat = p.mode === "per-call" ? "call" : "session";
        await runCli(["approve", p.request, "--for", forWhat, "--state-dir", gw.stateDir], {
          env: passphraseEnv(),
        });
      }
      await sleep(100);
      return false;
    },
    45_000,
    `answers to ${ids.join(", ")}`,
  );
  // a request outlives its call (cancelled, refused as stale): denied here, so that the next
  // sequence's decisions pick among its own calls' requests (a sequence without a slow_write made none)
  if (slowSentIn(sequence))
    for (const p of storedPending(gw.stateDir))
      await runCli(["deny", p.request, "--state-dir", gw.stateDir], { env: passphraseEnv() });
  // the ends are written with the next group of records, after the answers went out
  const events = await waitFor(
    async () => {
      const events = (await auditEvents(gw.stateDir)).map((e, i) => ({ seq: i + 1, ...e }) as AuditEvent);
      return openIntents(events).length === 0 ? events : null;
    },
    20_000,
    "every intent to be closed",
  );
  // An end in the audit is not an answer read here. The wait above owed an id its calls less its
  // cancellations, one short when a cancellation came after its call was answered (a release just
  // before it, cancelHeld's release-before): the answer of a call sent after it under that id
  // (reuse-…) was then not waited for. The gateway writes a call's answer before its end (the end
  // rides in the audit's next group), but this process may read the audit before the answer's
  // line on the gateway's stdout. So every call the audit ended by its result has its answer
  // waited for, bounded: one that never comes is the check's to report.
  await waitFor(() => unansweredResults(events).length === 0, 10_000).catch(() => undefined);
  return events;
}

/**
 * The intents ended by their result (tool_result) whose answer the client has not got yet: by
 * their result's tag when the server gave one, and by their id (one answer for each such end).
 */
function unansweredResults(events: AuditEvent[]): AuditEvent[] {
  const counts = new Map(
    project
      .records()
      .filter((r) => r.count !== undefined)
      .map((r) => [r.count!, tagOf(r.args)]),
  );
  const tags = new Set(
    gw
      .messages()
      .filter((m) => m.method === undefined)
      .map((m) => resultTag(m, counts)),
  );
  const open = new Map<string, AuditEvent>();
  const ended: AuditEvent[] = [];
  for (const e of events) {
    if (isIntent(e)) open.set(callKeyOf(e), e);
    else if (isEnd(e)) {
      const intent = open.get(callKeyOf(e));
      open.delete(callKeyOf(e));
      if (intent && e.type === "tool_result") ended.push({ ...intent, outcome: e.outcome });
    }
  }
  const byId = new Map<string, number>();
  for (const i of ended) byId.set(String(i.requestId), (byId.get(String(i.requestId)) ?? 0) + 1);
  return ended.filter(
    (i) =>
      answersTo(String(i.requestId)).length < byId.get(String(i.requestId))! ||
      (i.outcome !== "error" && !tags.has(tagOf(i.arguments as Record<string, unknown>))),
  );
}

const tagOf = (args: Record<string, unknown>) => String(args.note ?? args.sku);
const callKeyOf = (e: AuditEvent) => `${String(e.run)}/${String(e.callKey)}`;
const isIntent = (e: AuditEvent) => e.type === "tool_called";
const isEnd = (e: AuditEvent) => e.type === "tool_result" || e.type === "call_interrupted";

/** The intents with no end after them under their call key. */
function openIntents(events: AuditEvent[]): AuditEvent[] {
  const open = new Map<string, AuditEvent>();
  for (const e of events) {
    if (isIntent(e)) open.set(callKeyOf(e), e);
    else if (isEnd(e)) open.delete(callKeyOf(e));
  }
  return [...open.values()];
}

/** The tag of a result's text, or null: adjust_inventory names its sku, slow_write its count. */
function resultTag(m: WireMessage, counts: Map<number, string>): string | null {
  const text = (m.result as { content?: { text?: string }[] } | undefined)?.content?.[0]?.text ?? "";
  const adjusted = /^revision [BC]: (\S+) in w adjusted/.exec(text);
  if (adjusted) return adjusted[1]!;
  const slow = /^slow_write (?:released|timed out): revision [BC] count (\d+)$/.exec(text);
  if (slow) return counts.get(Number(slow[1])) ?? `unknown count ${slow[1]}`;
  return null;
}

function check(events: AuditEvent[]): void {
  const records = project.records();
  const bySent = new Map(sent.map((s) => [s.tag, s]));
  const received = new Map<string, (typeof records)[number]>();
  for (const r of records) {
    const tag = tagOf(r.args);
    expect(received.has(tag), `${tag} reached the server twice`).toBe(false);
    received.set(tag, r);
  }
  const counts = new Map(records.filter((r) => r.count !== undefined).map((r) => [r.count!, tagOf(r.args)]));

  // every intent has exactly one end, the next one of its call key in the chain (a call decided
  // again gets a new intent under the same key), and no end is without its intent
  const intents = events.filter(isIntent);
  const endOf = new Map<AuditEvent, AuditEvent>();
  const open = new Map<string, AuditEvent>();
  for (const e of events) {
    if (isIntent(e)) {
      expect(open.get(callKeyOf(e)), `an intent while ${JSON.stringify(e)}'s call is open`).toBeUndefined();
      open.set(callKeyOf(e), e);
    } else if (isEnd(e)) {
      const intent = open.get(callKeyOf(e));
      expect(intent, `an end without an open intent: ${JSON.stringify(e)}`).toBeDefined();
      expect(e.epoch, `the epoch of the end ${JSON.stringify(e)}`).toBe(intent!.epoch);
      endOf.set(intent!, e);
      open.delete(callKeyOf(e));
    }
  }
  expect([...open.values()], "intents never closed").toEqual([]);

  // what the server received was forwarded once, under the epoch of the process that ran it
  const started = new Map(
    events.filter((e) => e.type === "server_started").map((e) => [e.epoch as string, e]),
  );
  const identified = new Map(
    events.filter((e) => e.type === "server_identified").map((e) => [e.epoch as string, e]),
  );
  const grants = new Map(
    events.filter((e) => e.type === "approval_granted").map((e) => [e.grant as string, e]),
  );
  const notForwarded = (i: AuditEvent) => endOf.get(i)?.outcome === "not_forwarded";
  for (const [tag, r] of received) {
    const mine = intents.filter((i) => tagOf(i.arguments as Record<string, unknown>) === tag);
    const forwarded = mine.filter((i) => !notForwarded(i));
    const what = `${tag} (received by pid ${r.pid}, revision ${r.revision}; intents ${JSON.stringify(mine)})`;
    expect(forwarded.length, `forwarded intents of ${what}`).toBe(1);
    const intent = forwarded[0]!;
    expect(intent.argumentsDigest).toBe(argumentsDigest(bySent.get(tag)!.args));
    const start = started.get(intent.epoch as string);
    expect(start, `server_started of the epoch of ${what}`).toBeDefined();
    expect(start!.seq, `epoch of ${what} recorded before its intent`).toBeLessThan(intent.seq);
    const ident = identified.get(intent.epoch as string);
    if (ident) expect(ident.seq, `server_identified before ${what}`).toBeLessThan(intent.seq);
    expect((start!.record as { processId: number }).processId, `process of the epoch of ${what}`).toBe(r.pid);
    if (r.tool === "slow_write") {
      const grant = grants.get(intent.grant as string);
      expect(grant, `grant of ${what}`).toBeDefined();
      expect(grant!.seq).toBeLessThan(intent.seq);
      expect(grant!.epoch, `epoch of the grant of ${what}`).toBe(intent.epoch);
      expect(grant!.tool).toBe("slow_write");
    }
  }

  // the client's answers
  for (const id of new Set(sent.map((s) => s.id))) {
    const under = sent.filter((s) => s.id === id);
    const answers = answersTo(id);
    const what = `${id} (sent ${under.map((s) => s.tag).join(", ")}; cancelled ${cancels.get(id) ?? 0}; answers ${JSON.stringify(answers)})`;
    expect(answers.length, `answers to ${what}`).toBeLessThanOrEqual(under.length);
    expect(answers.length, `answers to ${what}`).toBeGreaterThanOrEqual(
      under.length - (cancels.get(id) ?? 0),
    );
    for (const a of answers) {
      const tag = resultTag(a, counts);
      if (tag !== null) {
        expect(
          under.map((s) => s.tag),
          `the result ${JSON.stringify(a)} answers a call under its id`,
        ).toContain(tag);
        expect(received.has(tag), `${tag} answered without reaching the server`).toBe(true);
      }
      const code = (a.error as { code?: number } | undefined)?.code;
      // -32603 is the gateway failing inside (or a refusal of its own, named in data.error): seen
      // 8 times in a 120-sequence search and not again with the same seed, so its text is kept
      const name = (a.error as { data?: { error?: string } } | undefined)?.data?.error;
      if (code === -32603 && name !== "server_unavailable")
        expect.fail(`internal error answering ${what}: ${JSON.stringify(a)}`);
      // a refusal other than epoch_transition says the call was not sent; with one request under
      // the id, it is that request's
      if (under.length === 1 && code !== undefined && code <= -32050 && code >= -32059 && code !== -32054)
        expect(received.has(under[0]!.tag), `${under[0]!.tag} refused (${code}) yet received`).toBe(false);
    }
  }
  // each call answered at most once: a result names its call (adjust_inventory its sku,
  // slow_write its count)
  const resultsFor = new Map<string, number>();
  for (const m of gw.messages().filter((m) => m.method === undefined)) {
    const tag = resultTag(m, counts);
    if (tag !== null) resultsFor.set(tag, (resultsFor.get(tag) ?? 0) + 1);
  }
  for (const [tag, n] of resultsFor) expect(n, `results for ${tag}`).toBe(1);

  // an intent ended by its result was answered (its id not cancelled); one the server answered
  // (its result, not an error) got that very result, also under an id the client cancelled
  // after the answer went out
  for (const i of intents) {
    const end = endOf.get(i)!;
    const id = String(i.requestId);
    if (end.type === "tool_result" && !cancels.has(id))
      expect(answersTo(id).length, `answer to ${JSON.stringify(i)}`).toBeGreaterThan(0);
    if (end.type === "tool_result" && end.outcome !== "error")
      expect(
        resultsFor.get(tagOf(i.arguments as Record<string, unknown>)),
        `the result of ${JSON.stringify(i)}`,
      ).toBe(1);
  }

  // a cancellation that met its call at the server (the gateway ended it cancelled, outcome
  // unknown, docs/audit-format.md): that call reached the server, the server was told under the
  // id it received the call by (the gateway's, not the client's), and the client got no result
  // for it (an answer the server still sent is dropped: MCP has a cancelled request go unanswered)
  const cancelsAt = new Map<string, number>();
  for (const c of project.cancellations()) {
    const at = `${c.pid}/${JSON.stringify(c.requestId)}`;
    cancelsAt.set(at, (cancelsAt.get(at) ?? 0) + 1);
  }
  const receivedAt = new Map(records.map((r) => [`${r.pid}/${JSON.stringify(r.requestId)}`, r]));
  const cancelledAtServer = new Set<string>();
  for (const i of intents) {
    const end = endOf.get(i)!;
    if (end.type !== "call_interrupted" || end.reason !== "cancelled" || end.outcome !== "unknown") continue;
    const tag = tagOf(i.arguments as Record<string, unknown>);
    const r = received.get(tag);
    const what = `${JSON.stringify(i)}, ended ${JSON.stringify(end)}`;
    expect(r, `the call of ${what} at the server`).toBeDefined();
    const at = `${r!.pid}/${JSON.stringify(r!.requestId)}`;
    expect(cancelsAt.get(at), `cancellations of ${what} received by its process under ${at}`).toBe(1);
    expect(resultsFor.has(tag), `a result of ${what}`).toBe(false);
    cancelledAtServer.add(at);
  }
  // progress (the gateway's, while a call waits for a human: cancelHeld's calls ask for it, under
  // their tag) only goes up, and stops once the call is answered
  const messages = gw.messages();
  const progress = new Map<unknown, { at: number; value: number }[]>();
  messages.forEach((m, at) => {
    if (m.method !== "notifications/progress") return;
    const p = m.params as { progressToken: unknown; progress: number };
    progress.set(p.progressToken, [...(progress.get(p.progressToken) ?? []), { at, value: p.progress }]);
  });
  for (const [token, steps] of progress) {
    const what = `progress under ${JSON.stringify(token)}: ${JSON.stringify(steps)}`;
    const call = sent.find((c) => c.tag === token);
    expect(call, `${what}, no call's`).toBeDefined();
    for (let k = 1; k < steps.length; k++) expect(steps[k]!.value, what).toBeGreaterThan(steps[k - 1]!.value);
    // its answer: by its id when nothing else was sent under it, else by its result
    const alone = sent.filter((c) => c.id === call!.id).length === 1;
    const answered = messages.findIndex(
      (m) => m.method === undefined && m.id === call!.id && (alone || resultTag(m, counts) === call!.tag),
    );
    if (answered >= 0)
      expect(
        steps.filter((p) => p.at > answered),
        `${what} after its answer`,
      ).toEqual([]);
  }

  // a call the gateway ended cancelled (wherever the cancellation met it) gets no answer at all,
  // error or result: seen by its id when nothing else was sent under it
  for (const i of intents) {
    const end = endOf.get(i)!;
    const under = sent.filter((s) => s.id === String(i.requestId));
    if (end.type === "call_interrupted" && end.reason === "cancelled" && under.length === 1)
      expect(
        answersTo(under[0]!.id),
        `answers to ${JSON.stringify(i)}, ended ${JSON.stringify(end)}`,
      ).toEqual([]);
  }
  // and a cancellation the server received is for such a call (none for a call answered or not
  // sent, none under an id the server did not give that call)
  for (const at of cancelsAt.keys()) {
    expect(receivedAt.has(at), `a cancellation received as ${at}: names no call its process received`).toBe(
      true,
    );
    expect(
      cancelledAtServer.has(at),
      `a cancellation received as ${at} (${receivedAt.get(at)!.tool} ${tagOf(receivedAt.get(at)!.args)}) for a call not ended cancelled`,
    ).toBe(true);
  }
}

/**
 * How often a cancellation met its call at the server: cancelHeld steps (and how many found their
 * call held as they cancelled), calls the gateway ended cancelled after sending them (outcome
 * unknown), cancellations the server received, and of those, how many found the call still
 * waiting there, and how many it ignored (answering once released: the gateway drops that answer).
 */
function cancelledAtServer(events: AuditEvent[]) {
  const received = project.cancellations();
  return {
    cancelHeldSteps: heldSteps.steps,
    cancelHeldFoundHeld: heldSteps.held,
    endedCancelledAtServer: events.filter(
      (e) => e.type === "call_interrupted" && e.reason === "cancelled" && e.outcome === "unknown",
    ).length,
    cancellationsReceived: received.length,
    cancellationsReceivedWhileWaiting: received.filter((c) => c.waiting).length,
    cancellationsIgnored: received.filter((c) => c.ignored).length,
  };
}

/** What the search went through, for PORTCULLIS_RACE_SHOW=1: a property that never met a race proves little. */
async function summary(): Promise<string> {
  const events = await auditEvents(gw.stateDir);
  const count = (xs: string[]) => {
    const counted: Record<string, number> = {};
    for (const x of xs) counted[x] = (counted[x] ?? 0) + 1;
    return counted;
  };
  const errors = gw
    .messages()
    .filter((m) => m.method === undefined && m.error)
    .map((m) => {
      const e = m.error as { code: number; data?: { error?: string } };
      return `${e.code} ${e.data?.error ?? ""}`.trim();
    });
  return JSON.stringify({
    sent: sent.length,
    cancels: [...cancels.values()].reduce((a, b) => a + b, 0),
    received: project.records().length,
    ...cancelledAtServer(events as AuditEvent[]),
    progress: gw.messages().filter((m) => m.method === "notifications/progress").length,
    epochs: events.filter((e) => e.type === "server_started").length,
    events: count(
      events.map((e) =>
        e.type === "call_interrupted" ? `interrupted ${e.reason}/${e.outcome}` : String(e.type),
      ),
    ),
    errors: count(errors),
  });
}

describe("races in the guarded call path", () => {
  it("calls, cancellations, duplicate ids, decisions and rebuilds keep the audit and the answers whole", async () => {
    const seed = process.env.PORTCULLIS_RACE_SEED;
    const given = process.env.PORTCULLIS_RACE_STEPS;
    const runs = given ? 1 : Number(process.env.PORTCULLIS_RACE_RUNS ?? 15);
    // a sequence as printed by a failure, replayed on a fresh gateway: the reproduction
    const steps = given
      ? fc.constant(JSON.parse(given) as Step[])
      : fc.array(step, { minLength: 1, maxLength: 12 });
    await fc.assert(
      fc.asyncProperty(steps, async (steps) => {
        try {
          const ids = await drive(steps);
          check(await settle(ids));
        } catch (error) {
          throw new Error(
            `${(error as Error).message}\nsteps: ${JSON.stringify(steps)}\n--- gateway stderr (last 4000) ---\n${gw
              .stderr()
              .slice(-4000)}${cliTrouble.length ? `\n--- CLI ---\n${cliTrouble.join("\n")}` : ""}`,
          );
        }
      }),
      {
        numRuns: runs,
        // the first of the runs, a sequence that meets the case for certain: a cancellation sent
        // to the server while the call waits there, nothing around it (a draw misses it when its
        // cancelHeld steps all release or rebuild first: 0.4 a step, so with 3 about one run in 16)
        examples: given
          ? []
          : [[[{ kind: "cancelHeld", around: "none", ms: 0, next: "none", server: "obeys" }]]],
        // the gateway's state carries from one sequence to the next: a shrunk replay is not the run that failed
        endOnFailure: true,
        ...(seed ? { seed: Number(seed) } : {}),
      },
    );
    if (process.env.PORTCULLIS_RACE_SHOW) console.log(await summary());
    // the search met the case it is for: a cancellation reaching a call held at the server (the
    // first sequence, the example, meets it once its call is at the server within holdOne's bound)
    if (!given && runs >= 15) {
      const met = cancelledAtServer((await auditEvents(gw.stateDir)) as AuditEvent[]);
      expect(met.endedCancelledAtServer, JSON.stringify(met)).toBeGreaterThan(0);
      expect(met.cancellationsReceivedWhileWaiting, JSON.stringify(met)).toBeGreaterThan(0);
    }
    // the views read the same chain: whole, and no call shown as still pending once all settled
    await verifiedAuditEvents(gw.stateDir);
    expect((await auditActivity(gw.stateDir)).filter((row) => row.outcome === "pending")).toEqual([]);
    expect(cliTrouble).toEqual([]);
    expect(gw.stderr()).not.toMatch(/internal error|could not handle|\n\s+at .+:\d+:\d+\)?\n|Uncaught|FATAL/);
  }, 600_000);
});
