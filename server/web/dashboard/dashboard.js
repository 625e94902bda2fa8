// Routing dashboard: fetches /v1/routing/statistics and draws everything with DOM + hand-made SVG.
// Data (questions, template ids) is only ever inserted as text, never as HTML.
"use strict";

(function () {
  const REFRESH_MS = 10000;
  const SVG_NS = "http://www.w3.org/2000/svg";
  const PALETTE = ["#2563eb", "#0d9488", "#d97706", "#7c3aed", "#db2777", "#0891b2", "#65a30d", "#ea580c", "#4f46e5", "#be123c"];
  const UNROUTED = "(unrouted)";
  // outcomes are drawn in the order the statistics list them (the server's Outcome, server/api/outcome.py)
  const OUTCOME_LABELS = {
    executed: "Executed", routed: "Routed (test only)", needs_clarification: "Needs clarification",
    ambiguous: "Ambiguous", no_match: "No match", error: "Error",
  };
  // stages in pipeline order; any other stage the log reports (a new scoring stage) is drawn too,
  // before the totals, labelled from its name
  const STAGES = [
    ["embed", "Embed"], ["search", "Search"], ["string_similarity", "String similarity"],
    ["intent_model", "Intent model"], ["rerank", "Rerank"], ["decision", "Decision"], ["routing", "Routing total"],
    ["parameters", "Parameters"], ["execute", "Execute"], ["latency", "End to end"],
  ];
  const TOTALS = ["routing", "parameters", "execute", "latency"];
  function stageRows(lat) {
    const known = STAGES.map(([k]) => k);
    const extra = Object.keys(lat).filter((k) => !known.includes(k))
      .map((k) => [k, k.replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase())]);
    const rows = STAGES.filter(([k]) => !TOTALS.includes(k)).concat(extra, STAGES.filter(([k]) => TOTALS.includes(k)));
    return rows.filter(([key]) => lat[key] && lat[key].count);
  }

  // kind: which endpoint's decisions; questions by default (test_routing only explains: counted apart)
  const KINDS = ["query", "test_routing", "all"];
  const state = { adapter: "", since: "1h", kind: "query", colors: {}, timer: null, lastOk: 0 };

  // ---- small helpers ------------------------------------------------------------------------
  const $ = (id) => document.getElementById(id);
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k === "style") setStyle(node, v);
      else node.setAttribute(k, v);
    }
    for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return node;
  }
  // CSSOM, not the style attribute: the page's Content-Security-Policy forbids inline style attributes
  function setStyle(node, text) {
    for (const decl of text.split(";")) {
      const i = decl.indexOf(":");
      if (i > 0) node.style.setProperty(decl.slice(0, i).trim(), decl.slice(i + 1).trim());
    }
  }
  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = String(text);
    return node;
  }
  function titled(node, text) { node.append(svg("title", {}, text)); return node; }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  const fmtInt = (n) => Number(n || 0).toLocaleString("en-US");
  const fmtPct = (r) => (r * 100).toFixed(r > 0 && r < 0.1 ? 1 : 0) + "%";
  const fmtScore = (s) => (s === null || s === undefined ? "–" : Number(s).toFixed(2));
  function fmtMs(ms) {
    if (ms === null || ms === undefined) return "–";
    if (ms < 10) return ms.toFixed(2);
    if (ms < 100) return ms.toFixed(1);
    return Math.round(ms).toLocaleString("en-US");
  }
  function fmtTime(epoch, withDate, withSeconds) {
    const d = new Date(epoch * 1000);
    const parts = { hour: "2-digit", minute: "2-digit" };
    if (withSeconds) parts.second = "2-digit";
    const hm = d.toLocaleTimeString("en-GB", parts);
    if (!withDate) return hm;
    return d.toLocaleDateString("en-GB", { day: "2-digit", month: "short" }) + " " + hm;
  }
  function ago(epoch) {
    const s = Math.max(0, Date.now() / 1000 - epoch);
    if (s < 60) return Math.round(s) + " s ago";
    if (s < 3600) return Math.round(s / 60) + " min ago";
    if (s < 86400) return (s / 3600).toFixed(1) + " h ago";
    return (s / 86400).toFixed(1) + " d ago";
  }
  function niceMax(v) {
    if (v <= 0) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }
  function colorFor(name) {
    if (name === UNROUTED) return "#94a3b8";
    if (!(name in state.colors)) state.colors[name] = PALETTE[Object.keys(state.colors).length % PALETTE.length];
    return state.colors[name];
  }
  function empty(container, text) {
    clear(container).append(el("p", { class: "empty" }, text));
  }

  // ---- data ---------------------------------------------------------------------------------
  function query() {
    const q = new URLSearchParams({ since: state.since, kind: state.kind });
    if (state.adapter) q.set("adapter", state.adapter);
    return q.toString();
  }
  // only the figures the dashboard draws (statistics view=dashboard)
  function statsUrl() { return "/v1/routing/statistics?" + query() + "&view=dashboard"; }

  // Dismiss / Clear list: the server forgets these questions' text (the entries still count), then redraw
  async function forget(questions) {
    try {
      const resp = await fetch("/v1/routing/unmatched/forget", { method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "application/json" }, body: JSON.stringify({ questions }) });
      if (resp.status === 401) { window.location.reload(); return; }
      const body = await resp.json();
      if (!resp.ok) throw new Error((body.error && body.error.message) || ("HTTP " + resp.status));
      refresh();
    } catch (err) {
      $("banner").textContent = "Could not dismiss: " + err.message;
      $("banner").classList.remove("hidden");
    }
  }

  async function refresh() {
    clearTimeout(state.timer);
    try {
      const resp = await fetch(statsUrl(), { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (resp.status === 401 || resp.status === 403) { window.location.reload(); return; }
      const body = await resp.json();
      if (!resp.ok) throw new Error((body.error && body.error.message) || ("HTTP " + resp.status));
      render(body);
      state.lastOk = Date.now();
      $("banner").classList.add("hidden");
      const status = $("refresh-status");
      status.classList.remove("stale");
      status.textContent = "updated " + new Date().toLocaleTimeString("en-GB");
    } catch (err) {
      const banner = $("banner");
      banner.textContent = "Could not load statistics: " + err.message + ". Retrying…";
      banner.classList.remove("hidden");
      $("refresh-status").classList.add("stale");
    } finally {
      state.timer = setTimeout(refresh, REFRESH_MS);
    }
  }

  function render(body) {
    // stable colours: data adapters in config order (composites never answer themselves)
    for (const a of body.adapters || []) if (a.type !== "composite") colorFor(a.name);
    renderAdapterOptions(body.adapters || []);
    $("subtitle").textContent = state.adapter ? "Adapter " + state.adapter + " (" + (body.type || "") + ")"
      : "All adapters · default " + body.adapter;
    $("json-link").setAttribute("href", "/v1/routing/statistics?" + query());  // the full figures
    const logBody = body.routing_log || {};
    if (!logBody.enabled) {
      const banner = $("banner");
      banner.textContent = "The routing log is disabled (stats.enabled: false): no figures to show.";
      banner.classList.remove("hidden");
      renderConfig(body.config_status || {});
      return;
    }
    const threshold = logBody.score_histogram ? logBody.score_histogram.threshold : null;
    renderKpis(logBody, threshold);
    renderVolume(logBody.volume);
    renderOutcomes(logBody.outcomes || {}, logBody.total || 0);
    renderTemplates(logBody.templates || [], threshold);
    renderHistogram(logBody.score_histogram);
    renderLatency(logBody.latency_ms || {});
    renderUnmatched(logBody.unmatched_questions || [], logBody.store_queries);
    renderSources(logBody.sources || [], body.sources || []);
    renderConfig(body.config_status || {});
    renderLog(logBody.log || {}, logBody);
  }

  function renderAdapterOptions(adapters) {
    const select = $("adapter-select");
    const wanted = ["", ...adapters.map((a) => a.name)];
    const have = Array.from(select.options).map((o) => o.value);
    if (wanted.join("\u0000") === have.join("\u0000")) return;
    clear(select).append(el("option", { value: "" }, "All adapters"));
    for (const a of adapters) select.append(el("option", { value: a.name }, a.name + " · " + a.type));
    select.value = state.adapter;
  }

  // ---- KPIs ---------------------------------------------------------------------------------
  function renderKpis(d, threshold) {
    const total = d.total || 0;
    const oc = d.outcomes || {};
    const get = (k) => (oc[k] ? oc[k] : { count: 0, rate: 0 });
    $("kpi-total").textContent = fmtInt(total);
    const kinds = d.by_kind || {};
    $("kpi-kinds").textContent = fmtInt(kinds.query || 0) + " queries · " + fmtInt(kinds.test_routing || 0) + " tests";
    for (const [key, id] of [["executed", "executed"], ["no_match", "nomatch"], ["error", "errors"]]) {
      $("kpi-" + id).textContent = total ? fmtPct(get(key).rate) : "–";
      $("kpi-" + id + "-count").textContent = fmtInt(get(key).count) + " of " + fmtInt(total);
    }
    const lat = (d.latency_ms || {}).latency;
    $("kpi-p95").textContent = lat ? fmtMs(lat.p95) + " ms" : "–";
    $("kpi-p50").textContent = lat ? "p50 " + fmtMs(lat.p50) + " ms" : "";
    const score = (d.scores || {}).combined;
    $("kpi-score").textContent = score && score.count ? fmtScore(score.p50) : "–";
    $("kpi-threshold").textContent = threshold !== null && threshold !== undefined ? "threshold " + fmtScore(threshold) : "";
  }

  // ---- volume (stacked bars by adapter) -----------------------------------------------------
  function renderVolume(vol) {
    const box = $("volume-chart");
    const legend = clear($("volume-legend"));
    if (!vol || !vol.buckets || !vol.buckets.length) { empty(box, "No decisions in this window."); return; }
    const names = Object.keys(vol.series);
    const n = vol.buckets.length;
    const totals = vol.buckets.map((_, i) => names.reduce((s, name) => s + vol.series[name][i], 0));
    const W = 760, H = 230, L = 40, R = 8, T = 10, B = 26;
    const ymax = niceMax(Math.max(1, ...totals));
    const plotW = W - L - R, plotH = H - T - B;
    const slot = plotW / n, barW = Math.max(2, Math.min(28, slot * 0.72));
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "Routing volume over time by adapter" });
    for (let k = 0; k <= 4; k++) {
      const v = (ymax * k) / 4, y = T + plotH - (plotH * k) / 4;
      root.append(svg("line", { x1: L, x2: W - R, y1: y, y2: y, class: "axis" }));
      root.append(svg("text", { x: L - 6, y: y + 4, "text-anchor": "end" }, Number.isInteger(v) ? v : v.toFixed(1)));
    }
    const withDate = vol.buckets[n - 1] - vol.buckets[0] >= 86400;
    const withSeconds = vol.bucket_seconds < 60;  // buckets under a minute: minutes alone would repeat
    const every = Math.max(1, Math.ceil(n / 7));
    let lastLabel = null;
    vol.buckets.forEach((t, i) => {
      const x = L + i * slot + (slot - barW) / 2;
      let y = T + plotH;
      for (const name of names) {
        const c = vol.series[name][i];
        if (!c) continue;
        const h = (plotH * c) / ymax;
        y -= h;
        root.append(titled(svg("rect", {
          x: x.toFixed(1), y: y.toFixed(1), width: barW.toFixed(1), height: Math.max(h, 0.5).toFixed(1), rx: 2,
          fill: colorFor(name), class: "vol-bar", "data-series": name, "data-bucket": t, "data-count": c,
        }), `${name}: ${c} at ${fmtTime(t, withDate, withSeconds)}`));
      }
      const label = fmtTime(t, withDate, withSeconds);
      if (i % every === 0 && label !== lastLabel) {
        root.append(svg("text", { x: (L + i * slot + slot / 2).toFixed(1), y: H - 8, "text-anchor": "middle", class: "vol-label" },
          label));
        lastLabel = label;
      }
    });
    clear(box).append(root);
    const step = vol.bucket_seconds;
    $("volume-hint").textContent = "per " + (step >= 3600 ? step / 3600 + " h" : step >= 60 ? step / 60 + " min" : step + " s");
    for (const name of names) {
      const total = vol.series[name].reduce((a, b) => a + b, 0);
      legend.append(el("span", { "data-series": name, "data-total": total },
        el("i", { class: "swatch", style: "background:" + colorFor(name) }), name + " · " + fmtInt(total)));
    }
  }

  // ---- outcomes -----------------------------------------------------------------------------
  function renderOutcomes(outcomes, total) {
    const bar = clear($("outcome-bar"));
    const rows = clear($("outcome-rows"));
    for (const [key, o] of Object.entries(outcomes)) {
      if (total && o.count) {
        bar.append(el("div", { style: `width:${(100 * o.count) / total}%;background:var(--${key})`, title: `${OUTCOME_LABELS[key] || key}: ${o.count}` }));
      }
      rows.append(el("tr", { "data-outcome": key },
        el("td", {}, el("span", { class: "dot", style: `background:var(--${key})` }), OUTCOME_LABELS[key] || key),
        el("td", { class: "num count" }, fmtInt(o.count)),
        el("td", { class: "rate" }, total ? fmtPct(o.rate) : "–")));
    }
  }

  // ---- templates ----------------------------------------------------------------------------
  function renderTemplates(templates, threshold) {
    const body = clear($("template-rows"));
    if (!templates.length) {
      body.append(el("tr", {}, el("td", { colspan: 5, class: "empty" }, "No template was selected in this window.")));
      return;
    }
    for (const t of templates) {
      const score = t.mean_score === null ? 0 : t.mean_score;
      const track = el("div", { class: "track" }, el("div", { class: "fill", style: `width:${Math.min(100, score * 100)}%` }));
      if (threshold !== null && threshold !== undefined) track.append(el("div", { class: "thr", style: `left:${threshold * 100}%`, title: "threshold " + threshold }));
      body.append(el("tr", { "data-template": t.adapter + "/" + t.template_id },
        el("td", { class: "tid" }, t.template_id),
        el("td", {}, el("span", { class: "adapter-tag", style: "background:" + colorFor(t.adapter) }, t.adapter)),
        el("td", { class: "num hits" }, fmtInt(t.hits)),
        el("td", { class: "num executed" }, fmtInt(t.executed)),
        el("td", {}, el("div", { class: "scorebar" }, track, el("span", { class: "val mean-score" }, fmtScore(t.mean_score))))));
    }
  }

  // ---- score histogram ----------------------------------------------------------------------
  function renderHistogram(h) {
    const box = $("score-chart");
    if (!h) { empty(box, "No scores yet."); return; }
    const bins = h.selected.length;
    const totals = h.selected.map((s, i) => s + h.not_selected[i]);
    const all = totals.reduce((a, b) => a + b, 0);
    $("score-hint").textContent = fmtInt(all) + " decisions · best score each";
    const W = 520, H = 230, L = 34, R = 22, T = 16, B = 26;
    const plotW = W - L - R, plotH = H - T - B;
    const ymax = niceMax(Math.max(1, ...totals));
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "Score histogram with threshold" });
    for (let k = 0; k <= 4; k++) {
      const v = (ymax * k) / 4, y = T + plotH - (plotH * k) / 4;
      root.append(svg("line", { x1: L, x2: W - R, y1: y, y2: y, class: "axis" }));
      root.append(svg("text", { x: L - 6, y: y + 4, "text-anchor": "end" }, Number.isInteger(v) ? v : v.toFixed(1)));
    }
    const bw = plotW / bins;
    for (let i = 0; i < bins; i++) {
      const x = L + i * bw + 1;
      let y = T + plotH;
      for (const [count, fill, label] of [[h.not_selected[i], "#94a3b8", "nothing selected"], [h.selected[i], "#2563eb", "template selected"]]) {
        if (!count) continue;
        const hh = (plotH * count) / ymax;
        y -= hh;
        root.append(titled(svg("rect", { x: x.toFixed(1), y: y.toFixed(1), width: (bw - 2).toFixed(1), height: hh.toFixed(1), fill, rx: 1.5 }),
          `${h.edges[i].toFixed(2)}–${h.edges[i + 1].toFixed(2)}: ${count} ${label}`));
      }
      root.append(svg("rect", { class: "hist-bin", x: x.toFixed(1), y: T, width: (bw - 2).toFixed(1), height: plotH, fill: "transparent",
        "data-bin": i, "data-selected": h.selected[i], "data-not-selected": h.not_selected[i] }));
    }
    for (const v of [0, 0.25, 0.5, 0.75, 1]) {
      root.append(svg("text", { x: (L + v * plotW).toFixed(1), y: H - 8, "text-anchor": "middle" }, v.toFixed(2)));
    }
    if (h.threshold !== null && h.threshold !== undefined) {
      const x = L + h.threshold * plotW;
      root.append(svg("line", { x1: x, x2: x, y1: T - 6, y2: T + plotH, stroke: "#dc2626", "stroke-width": 2, "stroke-dasharray": "5 3", id: "threshold-line", "data-threshold": h.threshold }));
      root.append(svg("text", { x: x + 5, y: T + 2, class: "value-label threshold-label" }, "threshold " + Number(h.threshold).toFixed(2)));
    }
    clear(box).append(root);
  }

  // ---- latency per stage --------------------------------------------------------------------
  function renderLatency(lat) {
    const box = $("latency-chart");
    const stages = stageRows(lat);
    if (!stages.length) { empty(box, "No latency figures yet."); return; }
    const max = niceMax(Math.max(...stages.map(([k]) => lat[k].p95 || 0), 0.001));
    const rowH = 30, L = 130, R = 150, W = 620, T = 6;
    const H = T + rowH * stages.length + 4;
    const plotW = W - L - R;
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "Latency per stage" });
    stages.forEach(([key, label], i) => {
      const s = lat[key], y = T + i * rowH;
      const total = key === "latency" || key === "routing";
      const g = svg("g", { class: "lat-row", "data-stage": key, "data-p50": s.p50, "data-p95": s.p95, "data-count": s.count });
      g.append(svg("text", { x: 0, y: y + 18, class: total ? "value-label" : "" }, label));
      g.append(svg("rect", { x: L, y: y + 7, width: plotW, height: 14, rx: 4, fill: "#f1f5f9" }));
      g.append(titled(svg("rect", { x: L, y: y + 7, width: Math.max(1, (plotW * s.p50) / max).toFixed(1), height: 14, rx: 4,
        fill: total ? "#1e3a8a" : "#60a5fa" }), `${label}: p50 ${fmtMs(s.p50)} ms, p95 ${fmtMs(s.p95)} ms, ${s.count} samples`));
      const x95 = L + (plotW * s.p95) / max;
      g.append(svg("line", { x1: x95, x2: x95, y1: y + 4, y2: y + 24, stroke: "#0f172a", "stroke-width": 2 }));
      g.append(svg("text", { x: W - R + 10, y: y + 18, class: "value-label" }, `${fmtMs(s.p50)} · ${fmtMs(s.p95)} ms`));
      root.append(g);
    });
    clear(box).append(root);
  }

  // ---- unmatched questions ------------------------------------------------------------------
  function renderUnmatched(items, stored) {
    const list = clear($("unmatched-list"));
    const note = $("unmatched-empty");
    const clearAll = $("unmatched-clear");
    clearAll.classList.toggle("hidden", !items.length);
    clearAll.onclick = () => forget(items.map((u) => u.question));
    if (!items.length) {
      note.textContent = stored ? "No unmatched questions in this window."
        : "Question text is not stored (stats.store_queries: false), so unmatched questions cannot be listed.";
      note.classList.remove("hidden");
      return;
    }
    note.classList.add("hidden");
    for (const u of items) {
      list.append(el("li", { "data-count": u.count },
        el("span", { class: "count" }, "×" + fmtInt(u.count)),
        el("span", { class: "q" }, u.question),
        el("span", { class: "best", title: "best score · last asked" }, "best " + fmtScore(u.best_score) + " · " + ago(u.last_seen)),
        dismiss(u.question)));
    }
  }
  function dismiss(question) {
    const button = el("button", { type: "button", class: "dismiss", title: "Forget this question's text (its entries still count)" }, "Dismiss");
    button.addEventListener("click", () => forget([question]));
    return button;
  }

  // ---- sources: the window's figures from the log, joined with each data adapter's live circuit ---
  const CIRCUIT_LABELS = { closed: "closed", open: "open", half_open: "half-open" };
  function renderSources(logged, live) {
    const body = clear($("source-rows"));
    const byName = {};
    for (const s of live) byName[s.adapter] = { live: s };
    for (const s of logged) (byName[s.adapter] = byName[s.adapter] || {}).logged = s;
    const names = live.map((s) => s.adapter).concat(logged.map((s) => s.adapter).filter((n) => !live.some((s) => s.adapter === n)));
    if (!names.length) {
      body.append(el("tr", {}, el("td", { colspan: 6, class: "empty" }, "No data sources.")));
      return;
    }
    for (const name of names) {
      const l = byName[name].logged || { queries: 0, failed: 0, failures: {}, search_failures: 0, search_timeouts: 0, embedding_failures: 0, execute_ms: {} };
      const s = byName[name].live;
      const codes = Object.entries(l.failures || {}).map(([c, n]) => c + " ×" + n).join(", ");
      const searchTotal = l.search_failures + l.search_timeouts + (l.embedding_failures || 0);
      const searchNote = l.search_timeouts ? l.search_timeouts + " timed out" : "";
      const state = s ? s.circuit.state : null;
      const circuit = s
        ? el("span", { class: "pill circuit " + (state === "closed" ? "ok" : "bad"), title: s.circuit.consecutive_failures + " consecutive failures · " + s.rejected + " rejected" }, CIRCUIT_LABELS[state] || state)
        : el("span", { class: "muted" }, "–");
      const ms = l.execute_ms || {};
      body.append(el("tr", { "data-source": name, "data-circuit": state || "" },
        el("td", {}, el("span", { class: "adapter-tag", style: "background:" + colorFor(name) }, name)),
        el("td", { class: "num queries" }, fmtInt(l.queries)),
        el("td", { class: "num failures", title: codes }, fmtInt(l.failed)),
        el("td", { class: "num search-failures", title: searchNote }, fmtInt(searchTotal)),
        el("td", { class: "num execute-ms" }, ms.count ? fmtMs(ms.p50) + " · " + fmtMs(ms.p95) : "–"),
        el("td", { class: "circuit-cell" }, circuit)));
    }
  }

  // ---- config and log status ----------------------------------------------------------------
  function facts(dl, pairs) {
    clear(dl);
    for (const [k, v, attrs] of pairs) {
      dl.append(el("dt", {}, k));
      dl.append(el("dd", attrs || {}, v));
    }
  }
  // adapter changes of the last load, as "added: a, b · changed: c" (either holder shape)
  function describeChanges(changes) {
    if (!changes) return [];
    const groups = changes.adapters && typeof changes.adapters === "object" && !Array.isArray(changes.adapters)
      ? changes.adapters
      : Object.fromEntries(Object.entries(changes).filter(([k]) => k.startsWith("adapters_")).map(([k, v]) => [k.slice(9), v]));
    const out = Object.entries(groups).filter(([k, v]) => k !== "reused" && Array.isArray(v) && v.length)
      .map(([k, v]) => k + ": " + v.join(", "));
    if (typeof changes.template_count === "number") out.push(fmtInt(changes.template_count) + " templates");
    return out;
  }
  function renderConfig(c) {
    const last = c.last_load, good = c.last_good_load;
    const ok = !last || last.ok;
    const pill = el("span", { class: "pill " + (ok ? "ok" : "bad"), id: "config-state" }, ok ? "OK" : "Last reload failed");
    const changes = describeChanges(last && last.changes);
    facts($("config-facts"), [
      ["Status", pill],
      ["Last load", last ? fmtTime(last.at, true) + " (" + ago(last.at) + ", " + last.seconds.toFixed(2) + " s"
        + (last.trigger ? ", " + last.trigger : "") + ")" : "–"],
      ["Last good load", good ? fmtTime(good.at, true) + " (" + ago(good.at) + ")" : "–"],
      ["Changes", changes.length ? changes.join(" · ") : "none"],
      ["Config file", c.config_file || "–"],
    ]);
    const errors = clear($("config-errors"));
    for (const e of (last && last.errors) || []) {
      const where = [e.file, e.line].filter((x) => x !== null && x !== undefined).join(":");
      errors.append(el("li", {}, el("code", {}, where || "config"), " ", e.key ? e.key + ": " : "", e.message));
    }
  }
  function renderLog(s, d) {
    const unmatched = d.unmatched_sample || {};
    facts($("log-facts"), [
      ["Backend", (s.backend || "–") + " · " + (s.table || "")],
      ["Written", fmtInt(s.written) + " entries in " + fmtInt(s.batches) + " batches", { id: "log-written" }],
      ["Dropped (queue full)", fmtInt(s.dropped), { id: "log-dropped" }],
      ["Failed writes", fmtInt(s.failed)],
      ["Queue", fmtInt(s.queue_length) + " / " + fmtInt(s.queue_capacity)],
      ["Retention", s.retention_days + " days"],
      ["Question text", d.store_queries ? "stored" : "not stored"],
      ["Unmatched questions from", fmtInt(unmatched.rows) + " entries" + (unmatched.limited ? " (newest only)" : "")],
    ]);
  }

  // ---- boot ---------------------------------------------------------------------------------
  function boot() {
    const params = new URLSearchParams(window.location.search);
    state.adapter = params.get("adapter") || "";
    state.since = params.get("since") || "1h";
    state.kind = KINDS.includes(params.get("kind")) ? params.get("kind") : "query";
    $("kind-select").value = state.kind;
    const win = $("window-select");
    if (![...win.options].some((o) => o.value === state.since)) win.append(el("option", { value: state.since }, state.since));
    win.value = state.since;
    const onChange = () => {
      state.adapter = $("adapter-select").value;
      state.since = win.value;
      state.kind = $("kind-select").value;
      history.replaceState(null, "", "/dashboard?" + query());
      refresh();
    };
    $("adapter-select").addEventListener("change", onChange);
    $("kind-select").addEventListener("change", onChange);
    win.addEventListener("change", onChange);
    refresh();
  }
  document.addEventListener("DOMContentLoaded", boot);
})();
