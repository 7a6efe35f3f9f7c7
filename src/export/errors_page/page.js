"use strict";
(function () {
  var rows = Array.prototype.slice.call(document.querySelectorAll("#inbox tbody tr"));
  var outcome = document.getElementById("outcome");
  var status = document.getElementById("status");
  var q = document.getElementById("q");
  var shown = document.getElementById("shown");

  function fromHash() {
    var params = new URLSearchParams(location.hash.slice(1));
    outcome.value = params.get("outcome") || "";
    status.value = params.get("status") || "";
    q.value = params.get("q") || "";
  }

  function toHash() {
    var params = new URLSearchParams();
    if (outcome.value) params.set("outcome", outcome.value);
    if (status.value) params.set("status", status.value);
    if (q.value) params.set("q", q.value);
    var hash = params.toString();
    history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search);
  }

  function apply() {
    var needle = q.value.trim().toLowerCase();
    var visible = 0;
    rows.forEach(function (row) {
      var code = Number(row.dataset.status);
      var hide =
        (outcome.value && row.dataset.outcome !== outcome.value) ||
        (status.value === "4xx" && (code < 400 || code > 499)) ||
        (status.value === "5xx" && (code < 500 || code > 599)) ||
        (needle && row.dataset.search.indexOf(needle) < 0);
      row.hidden = Boolean(hide);
      if (!hide) visible += 1;
    });
    shown.textContent = visible + " of " + rows.length + " groups shown";
    shown.dataset.visible = String(visible);
  }

  document.querySelectorAll("time[data-ms]").forEach(function (time) {
    var at = new Date(Number(time.dataset.ms));
    time.title = at.toISOString();
    time.dateTime = at.toISOString();
  });
  document.getElementById("filters").addEventListener("submit", function (event) {
    event.preventDefault();
  });
  [outcome, status, q].forEach(function (control) {
    control.addEventListener("input", function () {
      apply();
      toHash();
    });
  });
  window.addEventListener("hashchange", function () {
    fromHash();
    apply();
  });
  fromHash();
  apply();
  document.documentElement.dataset.ready = "1";
})();
