/**
 * Links to one catalog label's revisions. A label is any text a process of the user records (the
 * store's rows, `portcullis.json`), at any length: in a link's query it made a request line longer
 * than the console's parser takes (16 KiB with the headers), so the link was answered 431 with
 * nothing to read. A label whose link would be long is linked by its SHA-256 instead
 * (`label-sha256=`), which the Catalog page resolves among the labels it lists.
 */
import { createHash } from "node:crypto";

/** The longest encoded label put in a link as it is; longer ones go by digest. */
export const LINKED_LABEL_MAX = 512;

/** What a Catalog page's query asks for: a label by its text, or by its digest. */
export interface LabelAsked {
  label: string | null;
  digest: string | null;
}

export function labelAskedIn(q: URLSearchParams): LabelAsked {
  const digest = q.get("label-sha256");
  // a digest of another shape is asked for all the same: no label has it, and the page says so
  return { label: q.get("label"), digest };
}

function labelDigest(label: string): string {
  return createHash("sha256").update(label, "utf8").digest("hex");
}

/** The Catalog page of `label` (its diff of `from` → `to` when given), a link of bounded length. */
export function catalogHref(label: string, from?: number, to?: number): string {
  const encoded = encodeURIComponent(label);
  const which =
    encoded.length <= LINKED_LABEL_MAX ? `label=${encoded}` : `label-sha256=${labelDigest(label)}`;
  return `/catalog?${which}${from !== undefined && to !== undefined ? `&from=${from}&to=${to}` : ""}`;
}

/** The label asked for among `labels`, or null (none asked, or none such). */
export function labelAsked(labels: readonly string[], asked: LabelAsked): string | null {
  if (asked.label !== null) return labels.includes(asked.label) ? asked.label : null;
  if (asked.digest !== null) return labels.find((l) => labelDigest(l) === asked.digest) ?? null;
  return null;
}
