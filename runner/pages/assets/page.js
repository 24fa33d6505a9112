// Sorting, filtering, keyboard navigation and search for the run's pages. No network, no libraries.
(function () {
  "use strict";

  function cellValue(row, index) {
    var cell = row.cells[index];
    if (!cell) return "";
    var raw = cell.hasAttribute("data-v") ? cell.getAttribute("data-v") : cell.textContent.trim();
    var number = parseFloat(raw.replace(/^\$/, "").replace(/%$/, ""));
    return (raw !== "" && raw !== "-" && !isNaN(number) && /^[-+$]?[\d.]/.test(raw)) ? number : raw.toLowerCase();
  }

  function sortBy(table, index, th) {
    var body = table.tBodies[0];
    if (!body) return;
    var descending = th.classList.contains("asc");
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.classList.remove("asc", "desc"); });
    th.classList.add(descending ? "desc" : "asc");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, index), y = cellValue(b, index);
      if (typeof x !== typeof y) { x = String(x); y = String(y); }
      var order = x < y ? -1 : x > y ? 1 : 0;
      return descending ? -order : order;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    if (!table.tHead) return;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
      th.title = "sort";
      th.addEventListener("click", function () { sortBy(table, index, th); });
    });
  });

  // Run page: rollouts filtered by task, exit reason, status and score range.
  var rollouts = document.getElementById("rollouts");
  if (rollouts) {
    var controls = document.querySelectorAll("[data-filter]");
    var shown = document.getElementById("shown");
    var apply = function () {
      var want = {};
      controls.forEach(function (c) { want[c.getAttribute("data-filter")] = c.value; });
      var low = parseFloat(want["score-min"]), high = parseFloat(want["score-max"]);
      var count = 0;
      Array.prototype.forEach.call(rollouts.tBodies[0].rows, function (row) {
        var score = parseFloat(row.getAttribute("data-score"));
        var ok = ["task", "exit", "status"].every(function (key) {
          return !want[key] || row.getAttribute("data-" + key) === want[key];
        });
        if (!isNaN(low)) ok = ok && !isNaN(score) && score >= low;
        if (!isNaN(high)) ok = ok && !isNaN(score) && score <= high;
        row.classList.toggle("hidden", !ok);
        if (ok) count += 1;
      });
      if (shown) shown.textContent = count;
    };
    controls.forEach(function (c) { c.addEventListener("input", apply); c.addEventListener("change", apply); });
    apply();
  }

  // Diffs arrive as text; each line gets its colour when the diff is first shown.
  function colour(pre) {
    if (pre.getAttribute("data-coloured")) return;
    var kinds = [[/^(diff --git|index |--- |\+\+\+ |new file|deleted file|similarity|rename |old mode|new mode)/, "file"],
                 [/^@@/, "hunk"], [/^\+/, "add"], [/^-/, "del"]];
    var lines = pre.textContent.replace(/\n$/, "").split("\n");
    pre.textContent = "";
    lines.forEach(function (line) {
      var span = document.createElement("span");
      span.className = "ctx";
      for (var i = 0; i < kinds.length; i++) { if (kinds[i][0].test(line)) { span.className = kinds[i][1]; break; } }
      span.textContent = line;
      pre.appendChild(span);
    });
    pre.setAttribute("data-coloured", "1");
  }
  document.querySelectorAll("pre.diff").forEach(function (pre) {
    var folded = pre.closest("details");
    if (!folded) colour(pre);
    else folded.addEventListener("toggle", function () { if (folded.open) colour(pre); });
  });

  // Trajectory page: j/k between steps, n/p between rollouts, / to search.
  var steps = Array.prototype.slice.call(document.querySelectorAll(".step"));
  var current = -1;
  var go = function (index) {
    if (!steps.length) return;
    current = Math.max(0, Math.min(steps.length - 1, index));
    steps.forEach(function (s) { s.classList.remove("current"); });
    steps[current].classList.add("current");
    steps[current].scrollIntoView({ block: "start" });
    if (history.replaceState) history.replaceState(null, "", "#" + steps[current].id);
  };
  var search = document.getElementById("search");
  var hits = [];
  var hitIndex = -1;
  if (search) {
    search.addEventListener("input", function () {
      var query = search.value.toLowerCase();
      hits = [];
      steps.forEach(function (s, i) {
        var hit = query.length > 0 && s.textContent.toLowerCase().indexOf(query) >= 0;
        s.classList.toggle("hit", hit);
        if (hit) hits.push(i);
      });
      hitIndex = -1;
      document.getElementById("hits").textContent = query ? hits.length + " of " + steps.length + " steps" : "";
    });
    search.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && hits.length) { hitIndex = (hitIndex + 1) % hits.length; go(hits[hitIndex]); }
      if (e.key === "Escape") search.blur();
    });
  }
  document.addEventListener("keydown", function (e) {
    var tag = (e.target && e.target.tagName) || "";
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || e.ctrlKey || e.metaKey || e.altKey) return;
    var link;
    if (e.key === "j") go(current + 1);
    else if (e.key === "k") go(current - 1);
    else if (e.key === "n" && (link = document.getElementById("next-rollout"))) window.location.href = link.href;
    else if (e.key === "p" && (link = document.getElementById("prev-rollout"))) window.location.href = link.href;
    else if (e.key === "/" && search) { e.preventDefault(); search.focus(); }
    else return;
  });
  if (steps.length && location.hash) {
    var at = steps.findIndex(function (s) { return "#" + s.id === location.hash; });
    if (at >= 0) go(at);
  }
})();
