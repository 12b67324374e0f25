/**
 * The browser half of the passkey ceremonies, appended to console.js. It loads
 * @simplewebauthn/browser (webauthn.js beside it, served by us) only when a ceremony starts, asks
 * the console for the options, runs the ceremony, and posts the answer back (JSON, with the
 * page's CSRF token in X-CSRF-Token). It never decides anything: the console verifies.
 */
export const PASSKEY_JS = `
(function () {
  var lib = null;
  var SCRIPT_URL = (document.currentScript && document.currentScript.src) || location.href;
  function webauthn() {
    if (window.SimpleWebAuthnBrowser) return Promise.resolve(window.SimpleWebAuthnBrowser);
    if (!lib) lib = new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      // beside this script, under this console run's own path (assetPaths.ts)
      s.src = new URL("webauthn.js", SCRIPT_URL).href;
      s.onload = function () {
        if (window.SimpleWebAuthnBrowser) resolve(window.SimpleWebAuthnBrowser);
        else reject(new Error("the WebAuthn library did not load"));
      };
      s.onerror = function () { lib = null; reject(new Error("the WebAuthn library did not load")); };
      document.head.appendChild(s);
    });
    return lib;
  }
  function csrf() {
    var input = document.querySelector('input[name="csrf"]');
    return input ? input.value : "";
  }
  function post(path, body) {
    return fetch(path, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf(), "X-Proof-Key": window.portcullisProofKey() },
      body: JSON.stringify(body)
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (j) {
        if (!r.ok) throw new Error(j.error || "the console answered " + r.status);
        return j;
      });
    });
  }
  function say(near, message) {
    var scope = (near && near.closest && near.closest("section, article, main")) || document;
    var p = scope.querySelector('[data-testid="passkey-error"]') || document.querySelector('[data-testid="passkey-error"]');
    if (!p) { window.console.error(message); return; }
    p.textContent = message;
    p.hidden = false;
  }
  function failed(near, busy) {
    return function (e) {
      if (busy) busy.disabled = false;
      var name = e && e.name;
      say(near, name === "NotAllowedError" ? "the passkey was not used (cancelled or timed out)" : (e && e.message) || String(e));
    };
  }
  function login(button) {
    button.disabled = true;
    var next = document.querySelector('input[name="next"]');
    post("/login/passkey/options", {})
      .then(function (j) { return webauthn().then(function (w) { return w.startAuthentication({ optionsJSON: j.options }); }); })
      .then(function (response) { return post("/login/passkey", { response: response, next: next ? next.value : "/" }); })
      .then(function (j) { location.assign(j.location); })
      .catch(failed(button, button));
  }
  function register(form, submitter) {
    var pass = form.querySelector('input[name="passphrase"]');
    var name = form.querySelector('input[name="name"]');
    if (submitter) submitter.disabled = true;
    post("/passkeys/options", pass && pass.value ? { passphrase: pass.value } : {})
      .then(function (j) {
        if (pass) pass.value = "";
        if (j.proofKey) window.portcullisKeepProofKey(j.proofKey);
        return webauthn().then(function (w) { return w.startRegistration({ optionsJSON: j.options }); });
      })
      .then(function (response) { return post("/passkeys/register", { response: response, name: name ? name.value : "" }); })
      .then(function (j) { location.assign(j.location); })
      .catch(failed(form, submitter));
  }
  function decide(form, submitter) {
    var id = form.getAttribute("data-request");
    var reason = form.querySelector('input[name="reason"]');
    var reviewed = form.querySelector('input[name="reviewed"]');
    var unvouched = form.elements.namedItem("unvouched");
    var base = "/requests/" + encodeURIComponent(id) + "/passkey";
    if (!submitter) return;
    submitter.disabled = true;
    post(base + "/options", { action: submitter.value, reason: reason ? reason.value : "", reviewed: reviewed ? reviewed.value : "", unvouched: unvouched && unvouched.checked ? unvouched.value : "" })
      .then(function (j) { return webauthn().then(function (w) { return w.startAuthentication({ optionsJSON: j.options }); }); })
      .then(function (response) { return post(base, { response: response }); })
      .then(function (j) { location.assign(j.location); })
      .catch(failed(form, submitter));
  }
  document.addEventListener("submit", function (e) {
    var form = e.target;
    var kind = form && form.getAttribute && form.getAttribute("data-passkey");
    if (!kind) return;
    e.preventDefault();
    if (kind === "register") register(form, e.submitter);
    else if (kind === "decide") decide(form, e.submitter);
  });
  document.addEventListener("click", function (e) {
    var button = e.target && e.target.closest && e.target.closest("[data-passkey-login]");
    if (button) { e.preventDefault(); login(button); }
  });
})();
`;
