/**
 * The Audit page's Sessions table. Any process of the user can append records to the audit log
 * (they are sealed to the keyring's public key, which every process reads): thousands of runs of
 * its own. The table drew every run in the order they started: 3,000 made 500 KB and 83,000 px of
 * rows above the Activity table, the human's run among them. It draws SESSIONS_SHOWN at a time,
 * the runs whose gateway still runs first (runsServedNow), then the latest started first, says how
 * many there are, and offers the other pages: each is the audit opened again, with the held proof
 * or the passphrase, as the first was. Which runs a page holds is read from the records' clear
 * headers, and only the records that can concern them are opened (src/console/audit.ts).
 */
import type { SessionView } from "../audit/index.js";
import type { Store } from "../store/db.js";
import { runningGatewayCheck } from "./gatewayProcesses.js";
import { type Html, html } from "./html.js";
import { storedText } from "./storedText.js";

/** Runs drawn on one page of the Sessions table. */
export const SESSIONS_SHOWN = 25;

/**
 * A run served now: its gateway's pid, and the seq of its own start as its row records it (null
 * when it records none: a row from before migration 21, or not a positive whole number). Only
 * where to look: src/console/servedStarts.ts believes the seq once the record there starts that
 * run under that pid.
 */
export interface ServedRun {
  pid: number;
  startSeq: number | null;
}

/**
 * The runs the store says are not ended whose gateway runs now: not provably gone, and, when alive
 * here, a portcullis `run` by its command line (a row naming a live process of another program is
 * no gateway's: src/console/gatewayProcesses.ts). One this process cannot judge, in another PID
 * namespace, counts.
 */
export function runsServedNow(db: Store): Map<string, ServedRun> {
  const rows = db
    .prepare(
      "SELECT run, gateway_pid, gateway_pid_start, gateway_pid_ns, gateway_boot, start_seq FROM runs WHERE ended_at IS NULL",
    )
    .all() as {
    run: unknown;
    gateway_pid: unknown;
    gateway_pid_start: string | null;
    gateway_pid_ns: string | null;
    gateway_boot: string | null;
    start_seq: unknown;
  }[];
  const running = runningGatewayCheck();
  const out = new Map<string, ServedRun>();
  for (const r of rows) {
    if (typeof r.run !== "string" || !Number.isSafeInteger(r.gateway_pid)) continue;
    const pid = r.gateway_pid as number;
    if (!running({ pid, start: r.gateway_pid_start, pidNs: r.gateway_pid_ns, boot: r.gateway_boot }))
      continue;
    // any column can be written with SQL: a seq that is no positive whole number is none
    const seq = r.start_seq;
    out.set(r.run, {
      pid,
      startSeq: Number.isSafeInteger(seq) && (seq as number) > 0 ? (seq as number) : null,
    });
  }
  return out;
}

function count(n: number): string {
  return n.toLocaleString("en-US");
}

/** A button opening the audit again at another page of the table (the held proof, or the passphrase). */
function pageButton(csrf: string, held: boolean, from: number, label: string, testid: string): Html {
  return html`<form method="post" action="/audit/open" class="sessions-page"><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="sessions-from" value="${from}">${
    held
      ? ""
      : html`<label>Passphrase <input type="password" name="passphrase" autocomplete="current-password" required data-testid="${testid}-proof"></label> `
  }<button type="submit" data-testid="${testid}">${label}</button></form>`;
}

/**
 * One page of the Sessions table: `page.rows`, the runs of the starts `page.offset` to
 * `page.offset + page.span` of the `page.total` the log holds (already ordered), with its pager. A
 * start whose run another start on the page named already is drawn once.
 */
export function sessionsTable(
  page: { rows: readonly SessionView[]; offset: number; span: number; total: number },
  csrf: string,
  held: boolean,
): Html {
  const { rows, offset, span, total } = page;
  const after = total - offset - span;
  const capped =
    total > span
      ? html`<div class="requests-capped" data-testid="sessions-capped"><p>${count(total)} runs are in the audit; this table shows ${
          span === 0 ? "none of them" : `${count(offset + 1)} to ${count(offset + span)}`
        }: the runs whose gateway still runs first, then the latest started first (any process of yours can append runs of its own to the log; <code>portcullis audit sessions</code> lists every one).</p>${
          offset > 0
            ? pageButton(
                csrf,
                held,
                Math.max(0, offset - SESSIONS_SHOWN),
                `the previous ${count(Math.min(offset, SESSIONS_SHOWN))}`,
                "sessions-previous",
              )
            : ""
        }${after > 0 ? pageButton(csrf, held, offset + span, `the next ${count(Math.min(after, SESSIONS_SHOWN))}`, "sessions-next") : ""}</div>`
      : "";
  return html`<section><h2>Sessions</h2>${capped}<table><thead><tr><th>run</th><th>server</th><th>started</th><th>ended</th><th>epochs</th><th>calls</th><th>refused</th><th>approvals</th></tr></thead><tbody>${rows.map(
    (s) =>
      html`<tr><td><code data-testid="session-run">${storedText(s.run)}</code></td><td>${storedText(s.server ?? "-")}</td><td>${storedText(s.startedAt ?? "-")}</td><td>${s.endedAt ? storedText(s.endedAt) : s.endInStoreOnly ? html`<span class="error">in the store only, unrecorded: its row says ${storedText(s.endInStoreOnly.endedAt)} (reason in the row: ${storedText(s.endInStoreOnly.reason ?? "none")}); the audit log holds no end</span>` : "-"}${s.endReason ? html` (${storedText(s.endReason)})` : ""}</td><td>${s.epochs.length}</td><td>${s.calls}${s.callsAfterEnd > 0 ? html` (${s.callsAfterEnd} after its end)` : ""}</td><td>${s.refused}</td><td>${s.approvals.requested} asked, ${s.approvals.granted} granted, ${s.approvals.denied} denied</td></tr>`,
  )}</tbody></table></section>`;
}
