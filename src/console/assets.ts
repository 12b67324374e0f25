/**
 * The console's only script and stylesheet, served from this process (no CDN, no third-party
 * resource; the CSP allows 'self' only). The script does one thing: when /events says something
 * changed, it fetches the current page again and swaps its <main> — unless the human is typing
 * in a form there, in which case it only says that the page is out of date.
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
  function typing(main) {
    var el = document.activeElement;
    if (el && main.contains(el) && (el.tagName === "INPUT" || el.tagName === "TEXTAREA")) return true;
    var fields = main.querySelectorAll("input[type=text], input[type=password], textarea");
    for (var i = 0; i < fields.length; i++) if (fields[i].value) return true;
    return false;
  }
  function stale() {
    if (document.getElementById("stale")) return;
    var p = document.createElement("p");
    p.id = "stale";
    p.className = "stale";
    p.textContent = "Something changed. Reload the page to see it.";
    document.body.insertBefore(p, document.body.firstChild);
  }
  function refresh() {
    var main = document.getElementById("live");
    if (!main || !main.hasAttribute("data-live") || typing(main)) return stale();
    fetch(location.pathname + location.search, { credentials: "same-origin", headers: { Accept: "text/html", "${REFRESH_HEADER}": "1" } })
      .then(function (r) {
        // Logged out (sent to the login page) or the page is gone: say so, never reload.
        if (r.redirected || !r.ok) { stale(); return null; }
        return r.text();
      })
      .then(function (text) {
        if (text === null || text === undefined) return;
        var doc = new DOMParser().parseFromString(text, "text/html");
        var next = doc.getElementById("live");
        var now = document.getElementById("live");
        if (!next || !now || typing(now)) return;
        now.replaceChildren.apply(now, Array.prototype.slice.call(next.childNodes));
      })
      .catch(function () {});
  }
  if (!document.querySelector("nav") || typeof EventSource === "undefined") return;
  var timer = null;
  var main = document.getElementById("live");
  var since = main && main.getAttribute("data-live");
  var source = new EventSource(since ? "/events?since=" + encodeURIComponent(since) : "/events");
  source.addEventListener("change", function () {
    if (timer) return;
    timer = setTimeout(function () { timer = null; refresh(); }, 100);
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
main { padding: 1rem; max-width: 1400px; margin: 0 auto; }
h1 { font-size: 20px; margin: .2rem 0 1rem; } h2 { font-size: 16px; margin: 0; } h3 { font-size: 13px; margin: 0 0 .3rem; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
code, pre { font: 12px/1.4 ui-monospace, monospace; overflow-wrap: anywhere; }
.args th { white-space: nowrap; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: .2rem 0; max-height: 14rem; overflow: auto; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: .8rem 1rem; margin-bottom: 1rem; }
.card .meta { color: var(--muted); margin: .2rem 0 .6rem; font-size: 12px; }
.card .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: .6rem 1.2rem; }
.card section { min-width: 0; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .1rem .6rem; margin: 0; } dt { color: var(--muted); } dd { margin: 0; overflow-wrap: anywhere; }
.digest { color: var(--muted); font: 11px ui-monospace, monospace; overflow-wrap: anywhere; margin: .2rem 0; }
.cls { padding: 0 .35rem; border-radius: 3px; font-size: 11px; font-weight: 700; text-transform: uppercase; border: 1px solid currentColor; }
.cls-expands { color: var(--expand); } .cls-narrows { color: var(--narrow); } .cls-cosmetic, .cls-unchanged { color: var(--cosmetic); }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; vertical-align: top; padding: .2rem .4rem; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
.value { white-space: pre-wrap; overflow-wrap: anywhere; }
.decide { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin-top: .8rem; padding-top: .6rem; border-top: 1px solid var(--line); }
form.inline { display: inline; }
.decide form { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
.decide form:last-child { margin-left: auto; }
.deny-group { display: inline-flex; gap: .3rem; }
button { font: inherit; padding: .3rem .8rem; border-radius: 4px; border: 1px solid var(--line); background: var(--bg); color: var(--fg); cursor: pointer; }
button.danger { border-color: var(--expand); color: var(--expand); }
input[type=text], input[type=password] { font: inherit; padding: .3rem .4rem; border: 1px solid var(--line); border-radius: 4px; background: var(--bg); color: var(--fg); }
.error { color: var(--expand); font-weight: 600; } .ok { color: var(--narrow); }
.stale { margin: 0; padding: .4rem 1rem; background: #fff3cd; color: #5c4500; }
.login, .proof-form { max-width: 32rem; margin: 3rem auto; }
.login label, .proof-form label { display: block; margin: .6rem 0; }
.empty { color: var(--muted); }
main > section, main > h2, main > h3 { margin-top: 1.4rem; } main > table { margin-bottom: 1rem; }
.server { border-bottom: 1px solid var(--line); padding: .6rem 0; } .status { color: var(--muted); font-size: 12px; }
`;
