// rockmq dashboard: the overview's moving numbers and charts, polled every 2 s from /ui/api/overview.
// The server draws each chart (its polyline's points and its labels); this copies them in.
(function () {
  var rate = document.getElementById("rate-in");
  if (!rate) return;
  var asOf = document.getElementById("as-of");
  function chart(id, c) {
    var figure = document.getElementById(id);
    if (!figure) return;
    Object.keys(c).forEach(function (k) {
      if (k === "points") { figure.querySelector("polyline").setAttribute("points", c[k]); return; }
      var el = figure.querySelector("." + k);
      if (el) el.textContent = c[k];
    });
  }
  function poll() {
    fetch("/ui/api/overview", { headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (o) {
        if (!o) return;
        rate.textContent = o.rate_in;
        if (asOf) asOf.textContent = o.as_of;
        Object.keys(o.charts || {}).forEach(function (id) { chart(id, o.charts[id]); });
      })
      .catch(function () {});
  }
  setInterval(poll, 2000);
})();
