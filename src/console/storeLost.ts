/**
 * The console's answer once one of the store's files (the database, its -wal or -shm) was found
 * deleted or replaced since it opened the store (src/store/storeFiles.ts): nothing it would write
 * could be trusted to reach the store the gateways use, so every request is refused with the
 * sentence naming the file, and the console stops (src/cli/console.ts) without closing the store.
 */
import type { ServerResponse } from "node:http";
import type { StoreFileLost } from "../store/storeFiles.js";
import { html } from "./html.js";
import { sendHtml } from "./http.js";
import { layout } from "./pages.js";

/** 503: a page for the browser, or `{ error }` for a route that answers JSON (passkey decisions). */
export function refuseStoreLost(res: ServerResponse, json: boolean, lost: StoreFileLost): void {
  if (json) {
    res.statusCode = 503;
    res.setHeader("Content-Type", "application/json; charset=utf-8");
    res.end(JSON.stringify({ error: `nothing was recorded: ${lost.message}` }));
    return;
  }
  const body = html`<h1>Nothing was recorded</h1><p class="message" role="alert">${lost.message}</p>
<p>This console has stopped. Run <code>portcullis console</code> again to decide on the store as it is now.</p>`;
  sendHtml(res, 503, layout({ title: "Nothing was recorded" }, body));
}
