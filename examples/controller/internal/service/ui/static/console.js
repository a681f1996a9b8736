// The console's live parts, loaded by every page (no inline script: the Content-Security-Policy
// allows none). A status page (#live with data-events) follows its request through the controller's
// server-sent event stream until succeeded or failed; "Resume status check" reopens a stream that ended
// without a final status. Nothing here starts, applies or retries anything.
(function () {
  "use strict";
  var terminal = { succeeded: true, failed: true };

  function follow(live) {
    var url = live.dataset.events;
    var state = document.getElementById("stream-state");
    var reconnect = document.getElementById("reconnect");
    var resume = document.getElementById("resume-form");
    var last = document.getElementById("status").textContent.trim();
    var es = new EventSource(url, { withCredentials: true });
    state.textContent = "live";
    reconnect.classList.add("hidden");
    es.addEventListener("status", function (ev) {
      var r = JSON.parse(ev.data);
      last = r.status;
      var st = document.getElementById("status");
      st.textContent = r.status;
      st.className = "st st-" + r.status;
      document.getElementById("counts").textContent = r.passed + "/" + r.total;
      document.getElementById("error-code").textContent = r.error_code || "";
      var jid = document.getElementById("jid");
      if (jid && r.jid) jid.textContent = r.jid;
      if (resume) resume.classList.toggle("hidden", r.status !== "unknown");
      if (terminal[r.status]) {
        es.close();
        state.textContent = "final";
      }
    });
    es.addEventListener("error", function (ev) {
      // The stream ended (an "error" event of the service, or the connection): stop, and offer to
      // resume the status check rather than reconnecting forever.
      es.close();
      if (terminal[last]) return;
      var msg = "the live status stopped";
      if (ev.data) {
        try { msg += ": " + JSON.parse(ev.data).error; } catch (e) { /* keep the short message */ }
      }
      state.textContent = msg;
      reconnect.classList.remove("hidden");
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var live = document.getElementById("live");
    if (!live || !live.dataset.events) return;
    var reconnect = document.getElementById("reconnect");
    reconnect.addEventListener("click", function () { follow(live); });
    if (live.dataset.terminal !== "true") follow(live);
  });
})();
