// The pages' one browser script (WebAuthn calls), kept in a module so the build ships it; served at /assets/passkey.js.
/* eslint-disable */
export const PASSKEY_JS = String.raw`// The pages' only script: the WebAuthn calls of the login and account pages (served as a file so the
// pages keep a strict Content-Security-Policy without inline script). No dependencies.
'use strict';
(function () {
  var b64u = {
    toBuf: function (s) { s = s.replace(/-/g, '+').replace(/_/g, '/'); while (s.length % 4) s += '='; var b = atob(s), u = new Uint8Array(b.length); for (var i = 0; i < b.length; i++) u[i] = b.charCodeAt(i); return u.buffer; },
    fromBuf: function (buf) { var u = new Uint8Array(buf), s = ''; for (var i = 0; i < u.length; i++) s += String.fromCharCode(u[i]); return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, ''); },
  };
  function creationOptions(o) {
    if (PublicKeyCredential.parseCreationOptionsFromJSON) return PublicKeyCredential.parseCreationOptionsFromJSON(o);
    var x = Object.assign({}, o, { challenge: b64u.toBuf(o.challenge), user: Object.assign({}, o.user, { id: b64u.toBuf(o.user.id) }) });
    x.excludeCredentials = (o.excludeCredentials || []).map(function (c) { return Object.assign({}, c, { id: b64u.toBuf(c.id) }); });
    return x;
  }
  function requestOptions(o) {
    if (PublicKeyCredential.parseRequestOptionsFromJSON) return PublicKeyCredential.parseRequestOptionsFromJSON(o);
    var x = Object.assign({}, o, { challenge: b64u.toBuf(o.challenge) });
    x.allowCredentials = (o.allowCredentials || []).map(function (c) { return Object.assign({}, c, { id: b64u.toBuf(c.id) }); });
    return x;
  }
  function toJSON(cred) {
    if (typeof cred.toJSON === 'function') return cred.toJSON();
    var r = cred.response, out = { id: cred.id, rawId: b64u.fromBuf(cred.rawId), type: cred.type, clientExtensionResults: cred.getClientExtensionResults(), authenticatorAttachment: cred.authenticatorAttachment || undefined, response: { clientDataJSON: b64u.fromBuf(r.clientDataJSON) } };
    if (r.attestationObject) { out.response.attestationObject = b64u.fromBuf(r.attestationObject); out.response.transports = r.getTransports ? r.getTransports() : []; }
    if (r.authenticatorData) { out.response.authenticatorData = b64u.fromBuf(r.authenticatorData); out.response.signature = b64u.fromBuf(r.signature); if (r.userHandle) out.response.userHandle = b64u.fromBuf(r.userHandle); }
    return out;
  }
  function post(url, body) {
    return fetch(url, { method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json', Accept: 'application/json' }, body: JSON.stringify(body) })
      .then(function (res) { return res.json().catch(function () { return {}; }).then(function (j) { if (!res.ok) { var e = new Error(j.error_description || 'The request failed.'); e.body = j; throw e; } return j; }); });
  }
  function say(el, text) { if (el) { el.textContent = text; el.hidden = !text; } }
  // Browsers refuse WebAuthn (SecurityError) on an IP address, and where the server's passkey settings
  // do not match the address in the location bar: say which, rather than that something failed.
  function ipHost(h) { return /^[0-9.]+$/.test(h) || h.indexOf(':') >= 0 || h.charAt(0) === '['; }
  function failureText(e, fallback) {
    if (e && e.body && e.body.error_description) return e.body.error_description;
    if (e && e.name === 'SecurityError') {
      return ipHost(location.hostname)
        ? 'Passkeys need this site to be opened by a host name (such as localhost), not an IP address (' + location.hostname + ').'
        : 'This browser will not use passkeys at ' + location.hostname + ': the server\'s passkey settings (WEBAUTHN_RP_ID, WEBAUTHN_ORIGINS) do not match this address.';
    }
    return fallback;
  }
  var status = document.getElementById('passkey-status');

  // Login page: sign in with a passkey (button, and conditional UI in the email field where supported).
  var signin = document.getElementById('passkey-signin');
  if (signin && window.PublicKeyCredential) {
    var interaction = signin.getAttribute('data-interaction');
    var pending = null;
    var run = function (mediation) {
      if (pending) pending.abort();
      var ctl = new AbortController(); pending = ctl;
      // Autofill (conditional mediation) runs in the background: until the person picks a passkey from it,
      // none of its failures concern them (no WebAuthn on this address, options not fetched, aborted).
      var background = mediation === 'conditional', chosen = false;
      return post('/login/passkey/options', { interaction: interaction })
        .then(function (r) { var req = { publicKey: requestOptions(r.options), signal: ctl.signal }; if (mediation) req.mediation = mediation; return navigator.credentials.get(req); })
        .then(function (cred) { chosen = true; return post('/login/passkey/verify', { interaction: interaction, response: toJSON(cred) }); })
        .then(function (r) { window.location.assign(r.continue); })
        .catch(function (e) {
          if ((e && e.name === 'AbortError') || (background && !chosen)) return;
          say(status, failureText(e, 'The passkey sign-in did not complete. Try again or use an email code.'));
        });
    };
    signin.hidden = false;
    signin.addEventListener('click', function () { say(status, ''); run(null); });
    if (PublicKeyCredential.isConditionalMediationAvailable) {
      PublicKeyCredential.isConditionalMediationAvailable().then(function (ok) { if (ok && !pending) run('conditional'); }).catch(function () {});
    }
  }

  // Re-authentication page: confirm with one of the user's passkeys.
  var reauth = document.getElementById('passkey-reauth');
  if (reauth && window.PublicKeyCredential) {
    reauth.hidden = false;
    reauth.addEventListener('click', function () {
      say(status, '');
      post('/api/account/reauth/options', {})
        .then(function (r) { return navigator.credentials.get({ publicKey: requestOptions(r.options) }); })
        .then(function (cred) { return fetch('/api/account/reauth', { method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ response: toJSON(cred) }) }); })
        .then(function (res) { if (res.status !== 204) return res.json().then(function (j) { var e = new Error('refused'); e.body = j; throw e; }); window.location.assign('/account?done=reauth'); })
        .catch(function (e) { say(status, failureText(e, 'The passkey did not confirm it is you. Try an emailed code.')); });
    });
  }

  // Account page: add a passkey.
  var add = document.getElementById('passkey-add');
  if (add && window.PublicKeyCredential) {
    add.hidden = false;
    add.addEventListener('click', function () {
      say(status, '');
      post('/api/account/passkeys/registration-options', {})
        .then(function (r) { return navigator.credentials.create({ publicKey: creationOptions(r.options) }); })
        .then(function (cred) { return post('/api/account/passkeys', { response: toJSON(cred) }); })
        .then(function () { window.location.assign('/account?done=added'); })
        .catch(function (e) {
          if (e && e.body && e.body.details && e.body.details.reauthenticate) { window.location.assign(e.body.details.reauthenticate[0] + '?next=add'); return; }
          say(status, failureText(e, 'The passkey was not added.'));
        });
    });
  }
})();`;
