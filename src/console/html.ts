import { displayName, markHidden } from "../catalog/text.js";

/**
 * The console's one way of putting text into HTML. Everything a server, an agent or the store
 * provides is untrusted: `escapeHtml` escapes the five HTML metacharacters (so text is inert in
 * element content and in quoted attributes) and marks invisible or reordering characters
 * (controls, bidi overrides and isolates, zero-width and other default-ignorable characters,
 * Unicode tags) visibly as `⟦U+XXXX⟧`, so a description cannot hide text from the human or
 * reorder what they read. Tool names are shown as `displayName` gives them, quoted and escaped
 * like on the terminal, so two different names never look the same.
 *
 * Pages are built with the `html` tag: interpolated values are escaped unless they are already
 * `Html` (built by this module), so forgetting to escape is not possible by construction.
 */

const ENTITIES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/**
 * Marks invisible and bidi characters as visible text (⟦U+202E⟧): the same class the terminal
 * views escape (src/catalog/text.ts), so a browser hides nothing a terminal would show. Tabs
 * and line ends stay: preformatted blocks (a diff, a rendered tool) are laid out with them.
 */
export function markInvisible(s: string): string {
  return markHidden(s, (cp) =>
    cp === 0x09 || cp === 0x0a || cp === 0x0d
      ? String.fromCodePoint(cp)
      : `⟦U+${cp.toString(16).toUpperCase().padStart(4, "0")}⟧`,
  );
}

/** The one escape: untrusted text → inert HTML text (content or quoted attribute value). */
export function escapeHtml(value: unknown): string {
  const s = typeof value === "string" ? value : value === undefined || value === null ? "" : String(value);
  return markInvisible(s).replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/** HTML built by this module (safe to concatenate). */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

type Part = Html | string | number | boolean | null | undefined | readonly Part[];

function render(part: Part): string {
  if (part instanceof Html) return part.text;
  if (Array.isArray(part)) return part.map(render).join("");
  if (part === null || part === undefined || part === false) return "";
  return escapeHtml(String(part));
}

/** Tagged template: every interpolation is escaped unless it is Html (or an array of Html). */
export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!;
  return new Html(out);
}

/** Preformatted untrusted text (a diff, a rendered tool): escaped, in a <pre>. */
export function pre(text: string, cls = ""): Html {
  return html`<pre class="${cls}">${text}</pre>`;
}

/**
 * A tool's, argument's or field's name as the terminal shows it (`displayName`: bare when plain,
 * else quoted and escaped), in a span whose white space is kept (`.name` in the stylesheet): HTML
 * collapses a run of spaces to one, and `"to  x"` must not read as `"to x"`. It may wrap anywhere,
 * so a long name never pushes what stands beside it out of its column.
 */
export function nameHtml(name: string): Html {
  return html`<span class="name">${displayName(name)}</span>`;
}
