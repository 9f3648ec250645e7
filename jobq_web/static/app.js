// jobq web: live pages and confirmed actions. No inline script anywhere (the
// Content-Security-Policy forbids it): everything the pages do is here.
(function () {
  "use strict";
  var banner = document.getElementById("banner");
  var live = document.getElementById("live");
  var serverBanner = banner && banner.dataset.server === "1";

  function refresh() {
    if (window.htmx && document.getElementById("live")) {
      window.htmx.trigger(document.body, "jobq-change");
    }
  }
  function say(text) {
    if (!banner) return;
    banner.textContent = text;  // text, never markup
    banner.hidden = false;
  }
  function clear() {
    if (serverBanner) { window.location.reload(); return; }
    if (banner) banner.hidden = true;
  }

  if (live && live.dataset.events && window.EventSource) {
    var events = new EventSource(live.dataset.events);
    events.addEventListener("change", refresh);
    events.addEventListener("down", function (e) {
      var why = "";
      try { why = JSON.parse(e.data); } catch (err) { why = ""; }
      say("The database is unreachable: " + why + ". Showing the last rows read.");
    });
    events.addEventListener("up", function () { clear(); refresh(); });
    events.onerror = function () { say("The dashboard is not answering; trying again…"); };
    events.onopen = function () { if (!serverBanner && banner) banner.hidden = true; };
  }
  var every = live ? Number(live.dataset.every || 0) : 0;
  if (every > 0) {
    setInterval(function () { if (!document.hidden) refresh(); }, every * 1000);
  }

  // Every action is a form with data-confirm: asked before it is sent.
  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (form && form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      e.preventDefault();
    }
  });
})();
