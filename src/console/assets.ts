/**
 * The console's only script and stylesheet, served from this process (no CDN, no third-party
 * resource; the CSP allows 'self' only). Besides the proof key, the script does one thing: when
 * /events says something changed, it fetches the current page again and swaps its <main>. Never
 * under the human's hand: while they type in a form there or the pointer rests on a control, a
 * notice says the page is out of date and the swap waits; after a swap, the page's buttons are
 * off for a second (`data-settling`), so a click aimed at what was there decides nothing.
 */

/**
 * The header the script's own refetch carries: the server does not count that GET as the human's
 * activity (server.ts), as it does not count the event stream.
 */
export const REFRESH_HEADER = "x-portcullis-refresh";

export const CONSOLE_JS = `"use strict";
(function () {
  // The proof key (src/console/sessions.ts): handed over once, in the answer to the request that
  // carried the passphrase, kept in this origin's storage (other ports cannot read it), and sent
  // back with every form this page posts. Without it the held proof is never used.
  var KEY = "portcullis-proof";
  window.portcullisProofKey = function () {
    try { return localStorage.getItem(KEY) || ""; } catch (e) { return ""; }
  };
  window.portcullisKeepProofKey = function (value) {
    try { localStorage.setItem(KEY, value); } catch (e) {}
  };
  var handoff = document.querySelector('meta[name="portcullis-proof"]');
  if (handoff) {
    window.portcullisKeepProofKey(handoff.getAttribute("content") || "");
    var next = handoff.getAttribute("data-next");
    if (next && next.charAt(0) === "/" && next.charAt(1) !== "/") location.replace(next);
  } else if (document.querySelector('form[action="/login"]')) {
    try { localStorage.removeItem(KEY); } catch (e) {}
  }
  // A capped box (serverText.ts: the server's words, an argument's value) scrolls; the note after
  // it says so. The console writes the note wherever the text may not fit; here it shows exactly
  // when the box does not show all of it, on load, after a swap, on resize and when a <details>
  // around one opens.
  window.portcullisMarkCut = function () {
    var boxes = document.querySelectorAll("[data-capped]");
    for (var i = 0; i < boxes.length; i++) {
      var box = boxes[i];
      var note = box.nextElementSibling;
      if (!note || note.className !== "cut-note") continue;
      var cut = box.scrollHeight > box.clientHeight + 1 || box.scrollWidth > box.clientWidth + 1;
      var closed = box.closest("details:not([open])") !== null;
      if (!closed) note.hidden = !cut;
    }
    // a card taller than the window, from its top to its buttons, says so at its top, with a link to them
    var tall = document.querySelectorAll("[data-tall-card]");
    for (var t = 0; t < tall.length; t++) {
      var card = tall[t].closest("article");
      var decide = card && card.querySelector(".decide");
      if (decide) tall[t].hidden = decide.getBoundingClientRect().bottom - card.getBoundingClientRect().top <= window.innerHeight;
    }
  };
  function markSoon() { window.portcullisMarkCut(); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", markSoon);
  else markSoon();
  window.addEventListener("resize", markSoon);
  document.addEventListener("toggle", markSoon, true);
  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (!form || !form.getAttribute || (form.getAttribute("method") || "").toLowerCase() !== "post") return;
    var input = form.querySelector('input[name="proof"]');
    if (!input) {
      input = document.createElement("input");
      input.type = "hidden";
      input.name = "proof";
      form.appendChild(input);
    }
    input.value = window.portcullisProofKey();
  }, true);
})();
(function () {
  // A page that changes under the pointer lets whoever times the change choose what the human's
  // click lands on: an agent that files request B just as the human reaches for A's "Approve"
  // gets B approved. So the page is never swapped while the pointer rests on a control in it or
  // the human is typing there (a notice says something changed, and the swap waits), and after a
  // swap its decision buttons are off for SETTLE_MS, long enough to see that the page moved
  // (Firefox holds its security dialogs' buttons for the same second).
  var SETTLE_MS = 1000;
  // A capped box (the server's words, an argument's value) counts as a control: the human reading
  // it, scrolled down to a part, would have it swapped for a fresh one back at its top.
  var CONTROLS = ".decide:hover, button:hover, a:hover, input:hover, textarea:hover, summary:hover, label:hover, [data-capped]:hover";
  var RELOAD = "Something changed. Reload the page to see it.";
  var WAITING = "Something changed: it shows once the pointer leaves the buttons.";
  var HELD = "The page changed just now: nothing was decided. Look at it again, then decide.";
  function typing(main) {
    var el = document.activeElement;
    if (el && main.contains(el) && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "BUTTON")) return true;
    var fields = main.querySelectorAll("input[type=text], input[type=password], textarea");
    for (var i = 0; i < fields.length; i++) if (fields[i].value) return true;
    return false;
  }
  function pointing(main) {
    try { return main.querySelector(CONTROLS) !== null; } catch (e) { return true; }
  }
  // Fixed at the bottom of the window: showing it moves nothing on the page.
  function notice(text) {
    var p = document.getElementById("stale");
    if (!p) {
      p = document.createElement("p");
      p.id = "stale";
      p.className = "stale";
      p.setAttribute("role", "status");
      document.body.appendChild(p);
    }
    p.textContent = text;
  }
  function clearNotice() {
    var p = document.getElementById("stale");
    if (p) p.remove();
  }
  var settleTimer = null;
  function settle(main) {
    // a page another page opened decides nothing, after a swap too: its buttons stay off
    if (main.hasAttribute("data-opened-from")) {
      var off = main.querySelectorAll(".decide button");
      for (var o = 0; o < off.length; o++) off[o].disabled = true;
      return;
    }
    main.setAttribute("data-settling", "");
    var buttons = main.querySelectorAll("form button:not([disabled])");
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].disabled = true;
      buttons[i].setAttribute("data-settling", "");
    }
    if (settleTimer) clearTimeout(settleTimer);
    settleTimer = setTimeout(function () {
      settleTimer = null;
      main.removeAttribute("data-settling");
      var held = main.querySelectorAll("button[data-settling]");
      for (var j = 0; j < held.length; j++) {
        held[j].removeAttribute("data-settling");
        held[j].disabled = false;
      }
    }, SETTLE_MS);
  }
  // A page just loaded is under a pointer that was aimed at something else, as after a swap (the
  // page that sent the browser here chose when): it settles too, and one another page opened
  // stays off (settle).
  var loaded = document.getElementById("live");
  if (loaded && loaded.querySelector(".decide")) settle(loaded);
  // A form submitted in the settling second (Enter in a field, a script's requestSubmit) is held too.
  document.addEventListener("submit", function (e) {
    var main = document.getElementById("live");
    if (!main || !main.hasAttribute("data-settling") || !main.contains(e.target)) return;
    e.preventDefault();
    e.stopImmediatePropagation();
    notice(HELD);
  }, true);
  var wanted = false;
  var fetching = false;
  function refresh() {
    var main = document.getElementById("live");
    if (!wanted || fetching || !main) return;
    if (!main.hasAttribute("data-live") || typing(main)) return notice(RELOAD);
    if (pointing(main)) return notice(WAITING);
    wanted = false;
    fetching = true;
    fetch(location.pathname + location.search, { credentials: "same-origin", headers: { Accept: "text/html", "${REFRESH_HEADER}": "1" } })
      .then(function (r) {
        // Logged out (sent to the login page) or the page is gone: say so, never reload.
        if (r.redirected || !r.ok) { notice(RELOAD); return null; }
        return r.text();
      })
      .then(function (text) {
        fetching = false;
        if (text === null || text === undefined) return;
        var doc = new DOMParser().parseFromString(text, "text/html");
        var next = doc.getElementById("live");
        var now = document.getElementById("live");
        if (!next || !now) return;
        // The pointer or the keyboard came to a control while the page was fetched: wait again.
        if (typing(now) || pointing(now)) { wanted = true; return refresh(); }
        now.replaceChildren.apply(now, Array.prototype.slice.call(next.childNodes));
        window.portcullisMarkCut();
        clearNotice();
        settle(now);
        refresh();
      })
      .catch(function () { fetching = false; });
  }
  if (!document.querySelector("nav") || typeof EventSource === "undefined") return;
  var timer = null;
  function soon(ms) {
    if (timer || !wanted) return;
    timer = setTimeout(function () { timer = null; refresh(); }, ms);
  }
  // Leaving a control, or a field, is when a waiting change may show.
  document.addEventListener("pointerout", function () { soon(50); }, true);
  document.addEventListener("focusout", function () { soon(50); }, true);
  var main = document.getElementById("live");
  var since = main && main.getAttribute("data-live");
  var source = new EventSource(since ? "/events?since=" + encodeURIComponent(since) : "/events");
  source.addEventListener("change", function () {
    wanted = true;
    soon(100);
  });
  source.addEventListener("ended", function () { source.close(); location.assign("/login"); });
})();
`;

export const CONSOLE_CSS = `:root { color-scheme: light dark; --fg: #1b1f24; --bg: #fbfbfa; --muted: #5d6570; --line: #d6d9de;
  --expand: #b3261e; --narrow: #1a7f37; --cosmetic: #5d6570; --card: #fff; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e6e6; --bg: #15171a; --muted: #9aa3ad; --line: #30353b; --card: #1d2024; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header.top { display: flex; gap: 1rem; align-items: center; padding: .5rem 1rem; border-bottom: 1px solid var(--line); }
nav { display: flex; gap: .8rem; align-items: center; flex: 1; }
nav a[aria-current] { font-weight: 700; }
nav .proof { margin-left: auto; color: var(--muted); font-size: 12px; }
/* every word wraps anywhere: a label, a scope name or a digest without a space widens no column */
main { padding: 1rem 1rem 3rem; max-width: 1400px; margin: 0 auto; overflow-wrap: anywhere; }
h1 { font-size: 20px; margin: .2rem 0 1rem; } h2 { font-size: 16px; margin: 0; } h3 { font-size: 13px; margin: 0 0 .3rem; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
code, pre { font: 12px/1.4 ui-monospace, monospace; overflow-wrap: anywhere; }
/* names keep their spaces ("to  x" is not "to x") and their case (a heading's capitals made
   "transfer" read "TRANSFER"), and wrap anywhere; a name's column takes at most about a third of
   the table, so a long one never squeezes its value into one character a line */
.name { white-space: pre-wrap; overflow-wrap: anywhere; text-transform: none; letter-spacing: normal; }
.args th { width: 30%; }
/* a stored note as long as its writer liked, in its capped box, keeps a column a word wide: its box
   wraps anywhere, so the table sized the column to one letter, every row of it ~490px tall */
.args td.note .stored-box, .args td.note .cut-note { min-width: 6rem; }
/* a look-alike warning's row under its argument's (card.ts mixedScript): one argument, no line between */
.args tr.warned > * { border-bottom: none; } .args tr.warning p { margin: 0; }
/* no height cap here: a box capped without its note hides text silently (the capped boxes are .capped) */
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: .2rem 0; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: .8rem 1rem; margin-bottom: 1rem; }
.card .meta { color: var(--muted); margin: .2rem 0 .6rem; font-size: 12px; }
.card .call-wait { margin: -.4rem 0 .6rem; font-size: 12px; } .card .call-wait-no { font-weight: 600; }
.card .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: .6rem 1.2rem; }
.card section { min-width: 0; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .1rem .6rem; margin: 0; } dt { color: var(--muted); } dd { margin: 0; overflow-wrap: anywhere; }
.digest { color: var(--muted); font: 11px ui-monospace, monospace; overflow-wrap: anywhere; margin: .2rem 0; }
.cls { padding: 0 .35rem; border-radius: 3px; font-size: 11px; font-weight: 700; text-transform: uppercase; border: 1px solid currentColor; }
.cls-expands { color: var(--expand); } .cls-narrows { color: var(--narrow); } .cls-cosmetic, .cls-unchanged { color: var(--cosmetic); }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; vertical-align: top; padding: .2rem .4rem; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
.value { white-space: pre-wrap; overflow-wrap: anywhere; }
/* the console's own column headings and buttons are never broken inside a word ("mod|e", "Revo|ke"):
   a table squeezes its columns down to what may wrap anywhere, which only the cells' data may */
thead th, button { overflow-wrap: normal; }
/* the server's words (serverText.ts): framed, captioned as its claim, never in the card's heading
   style, and capped at 8 lines of 12px/1.4 text, as an argument's value is, so neither can push
   the arguments or the buttons out of view; the note after a box says when it does not all show */
.capped { max-height: calc(8 * 1.4 * 12px); overflow: auto; }
.server-says { margin: .3rem 0; padding: .25rem .5rem; border: 1px dashed var(--muted); border-radius: 4px; background: var(--bg); }
.server-says figcaption { font-size: 12px; font-style: italic; color: var(--muted); text-transform: none; letter-spacing: normal; }
.server-says pre.said { margin: .15rem 0 0; font-weight: 400; text-transform: none; letter-spacing: normal; }
.cut-note { margin: .1rem 0 0; font-size: 12px; font-style: italic; font-weight: 600; color: var(--expand); text-transform: none; letter-spacing: normal; }
/* a name's box and its note inside a heading, a sentence or a cell are spans drawn as blocks;
   a hidden note stays hidden (an author display rule would beat the browser's [hidden]) */
span.name-box, span.stored-box, span.cut-note { display: block; } .cut-note[hidden] { display: none; }
/* text from the store or the configuration (storedText.ts): its line ends kept in its box, capped at
   3 lines of its own type (a label, a scope, a note, a time: what the card is about, not the words
   the human reviews), so that all of it made long at once still leaves the buttons in the first screen */
span.stored-box.capped { max-height: calc(3 * 1.45em); }
.stored { white-space: pre-wrap; overflow-wrap: anywhere; text-transform: none; letter-spacing: normal; }
.args-count { margin: 0 0 .6rem; font-size: 12px; font-weight: 600; }
.server-says table { margin: .15rem 0 0; }
/* the Catalog page's diff: columns of fixed shares, so a value as wide as the server likes cannot
   squeeze the others into a letter a line (a table's automatic layout sizes columns by content) */
table.diff { table-layout: fixed; }
table.diff thead th:nth-child(1) { width: 22%; } table.diff thead th:nth-child(2) { width: 12%; }
table.diff thead th:nth-child(3), table.diff thead th:nth-child(4) { width: 28%; } table.diff thead th:nth-child(5) { width: 10%; }
.inputs-line { margin: .2rem 0; }
.decide { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin-top: .8rem; padding-top: .6rem; border-top: 1px solid var(--line); }
form.inline { display: inline; }
.decide form { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
.decide form:last-child { margin-left: auto; }
.deny-group { display: inline-flex; gap: .3rem; }
button { font: inherit; padding: .3rem .8rem; border-radius: 4px; border: 1px solid var(--line); background: var(--bg); color: var(--fg); cursor: pointer; }
button.danger { border-color: var(--expand); color: var(--expand); }
input[type=text], input[type=password] { font: inherit; padding: .3rem .4rem; border: 1px solid var(--line); border-radius: 4px; background: var(--bg); color: var(--fg); }
.error { color: var(--expand); font-weight: 600; } .ok { color: var(--narrow); }
main[data-opened-from] .decide { pointer-events: none; opacity: .45; }
.opened-from { margin: 0; padding: .5rem 1rem; background: #fff3cd; color: #5c4500; border-bottom: 1px solid #e0c36a; }
.stale { position: fixed; left: 0; right: 0; bottom: 0; margin: 0; padding: .4rem 1rem; background: #fff3cd; color: #5c4500; border-top: 1px solid #e0c36a; }
button:disabled { opacity: .5; cursor: not-allowed; }
.login, .proof-form { max-width: 32rem; margin: 3rem auto; }
.login label, .proof-form label { display: block; margin: .6rem 0; }
.empty { color: var(--muted); }
/* the Requests page when it does not draw every pending request (requestList.ts) */
.requests-capped { margin: 0 0 1rem; padding: .4rem .8rem; border: 1px solid var(--line); border-radius: 6px; font-size: 13px; }
.requests-capped p { margin: 0 0 .3rem; } .pager { font-weight: 600; }
.sessions-page { display: inline-block; margin: .2rem 1rem .2rem 0; }
/* the process chain's list, capped in height with its note: a chain of thousands leaves the buttons in view */
.chain-box ol { margin: 0; padding-left: 2.2rem; }
main > section, main > h2, main > h3 { margin-top: 1.4rem; } main > table { margin-bottom: 1rem; }
.server { border-bottom: 1px solid var(--line); padding: .6rem 0; } .status { color: var(--muted); font-size: 12px; }
`;
