/**
 * Text a page shows that came from the store or the configuration rather than from the console's
 * own sentences: a server's label, credential scope names, a request's, a grant's or a gateway's
 * fields, the process chain recorded with a request, an unreadable card's cause, a passkey's name,
 * the audit's sessions and activity. Any process of the user can write it, at any length: it edits
 * `portcullis.json` and the store's rows as it likes, and a 10,000-line server label in a card's
 * title, or a scope name of 5,000 characters in the arguments' section, pushed the arguments and
 * the decision buttons out of view. So past what fits in 8 lines of the narrowest column it is
 * drawn in a box capped in height that scrolls, with the note that says so, as the server's words
 * are (serverText.ts), but under no caption: the words are not the server's, and a caption that
 * said so would lie. Shorter text is drawn as it was. Width: the stylesheet wraps every word of a
 * page anywhere (`main`), so a word without a space widens no column.
 */
import { type Html, html } from "./html.js";
import { inlineNoteAfter, mayOverflow } from "./serverText.js";

/**
 * `value` as text, capped in height with its note when it may take more than 8 lines of the
 * narrowest column (16 characters: 128 in all), which no label, scope name, time or digest does.
 */
export function storedText(value: unknown): Html {
  return capped(value === undefined || value === null ? "" : String(value), 16);
}

/**
 * One of the console's own sentences that quotes stored text (why a decision was refused, why a
 * grant is not honoured, how an epoch began): drawn whole up to 8 lines of 64 characters, which
 * its own words never pass, capped past that with its note.
 */
export function storedSentence(text: string): Html {
  return capped(text, 64);
}

function capped(text: string, chars: number): Html {
  if (!mayOverflow(text, chars)) return html`${text}`;
  return html`<span class="stored-box capped" data-capped data-testid="stored-text" tabindex="0"><span class="stored">${text}</span></span>${inlineNoteAfter(text)}`;
}

/** A list of stored names (credential scopes, egress hosts), joined by ", " and capped as a whole. */
export function storedList(values: readonly unknown[], none = "(none)"): Html {
  return values.length === 0 ? html`${none}` : storedText(values.map(String).join(", "));
}
