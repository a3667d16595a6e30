// The page's interaction: sortable tables, tabs, stacks opened in any table, and the flame graph
// of any snapshot moment (picked on the timeline), with zoom and hover. Everything it shows is
// on the page without it too; it draws the flame graph with the same layout as the server.
(function () {
  'use strict';
  document.documentElement.classList.add('js');
  var data = JSON.parse(document.getElementById('report-data').textContent);

  // ---- formatting (as the server writes it) ----
  function sig3(v) {
    var s = v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
    return s.indexOf('.') < 0 ? s : s.replace(/0+$/, '').replace(/\.$/, '');
  }
  // As heaplab_model::units::bytes.
  function fmtBytes(n) {
    var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    var x = n, u = 0;
    while (x >= 1024 && u + 1 < units.length) { x /= 1024; u++; }
    return u === 0 ? n + ' B' : x.toFixed(2) + ' ' + units[u];
  }
  function fmtDur(ns) {
    if (ns < 1e3) return ns + ' ns';
    if (ns < 1e6) return sig3(ns / 1e3) + ' µs';
    if (ns < 1e9) return sig3(ns / 1e6) + ' ms';
    if (ns < 60e9) return sig3(ns / 1e9) + ' s';
    var s = Math.floor(ns / 1e9);
    return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
  }
  function pct(v, t) {
    if (!t) return '–';
    var p = v * 100 / t;
    return p > 0 && p < 0.1 ? '<0.1%' : p.toFixed(1) + '%';
  }
  function short(s, n) { return s.length <= n ? s : s.slice(0, n - 1) + '…'; }
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
    });
  }

  // ---- sortable tables ----
  function sortTable(table, col) {
    var th = table.tHead.rows[0].cells[col];
    var numeric = th.getAttribute('data-sort') === 'n';
    var now = th.getAttribute('aria-sort');
    var desc = now ? now === 'ascending' : numeric && !th.hasAttribute('data-asc');
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', desc ? 'descending' : 'ascending');
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var key = function (r) {
      var td = r.cells[col];
      if (!numeric) return td.textContent.trim().toLowerCase();
      var v = parseFloat(td.getAttribute('data-v'));
      return isNaN(v) ? -Infinity : v;
    };
    rows.sort(function (a, b) {
      var x = key(a), y = key(b);
      var c = x < y ? -1 : x > y ? 1 : 0;
      return desc ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  document.querySelectorAll('table.sortable').forEach(function (t) {
    Array.prototype.forEach.call(t.tHead.rows[0].cells, function (th, i) {
      if (!th.hasAttribute('data-sort')) return;
      th.tabIndex = 0;
      th.addEventListener('click', function () { sortTable(t, i); });
      th.addEventListener('keydown', function (e) { if (e.key === 'Enter') sortTable(t, i); });
    });
  });

  // A stack written in an earlier table is copied into a later row when it is opened.
  document.addEventListener('toggle', function (e) {
    var d = e.target;
    if (!d.open || !d.querySelector) return;
    var ref = d.querySelector('p.ref[data-ref]');
    if (!ref) return;
    var src = document.getElementById(ref.getAttribute('data-ref'));
    if (!src) return;
    var copy = src.cloneNode(true);
    copy.removeAttribute('id');
    ref.replaceWith(copy);
  }, true);

  // ---- tabs: one site table at a time ----
  document.querySelectorAll('.tabs').forEach(function (box) {
    var tabs = box.querySelectorAll(':scope > .tab');
    if (tabs.length < 2) return;
    var bar = document.createElement('div');
    bar.className = 'tabbar';
    bar.setAttribute('role', 'tablist');
    tabs.forEach(function (tab, i) {
      var h = tab.querySelector('h3');
      var b = document.createElement('button');
      b.type = 'button';
      b.setAttribute('role', 'tab');
      b.textContent = h ? h.textContent : 'table ' + (i + 1);
      if (h) h.hidden = true;
      b.addEventListener('click', function () { show(i); });
      bar.appendChild(b);
    });
    function show(k) {
      tabs.forEach(function (t, i) { t.hidden = i !== k; });
      Array.prototype.forEach.call(bar.children, function (b, i) { b.setAttribute('aria-selected', String(i === k)); });
    }
    box.insertBefore(bar, box.firstChild);
    show(0);
  });

  // ---- the flame graph ----
  var flame = null;
  if (data.kind === 'report' && data.snapshots && data.snapshots.length && document.getElementById('flame-graph')) {
    flame = initFlame();
  }

  function initFlame() {
    var WIDTH = 1200, ROW = 18;
    var n = data.nodes.length / 2;
    var parent = new Int32Array(n), name = new Int32Array(n);
    for (var i = 0; i < n; i++) { parent[i] = data.nodes[2 * i]; name[i] = data.nodes[2 * i + 1]; }
    var graph = document.getElementById('flame-graph');
    var info = document.getElementById('flame-info');
    var caption = document.getElementById('flame-caption');
    var reset = document.getElementById('flame-reset');
    var prev = document.getElementById('flame-prev');
    var next = document.getElementById('flame-next');
    var svg = document.getElementById('timeline-svg');
    var moments = svg ? svg.querySelectorAll('.moment') : [];
    var cursor = document.getElementById('cursor');
    // Snapshot indices in time order, for earlier/later.
    var byTime = data.snapshots.map(function (s, i) { return i; })
      .sort(function (a, b) { return data.snapshots[a].ns - data.snapshots[b].ns; });
    var st = { snap: -1, zoom: null, t: null };

    function tree(s) {
      var sum = new Float64Array(n);
      for (var k = 0; k < s.leaves.length; k += 2) {
        for (var m = s.leaves[k]; m >= 0; m = parent[m]) sum[m] += s.leaves[k + 1];
      }
      var children = [], top = [], totalTop = 0;
      for (var j = 0; j < n; j++) children.push([]);
      for (j = 0; j < n; j++) {
        if (sum[j] > 0) {
          if (parent[j] < 0) { top.push(j); totalTop += sum[j]; } else children[parent[j]].push(j);
        }
      }
      var order = function (a, b) { return sum[b] - sum[a] || a - b; };
      top.sort(order);
      children.forEach(function (c) { c.sort(order); });
      return { sum: sum, children: children, top: top, other: s.other,
               total: Math.max(totalTop + s.other, s.live, 1) };
    }

    function box(o, key, label, title, fill, x, w, d, anc) {
      var y = d * ROW;
      o.push('<g data-k="' + key + '"' + (anc ? ' class="anc"' : '') + '><title>' + esc(title) + '</title><rect x="' +
        x.toFixed(1) + '" y="' + y + '" width="' + Math.max(w - 0.5, 0.3).toFixed(1) + '" height="' + (ROW - 1) +
        '" fill="' + fill + '"/>');
      var fits = Math.floor((w - 6) / 6.6);
      if (fits >= 3) o.push('<text x="' + (x + 3).toFixed(1) + '" y="' + (y + 12.5) + '">' + esc(short(label, fits)) + '</text>');
      o.push('</g>');
    }

    function nodeTitle(t, j) {
      var nm = data.names[name[j]];
      return nm[0] + ': ' + fmtBytes(t.sum[j]) + ' (' + pct(t.sum[j], t.total) + ') ' + nm[2];
    }

    function draw() {
      var t = st.t, o = [], depth = 0;
      var focus = st.zoom;
      var scale = WIDTH / (focus === null ? t.total : focus === 'o' ? Math.max(t.other, 1) : Math.max(t.sum[focus], 1));
      function place(j, x, d) {
        var w = t.sum[j] * scale;
        if (w >= 1 / 3) {
          depth = Math.max(depth, d);
          var nm = data.names[name[j]];
          box(o, j, nm[0], nodeTitle(t, j), nm[3], x, w, d, false);
          var cx = x;
          t.children[j].forEach(function (c) { cx = place(c, cx, d + 1); });
        }
        return x + w;
      }
      box(o, 'r', data.root, data.root + ': ' + fmtBytes(t.total), '#999', 0, WIDTH, 0, focus !== null);
      if (focus === null) {
        var x = 0;
        t.top.forEach(function (j) { x = place(j, x, 1); });
        if (t.other > 0 && t.other * scale >= 1 / 3) {
          box(o, 'o', data.other, data.other + ': ' + fmtBytes(t.other) + ' (' + pct(t.other, t.total) + ')', '#bbb', x, t.other * scale, 1, false);
          depth = Math.max(depth, 1);
        }
      } else if (focus === 'o') {
        box(o, 'o', data.other, data.other + ': ' + fmtBytes(t.other) + ' (' + pct(t.other, t.total) + ')', '#bbb', 0, WIDTH, 1, false);
        depth = 1;
      } else {
        var chain = [];
        for (var a = parent[focus]; a >= 0; a = parent[a]) chain.unshift(a);
        chain.forEach(function (a, k) {
          var nm = data.names[name[a]];
          box(o, a, nm[0], nodeTitle(t, a), nm[3], 0, WIDTH, k + 1, true);
        });
        place(focus, 0, chain.length + 1);
      }
      var h = (depth + 1) * ROW;
      graph.innerHTML = '<svg id="flame-svg" class="flame" viewBox="0 0 ' + WIDTH + ' ' + h +
        '" width="100%" preserveAspectRatio="none" role="img" aria-label="flame graph of live bytes" style="aspect-ratio:' +
        WIDTH + '/' + h + '" data-drawn="js">' + o.join('') + '</svg>';
      reset.hidden = focus === null;
    }

    function select(i) {
      var s = data.snapshots[i];
      st.snap = i; st.zoom = null; st.t = tree(s);
      var when = i === 0 && s.ns === data.peak_ns ? 'At the peak (' + fmtDur(s.ns) + ')' : 'At ' + fmtDur(s.ns);
      caption.textContent = when + ': ' + fmtBytes(s.live) + ' live.';
      moments.forEach(function (m) { m.classList.toggle('on', +m.getAttribute('data-i') === i); });
      var m = moments[i];
      if (cursor && m) { cursor.setAttribute('x1', m.getAttribute('x1')); cursor.setAttribute('x2', m.getAttribute('x1')); }
      var k = byTime.indexOf(i);
      prev.hidden = false; next.hidden = false;
      prev.disabled = k <= 0; next.disabled = k >= byTime.length - 1;
      draw();
    }

    function zoom(key) {
      st.zoom = key === 'r' ? null : key === 'o' ? 'o' : +key;
      draw();
    }

    graph.addEventListener('click', function (e) {
      var g = e.target.closest('g[data-k]');
      if (g) zoom(g.getAttribute('data-k'));
    });
    graph.addEventListener('mouseover', function (e) {
      var g = e.target.closest('g[data-k]');
      if (g) info.textContent = g.querySelector('title').textContent;
    });
    reset.addEventListener('click', function () { zoom('r'); });
    prev.addEventListener('click', function () { var k = byTime.indexOf(st.snap); if (k > 0) select(byTime[k - 1]); });
    next.addEventListener('click', function () { var k = byTime.indexOf(st.snap); if (k < byTime.length - 1) select(byTime[k + 1]); });
    if (svg) {
      svg.addEventListener('click', function (e) {
        var p = svg.createSVGPoint();
        p.x = e.clientX; p.y = e.clientY;
        var x = p.matrixTransform(svg.getScreenCTM().inverse()).x;
        var ns = (x - +svg.getAttribute('data-l')) / +svg.getAttribute('data-w') * +svg.getAttribute('data-tmax');
        var best = 0;
        data.snapshots.forEach(function (s, i) {
          if (Math.abs(s.ns - ns) < Math.abs(data.snapshots[best].ns - ns)) best = i;
        });
        select(best);
      });
    }
    select(0);
    return { select: select, zoom: zoom, state: st, graph: graph, moments: moments, svg: svg };
  }

  // ---- a self-test of the interaction, for the browser test (page opened with #selftest) ----
  if (location.hash === '#selftest') {
    var r = {};
    try {
      if (flame) {
        var last = data.snapshots.length - 1;
        var m = flame.moments[last].getBoundingClientRect();
        flame.svg.dispatchEvent(new MouseEvent('click', { bubbles: true, clientX: m.left + m.width / 2, clientY: m.top + 1 }));
        r.clicked_moment = flame.state.snap;
        r.snapshots = data.snapshots.length;
        r.boxes = flame.graph.querySelectorAll('g[data-k]').length;
        var g = flame.graph.querySelector('g[data-k]:not([data-k=r]):not([data-k=o])');
        if (g) {
          g.dispatchEvent(new MouseEvent('click', { bubbles: true }));
          r.zoomed = flame.graph.querySelector('g.anc') !== null && flame.state.zoom !== null;
        }
        flame.select(0);
      }
      var t = document.querySelector('table.sortable');
      if (t) {
        var heads = Array.prototype.slice.call(t.tHead.rows[0].cells);
        var col = heads.findIndex(function (h) { return h.textContent === 'Calls'; });
        if (col < 0) col = heads.length - 1;
        sortTable(t, col);
        var vals = Array.prototype.map.call(t.tBodies[0].rows, function (row) { return +row.cells[col].getAttribute('data-v'); });
        r.sorted = vals.every(function (v, i) { return i === 0 || vals[i - 1] >= v; });
        r.rows = vals.length;
      }
    } catch (e) {
      r.error = String(e && e.stack || e);
    }
    var out = document.getElementById('selftest');
    out.textContent = JSON.stringify(r);
  }
  document.documentElement.setAttribute('data-ready', 'yes');
})();
