/**
 * The Catalog page's list of labels. A label is any text a process of the user records, and any
 * of them can write catalog revisions under labels of its own: thousands of them, listed all in
 * the order of their text, made a page of megabytes (3,000 labels of 300 characters: 2.5 MB,
 * 244,000 px tall, 7 s to load in Chromium) with the label of the server the human runs anywhere
 * in it. The page lists LABELS_SHOWN at a time: the labels of running gateways first, then the
 * latest revised first, says how many there are and links to the other pages. A gateway row
 * counts as running only when the live process it names is a portcullis `run` by its command line
 * (src/console/gatewayProcesses.ts): rows naming a process of another program came first.
 */
import { recorded } from "../gateway/registry.js";
import type { Store } from "../store/db.js";
import { catalogHref } from "./catalogLinks.js";
import { runningGatewayCheck } from "./gatewayProcesses.js";
import { type Html, html } from "./html.js";
import { mayOverflow } from "./serverText.js";
import { storedText } from "./storedText.js";

/** Labels listed on one page of the Catalog page. */
export const LABELS_SHOWN = 50;

/**
 * Every label with a catalog revision, in the order the page lists them: those a running gateway
 * serves first, then by their latest revision's time, the latest first (a row dated at a time
 * still to come comes early among the others: nothing tells it from a gateway's), then by text.
 */
export function orderedLabels(db: Store): string[] {
  const rows = (
    db
      .prepare(
        "SELECT server_label AS label, MAX(first_seen_at) AS latest FROM catalog_revisions GROUP BY server_label",
      )
      .all() as { label: unknown; latest: unknown }[]
  ).filter((r): r is { label: string; latest: unknown } => typeof r.label === "string");
  const running = runningLabels(db);
  return rows
    .sort(
      (a, b) =>
        Number(running.has(b.label)) - Number(running.has(a.label)) ||
        String(b.latest ?? "").localeCompare(String(a.latest ?? "")) ||
        a.label.localeCompare(b.label),
    )
    .map((r) => r.label);
}

/** The labels of the gateway rows not ended whose process is a running portcullis gateway. */
function runningLabels(db: Store): Set<string> {
  const rows = db
    .prepare("SELECT server_label, pid, pid_start, pid_ns, boot FROM gateways WHERE ended_at IS NULL")
    .all() as Record<string, unknown>[];
  const running = runningGatewayCheck();
  const out = new Set<string>();
  for (const r of rows)
    if (typeof r.server_label === "string" && Number.isSafeInteger(r.pid) && running(recorded(r)))
      out.add(r.server_label);
  return out;
}

function count(n: number): string {
  return n.toLocaleString("en-US");
}

/** One page of the labels at `offset`, with what it leaves out and links to the rest. */
export function labelsList(labels: readonly string[], offset: number): Html {
  const page = labels.slice(offset, offset + LABELS_SHOWN);
  const after = labels.length - offset - page.length;
  const capped =
    labels.length > page.length
      ? html`<p class="requests-capped" data-testid="labels-capped">${count(labels.length)} labels have catalog revisions; this page lists ${
          page.length === 0 ? "none of them" : `${count(offset + 1)} to ${count(offset + page.length)}`
        }: the labels of running gateways first, then the latest revised first (any process of yours can record revisions under labels of its own). ${
          offset > 0
            ? html`<a href="/catalog?labels-from=${Math.max(0, offset - LABELS_SHOWN)}" data-testid="labels-previous">the previous ${count(Math.min(offset, LABELS_SHOWN))}</a> `
            : ""
        }${
          after > 0
            ? html`<a href="/catalog?labels-from=${offset + page.length}" data-testid="labels-next">the next ${count(Math.min(after, LABELS_SHOWN))}</a>`
            : ""
        }</p>`
      : "";
  return html`${capped}<ul class="labels">${page.map((l) =>
    mayOverflow(l)
      ? html`<li><a href="${catalogHref(l)}">label</a> ${storedText(l)}</li>`
      : html`<li><a href="${catalogHref(l)}">${l}</a></li>`,
  )}</ul>`;
}
