// The reliability diagram of a model version's page. The data comes from the JSON block the
// server renders (no inline script: the CSP forbids it).
(function () {
  "use strict";
  var block = document.getElementById("reliability-data");
  var target = document.getElementById("reliability-chart");
  if (!block || !target || typeof Plotly === "undefined") {
    return;
  }
  var data = JSON.parse(block.textContent);
  var traces = data.series.map(function (s) {
    return {
      type: "scatter",
      mode: "lines+markers",
      name: s.name,
      x: s.x,
      y: s.y,
      customdata: s.n,
      hovertemplate: "mean score %{x:.2f}: %{y:.2f} claims (%{customdata} messages)<extra>" + s.name + "</extra>",
    };
  });
  traces.push({
    type: "scatter",
    mode: "lines",
    name: "perfect calibration",
    x: [0, 1],
    y: [0, 1],
    line: { dash: "dot", color: "#888" },
    hoverinfo: "skip",
  });
  Plotly.newPlot(
    target,
    traces,
    {
      xaxis: { title: { text: "mean score in the bin" }, range: [0, 1] },
      yaxis: { title: { text: "share of claims in the bin" }, range: [0, 1] },
      height: 440,
      margin: { t: 30 },
    },
    { displayModeBar: false, responsive: true }
  );
})();
