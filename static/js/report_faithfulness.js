// Charts of the faithfulness report page. The data comes from the JSON block the server renders
// (no inline script: the CSP forbids it).
(function () {
  "use strict";
  var block = document.getElementById("faithfulness-data");
  if (!block || typeof Plotly === "undefined") {
    return;
  }
  var data = JSON.parse(block.textContent);
  var config = { displayModeBar: false, responsive: true };
  var names = {
    flip_rate: "Decision flip rate",
    pass_rate: "Check pass rate",
    comprehensiveness: "Comprehensiveness",
    sufficiency: "Sufficiency",
    token_f1: "Token-F1 vs rationale",
  };

  var metrics = document.getElementById("faithfulness-metrics");
  if (metrics && data.methods.length) {
    var traces = Object.keys(names).map(function (key) {
      return {
        type: "bar",
        name: names[key],
        x: data.labels,
        y: data.metrics[key],
        hovertemplate: "%{x}: %{y:.3f}<extra>" + names[key] + "</extra>",
      };
    });
    Plotly.newPlot(
      metrics,
      traces,
      {
        title: { text: "Per method (the same messages)" },
        barmode: "group",
        yaxis: { title: { text: "mean" } },
        height: 420,
        margin: { t: 60, b: 110 },
      },
      config
    );
  }

  var aopc = document.getElementById("faithfulness-aopc");
  if (aopc && data.aopc.length) {
    // Ticks at the measured deletion levels only: a log axis over 1-50 % otherwise labels its
    // minor ticks with bare digits ("6 9 1 2 3 ... 10 2 3") that read as data.
    var levels = [];
    data.aopc.forEach(function (curve) {
      curve.x.forEach(function (x) {
        if (levels.indexOf(x) < 0) levels.push(x);
      });
    });
    levels.sort(function (a, b) {
      return a - b;
    });
    Plotly.newPlot(
      aopc,
      data.aopc.map(function (curve) {
        return {
          type: "scatter",
          mode: "lines+markers",
          name: curve.label,
          x: curve.x,
          y: curve.y,
          hovertemplate: "%{x}% deleted: %{y:.3f}<extra>" + curve.label + "</extra>",
        };
      }),
      {
        title: { text: "Comprehensiveness as more top words are deleted (AOPC is its mean)" },
        xaxis: {
          title: { text: "% of the words deleted (top-ranked first)" },
          type: "log",
          tickvals: levels,
          ticktext: levels.map(function (x) {
            return x + " %";
          }),
        },
        yaxis: { title: { text: "score drop" } },
        height: 400,
      },
      config
    );
  }

  var canary = document.getElementById("faithfulness-canary");
  if (canary && data.canary) {
    Plotly.newPlot(
      canary,
      [
        {
          type: "bar",
          x: data.canary.labels,
          y: data.canary.pass_rates,
          hovertemplate: "%{x}: %{y:.3f}<extra></extra>",
        },
      ],
      {
        title: { text: "Canary pass rate per method" },
        yaxis: { range: [0, 1] },
        height: 320,
      },
      config
    );
  }
})();
