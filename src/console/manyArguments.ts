/**
 * A call of many arguments on the review card. The arguments are drawn in full before the decision
 * buttons, so 50 of them put the buttons thousands of pixels down. The buttons stay where they are,
 * after the last argument: a decision bar kept in view (sticky) would sit beside arguments never
 * on the screen and invite approving them unseen, and turning "Approve" on only once the list was
 * scrolled through would rest on the page's script and take a scroll for a reading. Instead the
 * card says at its top how many arguments there are and that the buttons come after them, with a
 * link down to the decision, and the decision says the count again with a link back up to the
 * first argument: the human jumping knows what they jump over, and every argument is on the page.
 */
import { type Html, html } from "./html.js";

/** More than this many arguments and the card says how many, at its top and at its decision (the terminal's card lists six). */
export const MANY_ARGUMENTS = 6;

export const decisionAnchor = (request: string): string => `decide-${request}`;
export const argumentsAnchor = (request: string): string => `arguments-${request}`;

/** The line under the card's title: the count, where the buttons are, and a link to them. */
export function argumentsSummary(request: string, count: number): Html | "" {
  if (count <= MANY_ARGUMENTS) return "";
  return html`<p class="args-count" data-testid="arguments-summary">This call has ${count} arguments, all listed on this card; the decision buttons come after the last of them: <a href="#${decisionAnchor(request)}" data-testid="to-decision">go to the decision</a>.</p>`;
}

/** The line just above the buttons (the link's target): the count again, and a link back to the first argument. */
export function argumentsRecap(request: string, count: number): Html | "" {
  if (count <= MANY_ARGUMENTS) return "";
  return html`<p class="args-count" id="${decisionAnchor(request)}" data-testid="arguments-recap">You decide on all ${count} arguments listed above: <a href="#${argumentsAnchor(request)}" data-testid="to-arguments">back to the first</a>.</p>`;
}

/**
 * The same line for a card of few arguments that is taller than the window all the same: every
 * field of it at its cap (the server's words, six arguments' values, what the store holds) puts
 * the buttons almost 5,000 pixels down a 1280×720 window. Written hidden: the page's script shows
 * it when the card, from its top to its buttons, is taller than the window (portcullisMarkCut, on
 * load, after a swap, on resize and when a disclosure opens); a page without its script keeps it
 * hidden.
 */
export function tallCardNote(request: string, count: number): Html | "" {
  if (count > MANY_ARGUMENTS) return "";
  return html`<p class="args-count" data-tall-card hidden data-testid="tall-card">This card is longer than the window: the decision buttons come after all of it, the ${
    count === 1 ? "argument" : `${count} arguments`
  } included: <a href="#${decisionAnchor(request)}" data-testid="to-decision">go to the decision</a>.</p>`;
}
