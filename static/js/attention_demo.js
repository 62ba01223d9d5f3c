// Heat-maps for the "How attention works" page. Data comes from the JSON block the server
// renders (no inline script: the CSP forbids it).
(function () {
  "use strict";
  var block = document.getElementById("attention-demo-data");
  if (!block || typeof Plotly === "undefined") {
    return;
  }
  var data = JSON.parse(block.textContent);

  function draw(targetId, weights, title) {
    var target = document.getElementById(targetId);
    if (!target) {
      return;
    }
    Plotly.newPlot(
      target,
      [
        {
          type: "heatmap",
          z: weights,
          x: data.tokens,
          y: data.tokens,
          zmin: 0,
          zmax: 1,
          colorscale: [
            [0, "#f7fbff"],
            [1, "#08306b"],
          ],
          texttemplate: "%{z:.3f}",
          textfont: { size: 13 },
          hovertemplate: "query %{y} → key %{x}: %{z:.3f}<extra></extra>",
        },
      ],
      {
        title: { text: title },
        xaxis: { side: "top" },
        yaxis: { autorange: "reversed" },
        margin: { t: 80, l: 90 },
        height: 360,
      },
      { displayModeBar: false, responsive: true }
    );
  }

  draw("attention-demo-full", data.weights, "Weights, no mask");
  draw("attention-demo-masked", data.masked_weights, "Weights, padding masked");
})();
