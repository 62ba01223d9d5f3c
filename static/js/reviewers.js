// The Reviewers page: Cohen's kappa between blind reviews per period, with its 95 % interval as
// error bars and the periods where the disagreement alert fires marked. Data comes from the JSON
// block the server renders (no inline script: the CSP forbids it); text goes in with textContent.
(function () {
  "use strict";
  var block = document.getElementById("reviewers-config");
  var target = document.getElementById("chart-kappa");
  if (!block || !target || typeof Plotly === "undefined") {
    return;
  }
  var config = JSON.parse(block.textContent);
  var points = config.timeline.filter(function (p) {
    return p.n > 0 && p.kappa.kappa !== null;
  });
  var summary = document.getElementById("summary-kappa");
  if (!points.length) {
    if (summary) {
      summary.textContent = "No period has a pair with a defined kappa yet.";
    }
    return;
  }
  function label(p) {
    return (
      "kappa " + p.kappa.kappa.toFixed(2) + " [" + p.kappa.low.toFixed(2) + ", " + p.kappa.high.toFixed(2) +
      "], n = " + p.n + (p.kappa.small ? " (n too small)" : "") + (p.alert ? " — ALERT" : "")
    );
  }
  var trace = {
    type: "scatter",
    mode: "lines+markers",
    name: "kappa, all reviewers",
    x: points.map(function (p) { return p.start; }),
    y: points.map(function (p) { return p.kappa.kappa; }),
    text: points.map(label),
    hoverinfo: "x+text",
    error_y: {
      type: "data",
      symmetric: false,
      array: points.map(function (p) { return p.kappa.high - p.kappa.kappa; }),
      arrayminus: points.map(function (p) { return p.kappa.kappa - p.kappa.low; }),
      color: "#0b5cad",
    },
    marker: {
      size: points.map(function (p) { return p.kappa.small ? 6 : 10; }),
      color: points.map(function (p) { return p.alert ? "#b00020" : "#0b5cad"; }),
      symbol: points.map(function (p) { return p.kappa.small ? "circle-open" : "circle"; }),
    },
    line: { color: "#0b5cad" },
  };
  var alerts = points.filter(function (p) { return p.alert; });
  var layout = {
    margin: { t: 20, r: 20, b: 50, l: 60 },
    yaxis: { title: { text: "Cohen's kappa" }, range: [-1, 1.05], zeroline: true },
    xaxis: {
      title: { text: config.period === "day" ? "Day" : "Week starting" },
      type: "date",
      tickformat: "%Y-%m-%d",
    },
    showlegend: false,
  };
  Plotly.newPlot(target, [trace], layout, { displayModeBar: false, responsive: true });
  if (summary) {
    var last = points[points.length - 1];
    summary.textContent =
      "Latest period (" + last.start + "): " + label(last) + ". " +
      (alerts.length ? alerts.length + " period(s) raised the disagreement alert (red)." : "No alert.") +
      " Open circles: fewer than " + config.min_pairs + " pairs (n too small).";
  }
})();
