// The report's own script (harness/present/report.py inlines it): the per-example attention view, and
// the page's status (#report-status): every figure loaded, the view drawn, no script error.
(function () {
  "use strict";
  var status = document.getElementById("report-status");
  var state = {images: 0, settled: 0, failed: [], view: "pending"};

  function showStatus() {
    var errors = window.reportErrors || [];
    var settled = state.settled === state.images && state.view !== "pending";
    var problems = errors.length > 0 || state.failed.length > 0;
    status.setAttribute("data-state", settled ? (problems ? "problems" : "ready") : "loading");
    status.setAttribute("data-images", String(state.images));
    status.setAttribute("data-loaded", String(state.settled - state.failed.length));
    status.setAttribute("data-failed", String(state.failed.length));
    status.setAttribute("data-view", state.view);
    status.setAttribute("data-errors", String(errors.length));
    var figures = state.images === 0 ? "no figures on this page" :  // the page of typed inputs has none
      (state.settled - state.failed.length) + " of " + state.images + " figures loaded" +
      (state.failed.length ? " (missing: " + state.failed.join(", ") + ")" : "");
    status.textContent = figures + "; per-example view " + state.view +
      (errors.length ? "; script errors: " + errors.length : "");
    var list = document.getElementById("report-errors");
    list.hidden = errors.length === 0;
    list.textContent = errors.join("\n");
  }

  var previous = window.onerror;
  window.onerror = function (message, source, line) {
    if (previous) { previous(message, source, line); }
    showStatus();
  };

  function watchImages() {
    var images = Array.prototype.slice.call(document.querySelectorAll("img"));
    state.images = images.length;
    images.forEach(function (image) {
      var done = false;
      function settle(loaded) {
        if (done) { return; }
        done = true;
        state.settled += 1;
        if (!loaded) { state.failed.push(image.getAttribute("src")); }
        showStatus();
      }
      if (image.complete) {
        settle(image.naturalWidth > 0);
      } else {
        image.addEventListener("load", function () { settle(true); });
        image.addEventListener("error", function () { settle(false); });
      }
    });
  }

  // Stored maps: each weight in thousandths as two base-64 digits (harness/analyses/examples.py).
  var DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  var VALUE = {};
  for (var d = 0; d < DIGITS.length; d += 1) { VALUE[DIGITS.charCodeAt(d)] = d; }

  function decode(text) {
    var out = new Float32Array(text.length / 2);
    for (var i = 0; i < out.length; i += 1) {
      out[i] = (VALUE[text.charCodeAt(2 * i)] * 64 + VALUE[text.charCodeAt(2 * i + 1)]) / 1000;
    }
    return out;
  }

  // Viridis (maps) and a blue-white-red diverging scale (change), as matplotlib's viridis and RdBu_r.
  var VIRIDIS = [[68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142], [31, 158, 137],
                 [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37]];
  var DIVERGING = [[33, 102, 172], [103, 169, 207], [209, 229, 240], [247, 247, 247], [253, 219, 199],
                   [239, 138, 98], [178, 24, 43]];

  function colour(stops, t) {
    var x = Math.min(Math.max(t, 0), 1) * (stops.length - 1);
    var i = Math.min(Math.floor(x), stops.length - 2);
    var f = x - i;
    var c = stops[i].map(function (v, k) { return Math.round(v + f * (stops[i + 1][k] - v)); });
    return "rgb(" + c[0] + "," + c[1] + "," + c[2] + ")";
  }

  var data = JSON.parse(document.getElementById("example-data").textContent);
  var select = {};
  ["run", "example", "layer", "head"].forEach(function (name) {
    select[name] = document.getElementById("view-" + name);
  });
  var slider = document.getElementById("view-step");
  // A link may open the view at a training step of the fine-tuning: index.html#step=16 opens the
  // kept step nearest step 16.
  var linkedStep = /(?:^#|&)step=(\d+)/.exec(window.location.hash);
  var decoded = {};
  var current = null;  // what is drawn: for the hover line

  function options(element, labels) {
    element.innerHTML = "";
    labels.forEach(function (label, index) {
      var option = document.createElement("option");
      option.value = String(index);
      option.textContent = label;
      element.appendChild(option);
    });
  }

  // An example's maps: "before", "after", or ("steps", i) at the i-th step kept along the fine-tuning.
  function mapsOf(runIndex, exampleIndex, slot, step) {
    var key = runIndex + "/" + exampleIndex + "/" + slot + "/" + step;
    if (!decoded[key]) {
      var example = data.runs[runIndex].examples[exampleIndex];
      decoded[key] = decode(slot === "steps" ? example.steps[step] : example[slot]);
    }
    return decoded[key];
  }

  function headCosine(a, b, offset, size) {
    var dot = 0, normA = 0, normB = 0;
    for (var k = offset; k < offset + size; k += 1) {
      dot += a[k] * b[k];
      normA += a[k] * a[k];
      normB += b[k] * b[k];
    }
    return dot / Math.sqrt(normA * normB || 1);
  }

  function layout(canvas, tokens) {
    var n = tokens.length;
    var cell = n <= 20 ? 18 : n <= 32 ? 13 : 10;  // three maps of up to 40 tokens side by side in 1400 pixels
    var font = Math.max(Math.min(cell - 2, 12), 9);
    var context = canvas.getContext("2d");
    context.font = font + "px sans-serif";
    var margin = 6 + Math.min(110, Math.max.apply(null, tokens.map(function (t) {
      return context.measureText(t).width;
    })));
    return {n: n, cell: cell, font: font, margin: margin, size: margin + n * cell + 4};
  }

  function drawMap(canvas, tokens, values, offset, paint) {
    var box = layout(canvas, tokens);
    var ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(box.size * ratio);
    canvas.height = Math.round(box.size * ratio);
    canvas.style.width = box.size + "px";
    canvas.style.height = box.size + "px";
    var context = canvas.getContext("2d");
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    context.clearRect(0, 0, box.size, box.size);
    for (var i = 0; i < box.n; i += 1) {
      for (var j = 0; j < box.n; j += 1) {
        context.fillStyle = paint(values[offset + i * box.n + j]);
        context.fillRect(box.margin + j * box.cell, box.margin + i * box.cell, box.cell, box.cell);
      }
    }
    context.fillStyle = "#222";
    context.font = box.font + "px sans-serif";
    context.textBaseline = "middle";
    context.textAlign = "right";
    tokens.forEach(function (token, i) {  // rows: the attending token
      context.fillText(token, box.margin - 4, box.margin + (i + 0.5) * box.cell, box.margin - 6);
    });
    tokens.forEach(function (token, j) {  // columns: the attended token, written upwards
      context.save();
      context.translate(box.margin + (j + 0.5) * box.cell, box.margin - 4);
      context.rotate(-Math.PI / 2);
      context.textAlign = "left";
      context.fillText(token, 0, 0, box.margin - 6);
      context.restore();
    });
    canvas.onmousemove = function (event) {
      var bounds = canvas.getBoundingClientRect();
      var j = Math.floor((event.clientX - bounds.left - box.margin) / box.cell);
      var i = Math.floor((event.clientY - bounds.top - box.margin) / box.cell);
      hover(i, j);
    };
    var probe = context.getImageData(Math.floor((box.margin + box.cell / 2) * ratio),
                                     Math.floor((box.margin + box.cell / 2) * ratio), 1, 1).data;
    return probe[3] > 0;  // the first cell was painted
  }

  function hover(i, j) {
    var line = document.getElementById("view-hover");
    if (!current || i < 0 || j < 0 || i >= current.n || j >= current.n) { line.innerHTML = "&nbsp;"; return; }
    var k = current.offset + i * current.n + j;
    var run = data.runs[current.run];
    line.textContent = current.tokens[i] + " → " + current.tokens[j] + ": " + run.before + " " +
      current.before[k].toFixed(3) + ", " + current.afterName + " " + current.after[k].toFixed(3) + ", change " +
      (current.after[k] - current.before[k] >= 0 ? "+" : "") + (current.after[k] - current.before[k]).toFixed(3);
  }

  // The head whose two maps are least alike (lowest cosine), 1-based: at a kept step, from its maps.
  function mostChanged(run, before, after, n) {
    var found = null;
    for (var l = 0; l < run.layers; l += 1) {
      for (var h = 0; h < run.heads; h += 1) {
        var c = headCosine(before, after, (l * run.heads + h) * n * n, n * n);
        if (found === null || c < found.cosine) { found = {layer: l + 1, head: h + 1, cosine: c}; }
      }
    }
    return found;
  }

  // Where a link's training step opens the slider: the kept step nearest it (the last position,
  // past the kept ones, is the end of the fine-tuning).
  function sliderAt(run, trainingStep) {
    var numbers = (run.step_numbers || []).concat([run.of_steps]);
    var best = numbers.length - 1;
    numbers.forEach(function (number, index) {
      if (Math.abs(number - trainingStep) < Math.abs(numbers[best] - trainingStep)) { best = index; }
    });
    return best;
  }

  function draw() {
    var runIndex = Number(select.run.value), exampleIndex = Number(select.example.value);
    var run = data.runs[runIndex], example = run.examples[exampleIndex];
    var layer = Number(select.layer.value), head = Number(select.head.value);
    var n = example.tokens.length, offset = (layer * run.heads + head) * n * n;
    var steps = run.steps || [], step = Number(slider.value), atStep = step < steps.length;
    var afterName = atStep ? run.after + " at " + steps[step] : run.after;
    var before = mapsOf(runIndex, exampleIndex, "before");
    var after = atStep ? mapsOf(runIndex, exampleIndex, "steps", step) : mapsOf(runIndex, exampleIndex, "after");
    document.getElementById("view-step-label").textContent = atStep ? steps[step] : "end of the fine-tuning";
    var topBefore = 1e-3, topAfter = 1e-3, change = 1e-3;
    for (var k = offset; k < offset + n * n; k += 1) {
      topBefore = Math.max(topBefore, before[k]);
      topAfter = Math.max(topAfter, after[k]);
      change = Math.max(change, Math.abs(after[k] - before[k]));
    }
    if (document.getElementById("view-scale").value === "shared") {
      topBefore = topAfter = Math.max(topBefore, topAfter);
    }
    var difference = new Float32Array(n * n);
    for (var m = 0; m < n * n; m += 1) { difference[m] = after[offset + m] - before[offset + m]; }
    current = {run: runIndex, n: n, offset: offset, tokens: example.tokens, before: before, after: after,
               afterName: afterName};
    var where = "layer " + (layer + 1) + ", head " + (head + 1);
    document.getElementById("view-title-before").textContent = run.before + " (" + where + "; colours 0 to " +
      topBefore.toFixed(3) + ")";
    document.getElementById("view-title-after").textContent = afterName + " (" + where + "; colours 0 to " +
      topAfter.toFixed(3) + ")";
    document.getElementById("view-title-change").textContent = afterName + " minus " + run.before + " (±" +
      change.toFixed(3) + ")";
    var painted = [
      drawMap(document.getElementById("view-before"), example.tokens, before, offset,
              function (v) { return colour(VIRIDIS, v / topBefore); }),
      drawMap(document.getElementById("view-after"), example.tokens, after, offset,
              function (v) { return colour(VIRIDIS, v / topAfter); }),
      drawMap(document.getElementById("view-change"), example.tokens, difference, 0,
              function (v) { return colour(DIVERGING, 0.5 + v / (2 * change)); })];
    var cosine = atStep ? headCosine(before, after, offset, n * n).toFixed(3) :
      example.cosine ? example.cosine[layer][head].toFixed(3) : "-";
    var most = atStep ? mostChanged(run, before, after, n) : example.most_changed;
    document.getElementById("view-note").textContent = "Cosine of the two maps of this head on this example: " +
      cosine + (most ? "; the head that changed most on it" + (atStep ? " by " + steps[step] : "") + ": layer " +
      most.layer + ", head " + most.head + " (cosine " + most.cosine.toFixed(3) + ")." : ".");
    var maps = document.getElementById("view-maps");
    maps.setAttribute("data-drawn", painted.every(Boolean) ? "yes" : "no");
    maps.setAttribute("data-example", example.guid);
    maps.setAttribute("data-layer", String(layer + 1));
    maps.setAttribute("data-head", String(head + 1));
    maps.setAttribute("data-step", atStep ? steps[step] : "final");
    state.view = painted.every(Boolean) ? "drawn" : "not drawn";
    showStatus();
  }

  function chooseExample() {
    var run = data.runs[Number(select.run.value)], example = run.examples[Number(select.example.value)];
    var text = document.getElementById("view-text");
    var predicted = example.predictions ? " Predicted: " + Object.keys(example.predictions).map(function (name) {
      return name + ": " + example.predictions[name];
    }).join("; ") + "." : "";
    text.textContent = "Example " + example.guid + " (" + example.split + "), gold label: " + example.label +
      ". " + example.text_a + (example.text_b !== null ? "  |  " + example.text_b : "") + predicted;
    var most = example.most_changed || {layer: run.layers, head: 1};
    select.layer.value = String(most.layer - 1);
    select.head.value = String(most.head - 1);
    draw();
  }

  function chooseRun() {
    var run = data.runs[Number(select.run.value)];
    options(select.example, run.examples.map(function (e) {
      return e.guid + ": " + (e.text_a.length > 60 ? e.text_a.slice(0, 57) + "…" : e.text_a) +
        " (" + e.tokens.length + " tokens)";
    }));
    options(select.layer, Array.from({length: run.layers}, function (_, i) { return String(i + 1); }));
    options(select.head, Array.from({length: run.heads}, function (_, i) { return String(i + 1); }));
    var steps = run.steps || [];
    document.getElementById("view-step-control").hidden = steps.length === 0;
    slider.max = String(steps.length);  // the last position: the end of the fine-tuning
    slider.value = String(linkedStep ? sliderAt(run, Number(linkedStep[1])) : steps.length);
    linkedStep = null;
    chooseExample();
  }

  watchImages();
  var runs = data.runs.filter(function (run) { return run.examples.length > 0; });
  data.runs = runs;
  if (runs.length === 0) {
    document.getElementById("view-text").textContent = "No run here stored example maps: `harness run` " +
      "with the run's flags (it runs the examples analysis by default) adds them.";
    state.view = "empty";
    showStatus();
    return;
  }
  options(select.run, runs.map(function (run) { return run.label; }));
  select.run.addEventListener("change", chooseRun);
  select.example.addEventListener("change", chooseExample);
  select.layer.addEventListener("change", draw);
  select.head.addEventListener("change", draw);
  document.getElementById("view-scale").addEventListener("change", draw);
  slider.addEventListener("input", draw);
  chooseRun();
}());
