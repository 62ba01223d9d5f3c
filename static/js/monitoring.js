// The monitoring page: every chart is fetched from its JSON endpoint (/api/metrics/...) and drawn
// with plotly; each also gets a data table and a one-line text summary. Configuration comes from
// the JSON block the server renders (no inline script: the CSP forbids it). Data is put in the
// page with textContent only.
(function () {
  "use strict";
  var block = document.getElementById("monitoring-config");
  if (!block) {
    return;
  }
  var config = JSON.parse(block.textContent);
  var status = document.getElementById("monitoring-status");
  var COLORS = {
    guaranteed_returns: "#0b5cad",
    risk_free: "#b35900",
    performance_forecast: "#1d6b2f",
    regulatory_endorsement: "#6a1b9a",
    all: "#3d4752",
  };
  var METHOD_COLORS = ["#0b5cad", "#b35900", "#1d6b2f", "#6a1b9a"];
  var PLOT_CONFIG = { displayModeBar: false, responsive: true };
  var pending = 0;

  function query() {
    var params = new URLSearchParams();
    params.set("period", config.period);
    if (config.model_version) {
      params.set("model_version", String(config.model_version));
    }
    return params.toString();
  }

  function setStatus(text) {
    if (status) {
      status.textContent = text;
    }
  }

  function load(name, draw) {
    var url = config.endpoints[name] + "?" + query();
    pending += 1;
    setStatus("Loading charts…");
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) {
          throw new Error(url + " answered " + response.status);
        }
        return response.json();
      })
      .then(function (data) {
        draw(data);
      })
      .catch(function (error) {
        setStatus("A chart could not be loaded: " + error.message);
      })
      .then(function () {
        pending -= 1;
        if (pending === 0 && status && status.textContent === "Loading charts…") {
          setStatus("");
        }
      });
  }

  function percent(value) {
    return value === null || value === undefined ? "n/a" : (100 * value).toFixed(1) + " %";
  }

  function number(value, digits) {
    return value === null || value === undefined ? "n/a" : Number(value).toFixed(digits);
  }

  function color(key) {
    return COLORS[key] || "#555";
  }

  function rgba(hex, alpha) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + ((n >> 16) & 255) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + alpha + ")";
  }

  function el(id) {
    return document.getElementById(id);
  }

  function text(id, value) {
    var target = el(id);
    if (target) {
      target.textContent = value;
    }
  }

  // A table from a header row and rows of cells ({text, num, cls} or plain strings).
  function table(targetId, caption, header, rows) {
    var target = el(targetId);
    if (!target) {
      return;
    }
    target.textContent = "";
    if (!rows.length) {
      var empty = document.createElement("p");
      empty.className = "muted";
      empty.textContent = "No data yet.";
      target.appendChild(empty);
      return;
    }
    var t = document.createElement("table");
    t.className = "metric-table";
    var c = document.createElement("caption");
    c.textContent = caption;
    t.appendChild(c);
    var head = t.createTHead().insertRow();
    header.forEach(function (h) {
      var th = document.createElement("th");
      th.scope = "col";
      th.textContent = h;
      head.appendChild(th);
    });
    var body = t.createTBody();
    rows.forEach(function (cells) {
      var tr = body.insertRow();
      cells.forEach(function (cell) {
        var td = tr.insertCell();
        var spec = typeof cell === "object" && cell !== null ? cell : { text: cell };
        td.textContent = spec.text === null || spec.text === undefined ? "" : String(spec.text);
        if (spec.num) {
          td.className = "num";
        }
        if (spec.cls) {
          td.className += " " + spec.cls;
        }
      });
    });
    // a wide table scrolls on its own; the page does not scroll sideways
    var scroll = document.createElement("div");
    scroll.className = "table-scroll";
    scroll.appendChild(t);
    target.appendChild(scroll);
  }

  function activationShapes(activations) {
    return (activations || []).map(function (a) {
      return {
        type: "line",
        xref: "x",
        yref: "paper",
        x0: a.activated_at,
        x1: a.activated_at,
        y0: 0,
        y1: 1,
        line: { color: "#8c959f", width: 1, dash: "dash" },
      };
    });
  }

  function activationNotes(activations) {
    return (activations || []).map(function (a) {
      return {
        x: a.activated_at,
        y: 1,
        xref: "x",
        yref: "paper",
        text: "activated " + a.model_version.name,
        showarrow: false,
        yanchor: "bottom",
        font: { size: 10, color: "#4a5560" },
      };
    });
  }

  function layout(title, extra) {
    var base = {
      title: { text: title },
      margin: { t: 60, r: 30, b: 50, l: 60 },
      height: 360,
      legend: { orientation: "h", y: -0.2 },
      hovermode: "closest",
    };
    Object.keys(extra || {}).forEach(function (key) {
      base[key] = extra[key];
    });
    return base;
  }

  // Band traces (high, then low filled up to it) and the line itself.
  function banded(name, key, xs, ys, lows, highs, visible) {
    var c = color(key);
    return [
      { x: xs, y: highs, type: "scatter", mode: "lines", line: { width: 0 }, hoverinfo: "skip", showlegend: false, legendgroup: key, visible: visible },
      { x: xs, y: lows, type: "scatter", mode: "lines", line: { width: 0 }, fill: "tonexty", fillcolor: rgba(c, 0.15), hoverinfo: "skip", showlegend: false, legendgroup: key, visible: visible },
      { x: xs, y: ys, type: "scatter", mode: "lines+markers", name: name, legendgroup: key, line: { color: c, width: 2 }, visible: visible },
    ];
  }

  // --- Disagreement -------------------------------------------------------------------------------
  function drawDisagreement(data) {
    var traces = [];
    var rows = [];
    var latest = [];
    data.series.forEach(function (series) {
      var pts = series.points;
      var xs = pts.map(function (p) { return p.start; });
      var visible = series.claim_type === "all" ? "legendonly" : true;
      var lines = banded(series.name, series.claim_type, xs,
        pts.map(function (p) { return p.rate; }),
        pts.map(function (p) { return p.low; }),
        pts.map(function (p) { return p.high; }), visible);
      lines[2].customdata = pts.map(function (p) { return [p.disagreements, p.n, p.is_reference ? "reference" : ""]; });
      lines[2].hovertemplate = series.name + " %{x}: %{y:.1%} (%{customdata[0]} of %{customdata[1]}) %{customdata[2]}<extra></extra>";
      traces = traces.concat(lines);
      var alerts = pts.filter(function (p) { return p.alert; });
      if (alerts.length) {
        traces.push({
          x: alerts.map(function (p) { return p.start; }),
          y: alerts.map(function (p) { return p.rate; }),
          type: "scatter", mode: "markers", name: series.name + ": alert", legendgroup: series.claim_type,
          marker: { symbol: "x", size: 13, color: "#a40e26", line: { width: 2 } }, visible: visible,
        });
      }
      pts.forEach(function (p) {
        rows.push([
          series.name, p.start, { text: p.n, num: true }, { text: p.disagreements, num: true },
          { text: percent(p.rate), num: true }, percent(p.low) + " – " + percent(p.high),
          { text: p.false_positives, num: true }, { text: p.false_negatives, num: true },
          { text: p.type_mismatches + " of " + p.both_claim, num: true },
          p.is_reference ? "reference" : "",
          p.alert ? { text: "ALERT", cls: "alert-cell" } : "",
        ]);
      });
      if (pts.length && series.claim_type !== "all") {
        var last = pts[pts.length - 1];
        latest.push(series.name + " " + percent(last.rate) + " (" + last.disagreements + " of " + last.n + ")" + (last.alert ? ", alert" : ""));
      }
    });
    Plotly.newPlot(el("chart-disagreement"), traces, layout("Disagreement with the model, per " + data.period, {
      yaxis: { title: { text: "disagreement rate" }, tickformat: ".0%", rangemode: "tozero" },
      shapes: activationShapes(data.activations),
      annotations: activationNotes(data.activations),
    }), PLOT_CONFIG);
    text("summary-disagreement", data.model_version
      ? "Latest period: " + (latest.join("; ") || "no reviewed messages") + ". " + data.alerts.length + " alert(s) for this version."
      : "No model version yet.");
    table("table-disagreement", "Disagreement per claim type and " + data.period,
      ["claim type", "period", "reviewed", "disagree", "rate", "95 % interval", "flagged, not a claim", "missed claims", "type mismatches", "", "alert"], rows);
  }

  // --- Quality and confusion ---------------------------------------------------------------------------
  function errorBars(rates) {
    return {
      type: "data", symmetric: false,
      array: rates.map(function (r) { return r.rate === null || r.high === null ? null : r.high - r.rate; }),
      arrayminus: rates.map(function (r) { return r.rate === null || r.low === null ? null : r.rate - r.low; }),
    };
  }

  function drawQuality(data) {
    if (!data.overall) {
      text("summary-quality", "No model version yet.");
      return;
    }
    var names = data.per_claim_type.map(function (t) { return t.name; }).concat(["All claims"]);
    var precision = data.per_claim_type.map(function (t) { return t.precision; }).concat([data.overall.precision]);
    var recall = data.per_claim_type.map(function (t) { return t.recall; }).concat([data.overall.recall]);
    var recallRates = recall.map(function (r) { return { rate: r.recall, low: r.low, high: r.high }; });
    Plotly.newPlot(el("chart-quality"), [
      { type: "bar", name: "precision (reviewed flags)", x: names, y: precision.map(function (r) { return r.rate; }), error_y: errorBars(precision), marker: { color: "#0b5cad" } },
      { type: "bar", name: "recall (estimated from the QA sample)", x: names, y: recallRates.map(function (r) { return r.rate; }), error_y: errorBars(recallRates), marker: { color: "#b35900" } },
    ], layout("Precision and recall at the threshold: " + data.model_version.name, {
      barmode: "group", yaxis: { tickformat: ".0%", range: [0, 1.05] },
    }), PLOT_CONFIG);
    var s = data.strata;
    text("summary-quality", "Precision " + percent(data.overall.precision.rate) + " (" + data.overall.precision.successes + " of " + data.overall.precision.n +
      " reviewed flags); recall " + percent(data.overall.recall.recall) + " (" + percent(data.overall.recall.low) + " – " + percent(data.overall.recall.high) +
      "; " + data.overall.recall.reason + "). Below threshold: " + s.below_threshold.reviewed + " of " + s.below_threshold.messages + " messages reviewed in the QA sample.");
    var rows = data.per_claim_type.map(function (t) {
      return [t.name, { text: t.flagged_messages, num: true }, { text: t.reviewed_flagged, num: true },
        percent(t.precision.rate) + " (" + percent(t.precision.low) + " – " + percent(t.precision.high) + ")",
        percent(t.type_precision.rate),
        percent(t.recall.recall) + " (" + percent(t.recall.low) + " – " + percent(t.recall.high) + ")", t.recall.reason];
    });
    rows.push(["All claims", { text: s.flagged.messages, num: true }, { text: s.flagged.reviewed, num: true },
      percent(data.overall.precision.rate) + " (" + percent(data.overall.precision.low) + " – " + percent(data.overall.precision.high) + ")", "",
      percent(data.overall.recall.recall) + " (" + percent(data.overall.recall.low) + " – " + percent(data.overall.recall.high) + ")", data.overall.recall.reason]);
    table("table-quality", "Precision and recall per claim type (95 % intervals)",
      ["claim type", "flagged messages", "reviewed flags", "precision", "same type", "recall", "recall note"], rows);
  }

  function drawConfusion(data) {
    if (!data.model_version) {
      return;
    }
    var reversed = data.matrix.slice().reverse();
    var rowNames = data.names.slice().reverse();
    Plotly.newPlot(el("chart-confusion"), [{
      type: "heatmap", z: reversed, x: data.names, y: rowNames, colorscale: [[0, "#f7fbff"], [1, "#08306b"]],
      texttemplate: "%{z}", hovertemplate: "reviewer %{y}, model %{x}: %{z}<extra></extra>",
    }], layout("Reviewer (rows) vs model (columns): " + data.model_version.name, {
      height: 420, margin: { t: 60, l: 170, b: 110, r: 20 }, xaxis: { title: { text: "model" } }, yaxis: { title: { text: "reviewer" } },
    }), PLOT_CONFIG);
    table("table-confusion", "Reviewer's label (rows) against the model's (columns)", ["reviewer \\ model"].concat(data.names),
      data.matrix.map(function (row, i) { return [data.names[i]].concat(row.map(function (v) { return { text: v, num: true }; })); }));
  }

  // --- Drift ------------------------------------------------------------------------------------------------
  function drawLength(data) {
    var ref = data.reference;
    if (!ref) {
      text("summary-length", "No model version yet.");
      return;
    }
    if (!ref.available) {
      text("summary-length", "No length reference: " + ref.reason);
    }
    var pts = data.points;
    var xs = pts.map(function (p) { return p.start; });
    var traces = banded("share longer than the corpus p99 (" + number(ref.p99_chars, 0) + " chars)", "all", xs,
      pts.map(function (p) { return p.share; }), pts.map(function (p) { return p.low; }), pts.map(function (p) { return p.high; }), true);
    traces.push({ x: xs, y: pts.map(function (p) { return p.psi; }), type: "scatter", mode: "lines+markers", name: "length PSI vs corpus", yaxis: "y2", line: { color: "#b35900", dash: "dot" } });
    Plotly.newPlot(el("chart-length"), traces, layout("Message length against the training corpus", {
      yaxis: { title: { text: "share of long messages" }, tickformat: ".1%", rangemode: "tozero" },
      yaxis2: { title: { text: "PSI" }, overlaying: "y", side: "right", rangemode: "tozero" },
      shapes: activationShapes(data.activations),
    }), PLOT_CONFIG);
    if (ref.available && pts.length) {
      var last = pts[pts.length - 1];
      text("summary-length", "Latest " + data.period + ": " + percent(last.share) + " of " + last.messages + " messages longer than " + number(ref.p99_chars, 0) +
        " characters (1 % of the corpus is); length PSI " + number(last.psi, 3) + ".");
    }
    table("table-length", "Message length per " + data.period, ["period", "messages", "longer than p99", "share", "95 % interval", "PSI"],
      pts.map(function (p) {
        return [p.start, { text: p.messages, num: true }, { text: p.longer_than_p99, num: true }, { text: percent(p.share), num: true },
          percent(p.low) + " – " + percent(p.high), { text: number(p.psi, 3), num: true }];
      }));
  }

  function psiGuides() {
    return [config.psi_moderate, config.psi_major].map(function (y) {
      return { type: "line", xref: "paper", x0: 0, x1: 1, yref: "y", y0: y, y1: y, line: { color: "#a40e26", width: 1, dash: "dot" } };
    });
  }

  function drawScores(data) {
    if (!data.model_version) {
      text("summary-scores", "No model version yet.");
      return;
    }
    var pts = data.points;
    Plotly.newPlot(el("chart-scores"), [{
      x: pts.map(function (p) { return p.start; }), y: pts.map(function (p) { return p.psi; }),
      type: "scatter", mode: "lines+markers", name: "score PSI",
      marker: { symbol: pts.map(function (p) { return p.is_reference ? "circle-open" : "circle"; }), size: 8, color: "#0b5cad" },
      hovertemplate: "%{x}: PSI %{y:.3f}<extra></extra>",
    }], layout("Score distribution PSI against the reference, " + data.model_version.name, {
      yaxis: { title: { text: "PSI" }, rangemode: "tozero" },
      shapes: activationShapes(data.activations).concat(psiGuides()),
    }), PLOT_CONFIG);
    var last = pts.length ? pts[pts.length - 1] : null;
    text("summary-scores", last ? "Latest " + data.period + ": PSI " + number(last.psi, 3) + " over " + last.messages + " messages (open circles are reference periods; dotted lines at 0.1 and 0.25)." : "No scored messages yet.");
    table("table-scores", "Score PSI per " + data.period, ["period", "messages", "PSI", ""],
      pts.map(function (p) { return [p.start, { text: p.messages, num: true }, { text: number(p.psi, 3), num: true }, p.is_reference ? "reference" : ""]; }));
  }

  function drawRules(data) {
    if (!data.model_version) {
      text("summary-rules", "No model version yet.");
      return;
    }
    var traces = [];
    var rows = [];
    var notes = [];
    data.series.forEach(function (series) {
      var pts = series.points;
      var xs = pts.map(function (p) { return p.start; });
      traces.push({ x: xs, y: pts.map(function (p) { return p.rule_hits_not_flagged_rate; }), type: "scatter", mode: "lines+markers", name: series.name + ": rule hits not flagged", line: { color: color(series.claim_type) } });
      traces.push({ x: xs, y: pts.map(function (p) { return p.flags_without_rule_rate; }), type: "scatter", mode: "lines+markers", name: series.name + ": flags without a rule", line: { color: color(series.claim_type), dash: "dot" } });
      pts.forEach(function (p) {
        rows.push([series.name, p.start, { text: p.rule_hits_not_flagged + " of " + p.rule_hits, num: true }, { text: percent(p.rule_hits_not_flagged_rate), num: true },
          { text: p.flags_without_rule + " of " + p.model_flags, num: true }, { text: percent(p.flags_without_rule_rate), num: true }]);
      });
      if (pts.length) {
        var last = pts[pts.length - 1];
        notes.push(series.name + ": " + percent(last.rule_hits_not_flagged_rate) + " of rule hits not flagged, " + percent(last.flags_without_rule_rate) + " of flags without a rule");
      }
    });
    Plotly.newPlot(el("chart-rules"), traces, layout("Rules vs model per claim type", {
      yaxis: { tickformat: ".0%", range: [0, 1.05] }, shapes: activationShapes(data.activations), height: 420,
    }), PLOT_CONFIG);
    text("summary-rules", notes.length ? "Latest " + data.period + ": " + notes.join("; ") + "." : "No rule hits or flags yet.");
    table("table-rules", "Rules vs model per claim type and " + data.period, ["claim type", "period", "rule hits not flagged", "rate", "flags without a rule", "rate"], rows);
  }

  function drawExplanations(data) {
    text("pass-rule", "A check passes by one rule: " + data.pass_rule);
    var methods = {};
    data.points.forEach(function (p) {
      Object.keys(p.methods).forEach(function (m) { methods[m] = true; });
    });
    var traces = [];
    var rows = [];
    Object.keys(methods).sort().forEach(function (method, i) {
      var pts = data.points.filter(function (p) { return p.methods[method]; });
      var c = METHOD_COLORS[i % METHOD_COLORS.length];
      COLORS["method-" + method] = c;
      traces = traces.concat(banded(method.replace(/_/g, " "), "method-" + method, pts.map(function (p) { return p.start; }),
        pts.map(function (p) { return p.methods[method].rate; }), pts.map(function (p) { return p.methods[method].low; }),
        pts.map(function (p) { return p.methods[method].high; }), true));
      pts.forEach(function (p) {
        var m = p.methods[method];
        rows.push([method, p.start, { text: m.passed + " of " + m.computed, num: true }, { text: percent(m.rate), num: true }, percent(m.low) + " – " + percent(m.high), { text: m.failed, num: true }]);
      });
    });
    if (data.model_version) {
      Plotly.newPlot(el("chart-explanations"), traces, layout("Faithfulness pass rate, " + data.model_version.name, {
        yaxis: { tickformat: ".0%", range: [0, 1.05] }, shapes: activationShapes(data.activations),
      }), PLOT_CONFIG);
    }
    var perVersion = data.per_version.map(function (v) {
      return v.model_version.name + ": " + Object.keys(v.methods).map(function (m) {
        return m.replace(/_/g, " ") + " " + percent(v.methods[m].rate) + " (" + v.methods[m].passed + " of " + v.methods[m].computed + ")";
      }).join(", ");
    });
    text("summary-explanations", perVersion.length ? "Pass rate per model version: " + perVersion.join("; ") + "." : "No explanations yet.");
    table("table-explanations", "Faithfulness checks per method and " + data.period, ["method", "period", "passed", "pass rate", "95 % interval", "computation failed"], rows);
    table("table-canary", "Canary checks recorded at activation (newest first)", ["model version", "previous version", "when", "pass rates", "rank correlation", "findings"],
      data.canary_checks.map(function (c) {
        return [c.model_version.name, c.previous_version ? c.previous_version.name : "", c.created_at,
          Object.keys(c.pass_rates).map(function (k) { return k + " " + percent(c.pass_rates[k]); }).join(", "),
          { text: number(c.rank_correlation, 3), num: true }, { text: c.findings, num: true }];
      }));
  }

  function age(seconds) {
    if (seconds === null || seconds === undefined) {
      return "";
    }
    if (seconds < 3600) {
      return Math.round(seconds / 60) + " min";
    }
    if (seconds < 172800) {
      return (seconds / 3600).toFixed(1) + " h";
    }
    return (seconds / 86400).toFixed(1) + " days";
  }

  // Waiting and failed messages side by side: a failed message waits on a person (retry), for ever.
  function drawQueueStates(data) {
    var failed = data.failed || { messages: 0 };
    var x = data.waiting.map(function (w) { return w.label; }).concat(["Failed"]);
    var y = data.waiting.map(function (w) { return w.messages; }).concat([failed.messages]);
    var colors = data.waiting.map(function () { return "#0b5cad"; }).concat(["#b00020"]);
    Plotly.newPlot(el("chart-queue-states"), [{ type: "bar", x: x, y: y, marker: { color: colors }, name: "messages" }],
      layout("Messages by state now (failed in red)", { showlegend: false }), PLOT_CONFIG);
    var summary = failed.messages
      ? failed.messages + " failed for good (latest " + failed.latest_failed_at + "): see the failed messages page to retry them."
      : "No message has failed.";
    if (data.explanation_failed_in_review) {
      summary += " " + data.explanation_failed_in_review + " in review without a highlight (explanation failed).";
    }
    text("summary-queue-failed", summary);
  }

  function drawQueue(data) {
    table("queue-waiting", "Waiting messages (" + data.live_locks + " claimed by a reviewer now)", ["status", "messages", "oldest received", "age of the oldest"],
      data.waiting.map(function (w) { return [w.label, { text: w.messages, num: true }, w.oldest_received_at || "", age(w.oldest_age_seconds)]; }));
    drawQueueStates(data);
    var workers = data.workers || [];
    var blocked = workers.filter(function (w) { return !w.usable && !w.stale; });
    table("queue-workers",
      blocked.length
        ? "Model workers: " + blocked.length + " cannot use its device and consume nothing; the gpu queue waits for one that can"
        : "Model workers (the device each found at start)",
      ["worker", "device", "state", "queues", "torch / CUDA", "reported"],
      workers.map(function (w) {
        var state = w.usable ? "usable" : "NOT usable: " + w.reason;
        if (w.stale) {
          state += " (stale report)";
        }
        return [w.node, (w.gpu_name || w.device || w.requested), state, w.queues.join(", "),
          w.torch_version + " / " + (w.cuda_version || "CPU build"), w.reported_at];
      }));
    var reviewers = {};
    data.decisions_per_reviewer_per_day.forEach(function (r) {
      (reviewers[r.reviewer] = reviewers[r.reviewer] || { x: [], y: [] });
      reviewers[r.reviewer].x.push(r.day);
      reviewers[r.reviewer].y.push(r.n);
    });
    var traces = Object.keys(reviewers).sort().map(function (name) {
      return { type: "bar", name: name, x: reviewers[name].x, y: reviewers[name].y };
    });
    Plotly.newPlot(el("chart-queue"), traces, layout("Decisions per reviewer per day (last " + data.days + " days)", {
      barmode: "stack", shapes: activationShapes(data.activations), annotations: activationNotes(data.activations)
    }), PLOT_CONFIG);
    table("table-queue", "Decisions per reviewer per day", ["day", "reviewer", "decisions"],
      data.decisions_per_reviewer_per_day.map(function (r) { return [r.day, r.reviewer, { text: r.n, num: true }]; }));
  }

  if (typeof Plotly === "undefined") {
    setStatus("plotly.js did not load: the charts cannot be drawn.");
    return;
  }
  load("metrics-disagreement", drawDisagreement);
  load("metrics-quality", drawQuality);
  load("metrics-confusion", drawConfusion);
  load("metrics-length", drawLength);
  load("metrics-scores", drawScores);
  load("metrics-rules", drawRules);
  load("metrics-explanations", drawExplanations);
  load("metrics-queue", drawQueue);
})();
