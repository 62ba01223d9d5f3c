/* The attention diagnostic panel: one plotly heat-map per layer and head, fetched as JSON when
   the panel is opened. plotly.js is loaded from our own static files only when needed. */
(function () {
  "use strict";
  var panel = document.getElementById("attention-panel");
  var configElement = document.getElementById("attention-config");
  if (!panel || !configElement) return;
  var config = JSON.parse(configElement.textContent);
  var layerSelect = document.getElementById("attention-layer");
  var headSelect = document.getElementById("attention-head");
  var plot = document.getElementById("attention-plot");
  var status = document.getElementById("attention-status");
  var started = false;

  function option(select, value, label) {
    var o = document.createElement("option");
    o.value = value;
    o.textContent = label;
    select.appendChild(o);
  }
  for (var l = 0; l < config.layers; l++) option(layerSelect, String(l), "Layer " + (l + 1));
  option(layerSelect, "rollout", "Rollout (all layers)");
  for (var h = 0; h < config.heads; h++) option(headSelect, String(h), "Head " + (h + 1));

  // plotly.js reads a few HTML tags in labels (<b>, <a href>, <br>): show tokens as plain text.
  function plain(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  function loadPlotly(done) {
    if (window.Plotly) { done(); return; }
    var script = document.createElement("script");
    script.src = config.plotly;
    script.onload = done;
    script.onerror = function () { status.textContent = "The chart library could not be loaded."; };
    document.head.appendChild(script);
  }

  function draw() {
    var layer = layerSelect.value;
    headSelect.disabled = layer === "rollout";
    var params = new URLSearchParams({ layer: layer, head: headSelect.value });
    status.textContent = "Loading…";
    fetch(config.url + "?" + params.toString(), { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        return response.json().then(function (body) {
          if (!response.ok) throw new Error(body.error || response.statusText);
          return body;
        });
      })
      .then(function (data) {
        // Token positions as the axis (the same word can occur twice); words as tick labels.
        var positions = data.tokens.map(function (_, i) { return i; });
        var labels = data.tokens.map(plain);
        var axis = { tickmode: "array", tickvals: positions, ticktext: labels, tickfont: { size: 10 } };
        window.Plotly.react(plot, [{
          type: "heatmap", z: data.z, x: positions, y: positions, colorscale: [[0, "#f7fbff"], [0.5, "#6baed6"], [1, "#08306b"]], zmin: 0,
          colorbar: { title: { text: "weight" } },
          hovertemplate: "query %{y}: %{z:.4f} to key %{x}<extra></extra>"
        }], {
          title: { text: data.title },
          xaxis: Object.assign({ title: { text: "attended token (key)" } }, axis),
          yaxis: Object.assign({ title: { text: "attending token (query)" }, autorange: "reversed" }, axis),
          margin: { l: 110, r: 20, t: 50, b: 110 },
          height: 640
        }, { displayModeBar: false, responsive: true });
        status.textContent = data.title + ". Normalisation: " + data.normalisation + ".";
        plot.setAttribute("aria-label", "Attention heat-map, " + data.title);
      })
      .catch(function (error) { status.textContent = "Could not load this heat-map: " + error.message; });
  }

  panel.addEventListener("toggle", function () {
    if (panel.open && !started) {
      started = true;
      loadPlotly(draw);
    }
  });
  layerSelect.addEventListener("change", draw);
  headSelect.addEventListener("change", draw);
})();
