/**
 * Text the human did not get from the gateway, drawn so that it cannot pass for the gateway's own
 * and cannot push the rest of the card out of view. A server writes its tool's title, description,
 * inputs and hints, and its serverInfo, with any lines it likes: a description could draw an
 * "Arguments" block of its own above the real one, or a thousand blank lines to push the real
 * one and the decision buttons below the window. So each piece of it is framed, under a caption
 * that says whose words they are ("The server says, as …"), in monospace and never in the card's
 * heading style, and its height is capped: the box scrolls. The agent's argument values (and a
 * long argument name) are capped the same way, so a huge one leaves every later argument's name
 * on the card, and so is a long tool name wherever a page names it. The Catalog page's diff and
 * the Servers page's serverInfo are framed, captioned and capped the same way.
 *
 * Nothing in a box is ever hidden without a note saying so: the note under it ("(N lines; scroll to
 * read all)") is written whenever the text may not fit (`mayOverflow`, a bound that holds even in
 * the card's narrowest column), and the page's script (assets.ts) then shows it exactly when the
 * box overflows, and hides it when all of it shows.
 */
import { displayName } from "../catalog/text.js";
import { type Html, html, nameHtml } from "./html.js";

/** A box's height in lines of its 12px/1.4 monospace text (the stylesheet's `.capped`). */
export const CAPPED_LINES = 8;
/**
 * Characters of a line that fit in the narrowest box the card draws (an argument's value column
 * in a 300-pixel grid column, about 20 characters of 7.2 pixels): more wrap, so the note is written.
 */
const NARROWEST_CHARS = 16;

/**
 * An argument's name in its column: 30% of a 300-pixel grid column, as few as 6 characters of the
 * headings' 14px bold type a line (`W`), and 6 lines of 14px/1.45 text in the box's 134 pixels.
 */
const NAME_NARROWEST_CHARS = 6;
const NAME_LINES = 6;

/** Whether `text` may take more than `most` lines in a box `chars` characters wide. */
export function mayOverflow(text: string, chars = NARROWEST_CHARS, most = CAPPED_LINES): boolean {
  let lines = 0;
  for (const line of text.split("\n")) {
    lines += Math.max(1, Math.ceil(line.length / chars));
    if (lines > most) return true;
  }
  return false;
}

/** The note under a capped box: how much it holds, and that it scrolls. */
export function cutNote(text: string): string {
  const lines = text.split("\n").length;
  const size = lines > 1 ? `${lines} lines` : `${text.length} characters`;
  return `(${size}; scroll to read all)`;
}

/**
 * The note element: written shown when the text may not fit, hidden otherwise; the page's script
 * shows it exactly when its box (the element before it) overflows.
 */
function noteAfter(text: string, may = mayOverflow(text)): Html {
  return html`<p class="cut-note" data-testid="cut-note" ${may ? "" : "hidden"}>${cutNote(text)}</p>`;
}

/**
 * One piece of the server's words: framed, captioned (`caption` names what the server gave as
 * what: "its description"), capped in height. `kind` goes to `data-said` for tests and styles.
 */
export function serverSays(caption: string, text: string, kind: string): Html {
  return html`<figure class="server-says" data-testid="server-text" data-said="${kind}">
      <figcaption>The server says, as ${caption}:</figcaption>
      <pre class="said capped" data-capped tabindex="0">${text}</pre>${noteAfter(text)}</figure>`;
}

/**
 * The gateway's text that quotes the server's (the catalog diff: the gateway's lines and verdict,
 * the server's values in them): framed and capped the same way, under a caption that says so,
 * never "the server says", which would pass the gateway's own verdict (`EXPANDS`) off as a claim.
 */
export function quotingServer(caption: string, text: string, kind: string): Html {
  return html`<figure class="server-says" data-testid="server-text" data-said="${kind}">
      <figcaption>${caption}, quoting the server's words:</figcaption>
      <pre class="said capped" data-capped tabindex="0">${text}</pre>${noteAfter(text)}</figure>`;
}

/**
 * The same frame and caption around markup the gateway built over the server's words (the
 * Catalog page's diff table, each of its values capped in its own box): the frame is not capped
 * as a whole, its boxes are.
 */
export function quotingServerHtml(caption: string, kind: string, inner: Html): Html {
  return html`<figure class="server-says" data-testid="server-text" data-said="${kind}">
      <figcaption>${caption}, quoting the server's words:</figcaption>${inner}</figure>`;
}

/** An argument's value (`shown`: as the terminal writes it), capped in height with its note. */
export function cappedValue(shown: string): Html {
  return html`<div class="value-box capped" data-capped tabindex="0"><code class="value">${shown}</code></div>${noteAfter(shown)}`;
}

/**
 * The note as a phrasing element, for a box inside a heading, a sentence or a link (`<span>`: a
 * `<p>` there is not allowed); the stylesheet draws it as a line of its own.
 */
export function inlineNoteAfter(text: string): Html {
  return html`<span class="cut-note" data-testid="cut-note">${cutNote(text)}</span>`;
}

/**
 * A tool's name where the page names it: in the card's headings, on the Grants, Audit and
 * Catalog pages, on the passphrase page of a decision. A name is shown by its first 128
 * characters (displayName), and escaped that is up to ~800, dozens of lines in a heading or a
 * table cell. Past what fits the narrowest such place (as an argument's name: 6 lines of 6
 * characters) it is in a capped, scrolling box, with its note; a shorter one is drawn as it was.
 */
export function cappedToolName(name: string, asCode = false): Html {
  return cappedPhrase(displayName(name), asCode ? html`<code>${nameHtml(name)}</code>` : nameHtml(name));
}

/**
 * Any short text a page draws inline that the server chose the length of (a field's path in the
 * Catalog page's diff: the server names its inputs), capped as a tool's name is.
 */
export function cappedPhrase(shown: string, inner: Html = html`<span class="name">${shown}</span>`): Html {
  if (!mayOverflow(shown, NAME_NARROWEST_CHARS, NAME_LINES)) return inner;
  return html`<span class="name-box capped" data-capped tabindex="0">${inner}</span>${inlineNoteAfter(shown)}`;
}

/**
 * An argument's name in the arguments table, capped like its value: a name is shown whole up to
 * 128 characters and then by its start, length and digest (displayName), but escaped that can
 * still be a thousand characters, which in its narrow column pushed every later argument down. A
 * name that fits the box even in the narrowest column is drawn as it was, with no box and no note.
 */
export function cappedName(name: string): Html {
  const shown = displayName(name);
  if (!mayOverflow(shown, NAME_NARROWEST_CHARS, NAME_LINES)) return nameHtml(name);
  return html`<div class="name-box capped" data-capped tabindex="0">${nameHtml(name)}</div>${noteAfter(shown, true)}`;
}
