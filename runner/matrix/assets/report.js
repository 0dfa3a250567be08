// runner report --html: the page's script (inlined by runner/matrix/html.py; nothing is fetched).
// The filters hide grid columns, rows and cells; a cell opens its drill-down, built from the JSON in
// #report-data with text nodes only (a CLI's output is data, never markup).
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("report-data").textContent);
  var SVGNS = "http://www.w3.org/2000/svg";
  var ASK = "sharedos.escalate";

  function all(selector, root) { return Array.prototype.slice.call((root || document).querySelectorAll(selector)); }

  function build(node, attrs, children) {
    Object.keys(attrs || {}).forEach(function (key) {
      var value = attrs[key];
      if (value === null || value === undefined || value === false) return;
      node.setAttribute(key, value === true ? "" : String(value));
    });
    (children || []).forEach(function (child) {
      if (child === null || child === undefined || child === false) return;
      node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    });
    return node;
  }
  function el(tag, attrs) { return build(document.createElement(tag), attrs, [].slice.call(arguments, 2)); }
  function svg(tag, attrs) { return build(document.createElementNS(SVGNS, tag), attrs, [].slice.call(arguments, 2)); }
  function spaced(status) { return String(status).replace(/_/g, " "); }
  function seconds(value) { return value === null || value === undefined ? "—" : Number(value).toFixed(3) + " s"; }

  // --- filters -------------------------------------------------------------------------------------------------

  // a slot is one cell's place in the grid: a table cell, or a harness's place in the folded column
  function applyFilters() {
    var harness = document.getElementById("filter-harness").value;
    var row = document.getElementById("filter-row").value;
    var grade = document.getElementById("filter-grade").value;
    var shown = 0;
    all(".col[data-harness]").forEach(function (node) { node.hidden = !!harness && node.dataset.harness !== harness; });
    all("table.grid [data-folded]").forEach(function (node) {
      node.hidden = !!harness && node.dataset.folded.split(" ").indexOf(harness) < 0;
    });
    all("table.grid tbody tr").forEach(function (tr) {
      var any = false;
      all(".slot", tr).forEach(function (slot) {
        var matches = !grade || slot.dataset.grades.split(" ").indexOf(grade) >= 0;
        slot.classList.toggle("filtered", !matches);
        if (matches && !slot.hidden && slot.querySelector("button.cell")) any = true;
      });
      tr.hidden = (!!row && tr.dataset.row !== row) || (!!grade && !any);
      if (!tr.hidden) {
        all(".slot", tr).forEach(function (slot) {
          if (!slot.hidden && !slot.classList.contains("filtered") && slot.querySelector("button.cell")) shown += 1;
        });
      }
    });
    document.getElementById("shown").textContent = shown + " of " + all("button.cell").length + " cells shown";
  }

  // --- the timeline --------------------------------------------------------------------------------------------

  var LABELS = {
    turn_started: "turn started", container_created: "container created", container_started: "container started",
    cli_first_output: "CLI's first output", model_request: "model request", mcp_call: "MCP call",
    ask_answered: "the ask answered (latch)", refused_after_ask: "refused after the ask",
    deadline_signal: "deadline signal", cli_exited: "CLI exited", teardown_done: "teardown done",
    turn_ended: "turn ended"
  };

  function refused(event) { return event.event === "mcp_call" && event.answer && event.answer !== "ok"; }

  function detail(event) {
    switch (event.event) {
      case "model_request": return "request " + (event.n !== undefined ? event.n : "");
      case "mcp_call":
        return (event.tool || "?") + " → " + (event.answer || "?") + (event.afterAsk ? " (after the ask)" : "");
      case "ask_answered": return (event.tool || ASK) + ": the turn is latched to end escalate";
      case "refused_after_ask": return (event.tool || "?") + " refused: " + (event.code || "?");
      case "deadline_signal": return (event.signal || "?") + (event.reason ? ": " + event.reason : "");
      case "cli_exited": return "exit " + (event.exitCode !== undefined ? event.exitCode : "?") + ", by " + (event.by || "?");
      default:
        return Object.keys(event).filter(function (k) { return k !== "t" && k !== "event" && k !== "at"; })
          .map(function (k) { return k + "=" + event[k]; }).join(", ");
    }
  }

  function lane(event) {
    if (event.event === "model_request") return 1;
    if (event.event === "mcp_call" || event.event === "ask_answered" || event.event === "refused_after_ask") return 2;
    return 0;
  }

  function marker(event, x, y) {
    var tip = svg("title", {}, event.t.toFixed(3) + " s: " + (LABELS[event.event] || event.event) + ": " + detail(event));
    var kind = event.event;
    if (kind === "model_request") return svg("rect", {x: x - 2, y: y - 7, width: 4, height: 14, fill: "#0969da"}, tip);
    if (kind === "refused_after_ask" || refused(event)) {
      return svg("path", {d: "M" + (x - 5) + " " + (y - 5) + "l10 10m0 -10l-10 10", stroke: "#b42318",
        "stroke-width": 2.5, "class": "m-refused"}, tip);
    }
    if (kind === "mcp_call" && event.tool === ASK) {
      return svg("path", {d: "M" + x + " " + (y - 8) + "l7 8l-7 8l-7 -8z", fill: "#8250df", "class": "m-ask"}, tip);
    }
    if (kind === "mcp_call") return svg("circle", {cx: x, cy: y, r: 4.5, fill: "#1a7f37"}, tip);
    if (kind === "ask_answered") return svg("g", {}, tip);  // drawn as a line across the lanes
    if (kind === "deadline_signal") {
      return svg("path", {d: "M" + x + " " + (y - 8) + "l7 13h-14z", fill: "#bc4c00", "class": "m-signal"}, tip);
    }
    if (kind === "cli_exited") {
      return svg("rect", {x: x - 2.5, y: y - 11, width: 5, height: 22, fill: "#1f2328", "class": "m-exit"}, tip);
    }
    return svg("circle", {cx: x, cy: y, r: 3.5, fill: "#fff", stroke: "#57606a", "stroke-width": 1.5}, tip);
  }

  function step(span) {
    var raw = span / 8, power = Math.pow(10, Math.floor(Math.log10(raw)));
    var best = [1, 2, 5, 10].map(function (m) { return m * power; }).filter(function (s) { return s >= raw; })[0];
    return best || power * 10;
  }

  // the events between start and end (seconds of the turn) on an axis of their own
  function drawTimeline(events, start, end) {
    var width = 900, left = 70, right = 24, top = 14, laneHeight = 34, names = ["turn", "model", "MCP"];
    var height = top + names.length * laneHeight + 26;
    events = events.filter(function (e) { return e.t >= start && e.t <= end; });
    end = Math.max(end, start + 0.001);
    var x = function (t) { return left + ((t - start) / (end - start)) * (width - left - right); };
    var y = function (i) { return top + i * laneHeight + laneHeight / 2; };
    var root = svg("svg", {viewBox: "0 0 " + width + " " + height, "class": "timeline", role: "img",
      "aria-label": "The turn on a time axis, from " + start.toFixed(3) + " s to " + end.toFixed(3) + " s"});
    names.forEach(function (name, i) {
      root.appendChild(svg("line", {x1: left, x2: width - right, y1: y(i), y2: y(i), "class": "lane"}));
      root.appendChild(svg("text", {x: 6, y: y(i) + 4}, name));
    });
    var every = step(end - start), axis = top + names.length * laneHeight;
    var decimals = Math.max(0, Math.ceil(-Math.log10(every) - 1e-9));
    for (var t = Math.ceil(start / every) * every; t <= end + every / 1000; t += every) {
      root.appendChild(svg("line", {x1: x(t), x2: x(t), y1: top, y2: axis, "class": "tick"}));
      root.appendChild(svg("text", {x: x(t), y: axis + 14, "text-anchor": "middle"},
        t.toFixed(decimals) + " s"));
    }
    var asked = events.filter(function (e) { return e.event === "ask_answered"; })[0];
    var exited = events.filter(function (e) { return e.event === "cli_exited"; })[0];
    if (asked && exited && exited.by === "itself" && exited.t >= asked.t) {
      root.appendChild(svg("rect", {x: x(asked.t), y: top, width: Math.max(1, x(exited.t) - x(asked.t)),
        height: axis - top, "class": "winddown"}, svg("title", {}, "the wind-down: the ask answered → the CLI exited")));
    }
    if (asked) {
      root.appendChild(svg("line", {x1: x(asked.t), x2: x(asked.t), y1: top - 4, y2: axis, stroke: "#8250df",
        "stroke-width": 2, "class": "m-latch"}, svg("title", {}, asked.t.toFixed(3) + " s: the ask answered (latch)")));
      root.appendChild(svg("text", {x: x(asked.t) + 3, y: top + 6, fill: "#8250df"}, "latch"));
    }
    events.forEach(function (event) { root.appendChild(marker(event, x(event.t), y(lane(event)))); });
    if (exited) {
      root.appendChild(svg("text", {x: Math.min(x(exited.t) + 5, width - right - 60), y: y(0) - 12},
        "exit " + (exited.exitCode !== undefined ? exited.exitCode : "?") + " (" + (exited.by || "?") + ")"));
    }
    return root;
  }

  function eventTable(events) {
    var body = el("tbody");
    events.forEach(function (event) {
      var classes = "ev-" + event.event + (refused(event) ? " refused" : "");
      body.appendChild(el("tr", {"class": classes, "data-event": event.event},
        el("td", {"class": "t"}, event.t.toFixed(3)), el("td", {}, LABELS[event.event] || event.event),
        el("td", {}, detail(event))));
    });
    return el("table", {"class": "events"},
      el("thead", {}, el("tr", {}, el("th", {}, "t (s)"), el("th", {}, "event"), el("th", {}, "detail"))), body);
  }

  function timeline(run) {
    var events = run.timeline || [];
    var box = el("div", {"class": "timeline-box"}, el("h4", {}, "Timeline"));
    if (!events.length) {
      box.appendChild(el("p", {"class": "note"}, run.timelineNote || "No timeline was recorded for this run."));
      return box;
    }
    if (events[0].at) box.appendChild(el("p", {"class": "legend"}, "t = 0 at " + events[0].at));
    var end = Math.max.apply(null, events.map(function (e) { return e.t; }));
    box.appendChild(drawTimeline(events, 0, end));
    // a CLI's own work is often a small part of the turn (the container starts first): drawn again, closer
    var first = events.filter(function (e) { return e.event === "cli_first_output"; })[0];
    var exit = events.filter(function (e) { return e.event === "cli_exited"; })[0];
    var from = first ? first.t : 0, to = exit ? exit.t : end;
    if (to > from && (to - from) < 0.5 * end) {
      var margin = (to - from) * 0.05;
      box.appendChild(el("p", {"class": "legend"}, "From the CLI's first output to its exit:"));
      box.appendChild(drawTimeline(events, Math.max(0, from - margin), Math.min(end, to + margin)));
    }
    box.appendChild(el("p", {"class": "legend"}, "model request ▮ · call answered ok ● · the ask ◆ · refused ✕ · ",
      "latch | · deadline signal ▲ · exit █ · shaded: the wind-down"));
    if (run.timelineNote) box.appendChild(el("p", {"class": "note"}, run.timelineNote));
    box.appendChild(eventTable(events));
    return box;
  }

  // --- the drill-down ------------------------------------------------------------------------------------------

  function copyButton(text, code) {
    var button = el("button", {type: "button", "class": "copy"}, "Copy");
    button.addEventListener("click", function () {
      var done = function () { button.textContent = "Copied"; setTimeout(function () { button.textContent = "Copy"; }, 1500); };
      var select = function () {
        var range = document.createRange();
        range.selectNodeContents(code);
        var selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        try { if (document.execCommand("copy")) done(); } catch (e) { /* selected: the reader copies it */ }
      };
      if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, select);
      else select();
    });
    return button;
  }

  function tailBlock(title, lines, href) {
    var box = el("div", {}, el("h4", {}, title, href ? " " : null,
      href ? el("a", {href: href}, "(the whole file)") : null));
    box.appendChild(lines && lines.length ? el("pre", {"class": "tail"}, lines.join("\n"))
      : el("p", {"class": "note"}, "empty"));
    return box;
  }

  function fileHref(run, name) {
    var found = (run.files || []).filter(function (f) { return f.name === name; })[0];
    return found ? found.href : null;
  }

  // an unavailable harness's reason is said once, in its group's section, not in every cell's data
  function harnessReason(cell) {
    var found = document.querySelector('section[data-group="' + cell.group + '"] .unavailable li[data-harness="' +
      CSS.escape(cell.harness) + '"] .reason');
    return found ? found.textContent : "";
  }

  function runSection(cell, run) {
    var section = el("section", {"class": "run", "data-run": run.run},
      el("h3", {}, "Run " + run.run + (run.trial !== run.run ? " (trial " + run.trial + ")" : "") + " ",
        el("span", {"class": "badge g-" + run.status}, spaced(run.status))),
      el("p", {"class": "evidence"}, run.evidence !== null ? run.evidence : "unavailable; " + harnessReason(cell)));
    var turn = run.turn || {};
    var facts = [
      ["turn outcome", turn.status || "no turn ran"],
      ["reason", turn.reasonCode ? turn.reasonCode + (turn.reason ? ": " + turn.reason : "") : turn.reason],
      ["callsAfterEscalation", turn.callsAfterEscalation],
      ["windDownSeconds", run.windDownSeconds === null || run.windDownSeconds === undefined ? null
        : seconds(run.windDownSeconds)],
      ["exit code", turn.exitCode],
      ["deadline hit", turn.deadlineHit ? "yes" : null],
      ["CLI's own outcome", turn.harnessOutcome ? turn.harnessOutcome + (turn.harnessErrorCode ? " (" +
        turn.harnessErrorCode + ")" : "") : null],
      ["started", run.startedAt], ["elapsed", run.elapsedSeconds === null ? null : seconds(run.elapsedSeconds)],
      ["infrastructure error", run.infrastructureError ? run.infrastructureError.kind + ": " +
        run.infrastructureError.detail : null],
      ["failure", run.failure],
      ["tokens", run.tokens],
      ["tool policy", run.toolPolicy],
      ["attempts", run.attempts]
    ];
    var list = el("dl", {"class": "turn"});
    facts.forEach(function (fact) {
      var keep = fact[1] !== null && fact[1] !== undefined && fact[1] !== "";
      if (keep || (run.turn && (fact[0] === "callsAfterEscalation" || fact[0] === "windDownSeconds"))) {
        list.appendChild(el("dt", {}, fact[0]));
        list.appendChild(el("dd", {"data-fact": fact[0]}, keep ? fact[1] : "—"));
      }
    });
    section.appendChild(list);
    if (run.files) {
      section.appendChild(timeline(run));
      section.appendChild(tailBlock("Transcript tail (stdout)", run.transcript, fileHref(run, "stdout.log")));
      section.appendChild(tailBlock("stderr tail", run.stderr, fileHref(run, "stderr.log")));
      var files = el("ul", {"class": "files"});
      run.files.forEach(function (f) {
        files.appendChild(el("li", {}, el("a", {href: f.href}, f.name), " (" + f.bytes + " bytes)"));
      });
      section.appendChild(el("h4", {}, "Files ", el("a", {href: run.dir}, "(the directory)")));
      section.appendChild(files);
    }
    var code = el("code", {}, run.repro);
    section.appendChild(el("h4", {}, "Reproduce this run alone"));
    section.appendChild(el("div", {"class": "repro"}, el("pre", {}, code), copyButton(run.repro, code)));
    return section;
  }

  function openCell(index) {
    var cell = DATA.cells[index];
    if (!cell) return;
    var body = document.getElementById("drill-body");
    body.textContent = "";
    body.appendChild(el("h2", {id: "drill-title"}, cell.id));
    var about = [cell.invariant, cell.expected].filter(Boolean).join(" — ");
    if (about) body.appendChild(el("p", {"class": "about"}, about));
    body.appendChild(el("p", {}, el("span", {"class": "badge g-" + cell.status}, spaced(cell.status)),
      cell.stability ? " · " + cell.stability : null, " · turn outcome: " + cell.outcome));
    cell.runs.forEach(function (run) { body.appendChild(runSection(cell, run)); });
    var dialog = document.getElementById("drill");
    dialog.dataset.cell = cell.id;
    if (!dialog.open) dialog.showModal();
    dialog.scrollTop = 0;
    if (history.replaceState) history.replaceState(null, "", "#cell=" + encodeURIComponent(cell.id));
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button.cell") : null;
    if (button) openCell(Number(button.dataset.cell));
  });
  document.getElementById("drill").addEventListener("close", function () {
    if (history.replaceState) history.replaceState(null, "", location.pathname + location.search);
  });
  ["harness", "row", "grade"].forEach(function (name) {
    document.getElementById("filter-" + name).addEventListener("change", applyFilters);
  });
  // a link to one cell (report.html#cell=<cell id>) opens it
  function openFromHash() {
    var wanted = /^#cell=(.+)$/.exec(location.hash);
    if (!wanted) return;
    var id = decodeURIComponent(wanted[1]);
    DATA.cells.forEach(function (cell, index) { if (cell.id === id) openCell(index); });
  }
  window.addEventListener("hashchange", openFromHash);
  applyFilters();
  openFromHash();
})();
