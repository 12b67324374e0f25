#!/usr/bin/env node
// The gateway with its guard switched off, for bench/relay.mjs only: `portcullis run`, exactly,
// except that every tools/call skips the decision steps 1–7 of docs/design.md (state, approval
// staleness, catalog staleness, tool in catalog, arguments, vault, grant) and goes straight to
// step 8, the durable intent record, then is forwarded. Everything else (relay, id remapping,
// supervision, the audit records of the call and its result) is the same code. The difference
// between this and `portcullis run` is what the guard costs.
//
//   node bench/guard-off-gateway.mjs run [run options] -- COMMAND [ARGS...]
//
// With GUARD_ALTERNATE=N in its environment, the guard is on for N calls, off for the next N, and
// so on (counting every decision from the first): both halves then run in one process, under the
// same scheduling, so that a difference of microseconds shows through a busy machine's noise.
//
// The switch is a function passed inside the process (RunInternals.decide); portcullis itself
// has no flag or variable that turns its guard off.
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const dist = join(resolve(dirname(fileURLToPath(import.meta.url)), ".."), "dist");
const { runCommand } = await import(pathToFileURL(join(dist, "cli", "run.js")).href);
const { decide } = await import(pathToFileURL(join(dist, "guard", "guard.js")).href);

/** Step 8 only: record the intent durably, then forward. */
async function straightToIntent({ server, facts, intent }) {
  const view = server();
  if (!view.epoch) return { action: "hold" }; // nothing to forward to yet
  const call = {
    tool: facts.tool,
    definition: null,
    fingerprint: "",
    epoch: view.epoch,
    revision: view.revision ?? 0,
    effective: facts.args ?? {}, // forwarded as is
    grant: null,
  };
  await intent.intent(call);
  return { action: "forward", call };
}

const [command, ...args] = process.argv.slice(2);
if (command !== "run") {
  process.stderr.write("usage: node bench/guard-off-gateway.mjs run [run options] -- COMMAND [ARGS...]\n");
  process.exit(2);
}
const every = Number(process.env.GUARD_ALTERNATE ?? 0);
let decisions = 0;
/** The guard for `every` decisions, then none for `every`, and so on. */
const alternating = (...a) =>
  Math.floor(decisions++ / every) % 2 === 0 ? decide(...a) : straightToIntent(...a);
process.exitCode = await runCommand(args, { decide: every > 0 ? alternating : straightToIntent });
