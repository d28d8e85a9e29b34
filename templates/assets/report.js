/* flametool report: sortable tables and interactive flame graphs. No dependencies, nothing fetched;
   the data is the JSON block #flame-data, written by flametool/render/report_flames.py. Names from profiles are only
   ever set with textContent, never as HTML. */
(function () {
  "use strict";

  var ROW = 18; // px per stack level

  // --- the sticky header's height, which a link to a section scrolls below (report.css: scroll-margin-top) ---
  var header = document.querySelector("header.top");
  function headerHeight() {
    if (header) { document.documentElement.style.setProperty("--header", header.offsetHeight + "px"); }
  }
  headerHeight();
  window.addEventListener("resize", headerHeight);

  // --- sortable tables ------------------------------------------------------------------------------------
  function sortable(table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener("click", function () {
        var numeric = th.getAttribute("data-type") === "num";
        // numbers sort largest first on the first click, text A to Z
        var asc = th.getAttribute("aria-sort") ? th.getAttribute("aria-sort") !== "ascending" : !numeric;
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col].getAttribute("data-sort") || a.cells[col].textContent;
          var y = b.cells[col].getAttribute("data-sort") || b.cells[col].textContent;
          var c = numeric ? (parseFloat(x) || 0) - (parseFloat(y) || 0) : x.localeCompare(y);
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), sortable);

  // --- flame graphs ---------------------------------------------------------------------------------------
  var block = document.getElementById("flame-data");
  if (!block) { return; }
  var data = JSON.parse(block.textContent);
  var S = data.strings, SHORT = data.short || {};

  var tip = document.createElement("div");
  tip.className = "fg-tip";
  document.body.appendChild(tip);

  function fmt(v) {
    var a = Math.abs(v);
    return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(2);
  }
  function signed(v) { return (v > 0 ? "+" : v < 0 ? "\u2212" : "\u00b1") + fmt(Math.abs(v)); }
  function pct(v, of) { return of > 0 ? (100 * v / of).toFixed(1) + "%" : "-"; }

  function hex(c) { return [1, 3, 5].map(function (i) { return parseInt(c.substr(i, 2), 16); }); }
  function mix(a, b, t) {
    var x = hex(a), y = hex(b);
    return "rgb(" + x.map(function (v, i) { return Math.round(v + (y[i] - v) * t); }).join(",") + ")";
  }

  function Graph(spec, el) {
    var self = this;
    this.spec = spec;
    this.el = el;
    this.diff = spec.kind === "diff";
    this.side = "head";
    this.canvas = el.querySelector(".fg-canvas");
    this.status = el.querySelector(".fg-status");
    this.nodes = spec.rows.map(function (r, i) {
      return { i: i, parent: r[0], name: S[r[1]], label: SHORT[r[1]] || S[r[1]], layer: S[r[2]], depth: 0,
               head: r[3], base: self.diff ? r[4] : 0, headSelf: self.diff ? r[5] : r[4], baseSelf: self.diff ? r[6] : 0 };
    });
    var maxDepth = 0, maxDelta = 0;
    this.nodes.forEach(function (n) {
      if (n.parent >= 0) { n.depth = self.nodes[n.parent].depth + 1; }
      maxDepth = Math.max(maxDepth, n.depth);
      if (n.parent >= 0) { maxDelta = Math.max(maxDelta, Math.abs(n.headSelf - n.baseSelf)); }
    });
    this.canvas.style.height = (maxDepth + 1) * ROW + 1 + "px";
    var frag = document.createDocumentFragment();
    this.nodes.forEach(function (n) {
      var d = document.createElement("div");
      d.className = "fg-node" + (n.parent < 0 ? " fg-root" : "");
      d.textContent = n.label;
      d.style.top = n.depth * ROW + "px";
      d.setAttribute("data-i", n.i);
      if (n.parent >= 0) {
        if (self.diff) {
          var delta = n.headSelf - n.baseSelf;
          var t = maxDelta > 0 ? Math.min(1, Math.abs(delta) / maxDelta) : 0;
          // white where equal; any change at least faintly tinted, the largest fully saturated
          d.style.background = delta === 0 ? "#f2f2f2" : mix("#f4f4f4", delta > 0 ? data.more : data.less, 0.12 + 0.88 * Math.sqrt(t));
        } else {
          d.style.background = data.colours[n.layer] || "#e6e6e6";
        }
      }
      n.el = d;
      frag.appendChild(d);
    });
    this.canvas.appendChild(frag);

    this.canvas.addEventListener("click", function (e) {
      var n = self.nodeAt(e.target);
      if (n) { self.zoom(n.parent < 0 ? self.nodes[0] : n); }
    });
    this.canvas.addEventListener("mousemove", function (e) {
      var n = self.nodeAt(e.target);
      if (!n) { tip.style.display = "none"; return; }
      tip.textContent = self.describe(n);
      tip.style.display = "block";
      var x = Math.min(e.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
      var y = e.clientY + 16 + tip.offsetHeight > window.innerHeight ? e.clientY - tip.offsetHeight - 10 : e.clientY + 16;
      tip.style.left = Math.max(4, x) + "px";
      tip.style.top = y + "px";
    });
    this.canvas.addEventListener("mouseleave", function () { tip.style.display = "none"; });
    el.querySelector(".fg-reset").addEventListener("click", function () { self.zoom(self.nodes[0]); });
    var search = el.querySelector(".fg-search");
    search.addEventListener("input", function () { self.search(search.value); });
    var sides = el.querySelector(".fg-side");
    if (sides) {
      [["head", spec.head], ["base", spec.base]].forEach(function (s) {
        var b = document.createElement("button");
        b.type = "button";
        b.textContent = "widths: " + s[1] + " (" + s[0] + ")";
        b.setAttribute("aria-pressed", s[0] === self.side ? "true" : "false");
        b.addEventListener("click", function () {
          self.side = s[0];
          Array.prototype.forEach.call(sides.children, function (c) { c.setAttribute("aria-pressed", c === b ? "true" : "false"); });
          self.layout();
          self.zoom(self.nodes[0]);
          self.search(search.value);
        });
        sides.appendChild(b);
      });
    }
    this.layout();
    this.zoom(this.nodes[0]);
  }

  Graph.prototype.nodeAt = function (target) {
    var i = target && target.getAttribute && target.getAttribute("data-i");
    return i === null || i === undefined ? null : this.nodes[+i];
  };

  Graph.prototype.width = function (n) { return this.side === "base" ? n.base : n.head; };

  // x and w as fractions of the root; children start at their parent's left edge, in row order
  Graph.prototype.layout = function () {
    var self = this, next = {};
    var rootW = this.width(this.nodes[0]) || 1;
    this.nodes.forEach(function (n) {
      n.w = self.width(n) / rootW;
      if (n.parent < 0) { n.x = 0; } else {
        var p = self.nodes[n.parent];
        n.x = next[p.i] === undefined ? p.x : next[p.i];
        next[p.i] = n.x + n.w;
      }
    });
  };

  Graph.prototype.zoom = function (z) {
    var self = this, px = this.canvas.clientWidth || 1000;
    var ancestors = {}, inside = {};
    for (var a = z.parent; a >= 0; a = this.nodes[a].parent) { ancestors[a] = true; }
    this.zoomed = z;
    this.nodes.forEach(function (n) {
      var x, w, show = true;
      inside[n.i] = n === z || (n.parent >= 0 && inside[n.parent] === true);
      if (ancestors[n.i]) { x = 0; w = 1; } else if (inside[n.i]) {
        x = z.w > 0 ? (n.x - z.x) / z.w : 0;
        w = z.w > 0 ? n.w / z.w : 0;
      } else { show = false; }
      if (show && (!(w > 0) || w * px < 0.6)) { show = false; }
      n.el.style.display = show ? "" : "none";
      if (show) {
        n.el.style.left = (x * 100) + "%";
        n.el.style.width = (w * 100) + "%";
        n.el.classList.toggle("fg-anc", !!ancestors[n.i]);
      }
    });
    if (!this.matched) { this.setStatus(); }
  };

  Graph.prototype.describe = function (n) {
    var root = this.nodes[0], lines = [n.name];
    if (n.parent >= 0) { lines.push("layer: " + n.layer); }
    if (!this.diff) {
      lines.push("total: " + fmt(n.head) + " us/call (" + pct(n.head, root.head) + ")");
      if (n.parent >= 0) { lines.push("self:  " + fmt(n.headSelf) + " us/call"); }
    } else {
      lines.push(this.spec.head + " (head): total " + fmt(n.head) + ", self " + fmt(n.headSelf) + " us/call");
      lines.push(this.spec.base + " (base): total " + fmt(n.base) + ", self " + fmt(n.baseSelf) + " us/call");
      lines.push("\u0394 self " + signed(n.headSelf - n.baseSelf) + ", \u0394 total " + signed(n.head - n.base) + " us/call");
    }
    lines.push("click to zoom");
    return lines.join("\n");
  };

  Graph.prototype.setStatus = function (text) {
    var z = this.zoomed;
    this.status.textContent = text || (z && z.parent >= 0 ? "zoomed: " + z.label.slice(0, 60) : "");
  };

  Graph.prototype.search = function (query) {
    var self = this, re = null;
    query = (query || "").trim();
    if (query) {
      try { re = new RegExp(query, "i"); } catch (err) {
        re = new RegExp(query.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "i");
      }
    }
    var under = {}, total = 0, count = 0;
    this.nodes.forEach(function (n) {
      var m = !!re && n.parent >= 0 && re.test(n.name);
      n.el.classList.toggle("fg-match", m);
      // a match inside another match is counted once, with its outermost matching ancestor
      var covered = n.parent >= 0 && under[n.parent] === true;
      if (m) { count += 1; if (!covered) { total += self.width(n); } }
      under[n.i] = m || covered;
    });
    this.matched = !!re;
    if (re) {
      this.setStatus(count + " frames match: " + fmt(total) + " us/call, " + pct(total, this.width(this.nodes[0])));
    } else { this.setStatus(); }
  };

  var graphs = {};
  data.graphs.forEach(function (spec) {
    var el = document.getElementById(spec.id);
    if (el) { graphs[spec.id] = new Graph(spec, el); }
  });
  window.flametoolGraphs = graphs; // for tests and the curious: the graphs' state

  // one compared pair at a time: its layer chart, frame table and differential graph
  function showPair(i) {
    Array.prototype.forEach.call(document.querySelectorAll("[data-pair]"), function (el) {
      el.style.display = el.getAttribute("data-pair") === String(i) ? "" : "none";
    });
    Array.prototype.forEach.call(document.querySelectorAll("[data-show-pair]"), function (b) {
      b.setAttribute("aria-pressed", b.getAttribute("data-show-pair") === String(i) ? "true" : "false");
    });
    Object.keys(graphs).forEach(function (k) { graphs[k].zoom(graphs[k].zoomed); });  // drawn at their width
  }
  Array.prototype.forEach.call(document.querySelectorAll("[data-show-pair]"), function (b) {
    b.addEventListener("click", function () { showPair(b.getAttribute("data-show-pair")); });
  });
  if (document.querySelector("[data-show-pair]")) { showPair(0); }

  // the layers section in one of its two views (system libraries charged to their caller, or on their own)
  Array.prototype.forEach.call(document.querySelectorAll("[data-show-view]"), function (b) {
    b.addEventListener("click", function () {
      var v = b.getAttribute("data-show-view");
      Array.prototype.forEach.call(document.querySelectorAll("[data-view]"), function (el) {
        el.style.display = el.getAttribute("data-view") === v ? "" : "none";
      });
      Array.prototype.forEach.call(document.querySelectorAll("[data-show-view]"), function (o) {
        o.setAttribute("aria-pressed", o === b ? "true" : "false");
      });
    });
  });

  var pending = null;
  window.addEventListener("resize", function () {
    clearTimeout(pending);
    pending = setTimeout(function () {
      Object.keys(graphs).forEach(function (k) { graphs[k].zoom(graphs[k].zoomed); });
    }, 100);
  });
})();
