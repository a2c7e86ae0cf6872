// rockmq dashboard: the overview's moving numbers, polled every 2 s from /ui/api/overview.
(function () {
  var rate = document.getElementById("rate-in");
  if (!rate) return;
  var asOf = document.getElementById("as-of");
  function poll() {
    fetch("/ui/api/overview", { headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (o) { if (o) { rate.textContent = o.rate_in; if (asOf) asOf.textContent = o.as_of; } })
      .catch(function () {});
  }
  setInterval(poll, 2000);
})();
