/*
 * attn_html.c - one self-contained, offline HTML page for exploring attention:
 * pick a layer and head, switch between the raw / scaled / masked / softmax
 * views, hover a cell to read the token pair and its value. No network: the
 * CSS and JS are inline and the data is the JSON export embedded in a
 * <script type="application/json"> element.
 *
 * Opening the page with a URL hash  #select=L,H,i,j[,view]  selects that head
 * and view and "hovers" cell (i, j) from script, writing the value into
 * #info-value (text and data-value). Several cells may be given, separated by
 * ';'; each leaves a hidden copy, <span class="probe" data-layer.. data-value..>,
 * in #probes. The tests read them back with a headless browser and compare
 * them with the JSON export.
 */
#include <stdio.h>
#include <string.h>

#include "attn_util.h"

static const char *const HTML_HEAD[] = {
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n",
    "<title>andrea attention</title>\n<style>\n",
    "body{font:14px/1.4 system-ui,sans-serif;margin:16px;color:#222;background:#fff}\n",
    "h1{font-size:18px;margin:0 0 8px}\n",
    "#controls{display:flex;gap:16px;align-items:center;flex-wrap:wrap;margin:8px 0}\n",
    "#info{font-family:ui-monospace,monospace;min-height:2.8em;margin:8px 0;white-space:pre}\n",
    "#explain{color:#555;margin:4px 0}\n",
    "canvas{border:1px solid #ccc;cursor:crosshair}\n",
    "table{border-collapse:collapse;margin-top:12px;font-family:ui-monospace,monospace}\n",
    "td,th{border:1px solid #ddd;padding:2px 8px;text-align:right}\n",
    "tr.sel{background:#ffeaa0} tbody tr{cursor:pointer}\n",
    ".checks{font-family:ui-monospace,monospace;color:#333}\n",
    "</style></head>\n<body>\n",
    "<h1>Attention maps</h1>\n<div id=\"meta\"></div>\n",
    "<div id=\"controls\">\n",
    " <label>layer <select id=\"layer\"></select></label>\n",
    " <label>head <select id=\"head\"></select></label>\n",
    " <span id=\"views\">view:\n",
    "  <label><input type=\"radio\" name=\"view\" value=\"raw\"> raw Q&middot;K<sup>T</sup></label>\n",
    "  <label><input type=\"radio\" name=\"view\" value=\"scaled\"> scaled &divide;&radic;d<sub>k</sub></label>\n",
    "  <label><input type=\"radio\" name=\"view\" value=\"masked\"> masked</label>\n",
    "  <label><input type=\"radio\" name=\"view\" value=\"softmax\" checked> softmax A</label>\n",
    " </span>\n</div>\n",
    "<div id=\"explain\"></div>\n",
    "<canvas id=\"cv\" width=\"100\" height=\"100\"></canvas>\n",
    "<div id=\"info\"><span id=\"info-pair\">hover a cell</span>\n",
    "<span id=\"info-value\" data-value=\"\"></span></div>\n",
    "<div id=\"probes\" hidden></div>\n",
    "<div class=\"checks\" id=\"checks\"></div>\n",
    "<table id=\"stats\"><thead><tr><th>layer</th><th>head</th><th>entropy (nats)</th>",
    "<th>uniform head</th><th>mean distance</th><th>first-token weight</th></tr></thead>",
    "<tbody></tbody></table>\n",
    "<script type=\"application/json\" id=\"andrea-data\">\n",
    NULL};

static const char *const HTML_TAIL[] = {
    "</script>\n<script>\n",
    "'use strict';\n",
    "const D = JSON.parse(document.getElementById('andrea-data').textContent);\n",
    "const T = D.T, cv = document.getElementById('cv'), ctx = cv.getContext('2d');\n",
    "const CELL = Math.max(6, Math.min(32, Math.floor(640 / T)));\n",
    "const LAB = 70, X0 = LAB, Y0 = LAB;\n",
    "let cur = 0, view = 'softmax', base = null;\n",
    "const $ = id => document.getElementById(id);\n",
    "const VIEWTXT = {\n",
    " raw: 'raw scores q_i \\u00b7 k_j (above the diagonal: computed for display, never used by the engine)',\n",
    " scaled: 'scaled scores: raw \\u00d7 1/\\u221ad_k = ' + D.scale + ' (d_k = ' + D.config.head_size + ')',\n",
    " masked: 'masked scores: what the softmax sees; \\u2212\\u221e above the diagonal (grey)',\n",
    " softmax: 'probabilities A: each row sums to 1, exactly 0 above the diagonal (grey)'};\n",
    "function ramp(stops, v) {\n",
    " if (!(v >= 0)) v = 0; if (v > 1) v = 1;\n",
    " const x = v * (stops.length - 1); let i = Math.floor(x); if (i >= stops.length - 1) i = stops.length - 2;\n",
    " const t = x - i, a = stops[i], b = stops[i + 1];\n",
    " return 'rgb(' + [0, 1, 2].map(k => Math.round(a[k] + t * (b[k] - a[k]))).join(',') + ')';\n",
    "}\n",
    "const VIRIDIS = [[68,1,84],[71,44,122],[59,81,139],[44,113,142],[33,144,141],[39,173,129],",
    "[92,200,99],[170,220,50],[253,231,37]];\n",
    "const DIVERGE = [[33,102,172],[146,197,222],[247,247,247],[244,165,130],[178,24,43]];\n",
    "function matrix() { return D.heads[cur][view]; }\n",
    "function maxabs(M) { let m = 0; for (const r of M) for (const x of r) if (x !== null && Math.abs(x) > m) m = Math.abs(x); return m; }\n",
    "function color(x, i, j, m) {\n",
    " if (j > i && (view === 'softmax' || view === 'masked')) return 'rgb(214,214,214)';\n",
    " if (view === 'softmax') return ramp(VIRIDIS, x);\n",
    " return ramp(DIVERGE, m > 0 ? 0.5 + 0.5 * x / m : 0.5);\n",
    "}\n",
    "function draw() {\n",
    " const M = matrix(), m = maxabs(M), side = T * CELL;\n",
    " cv.width = X0 + side + 4; cv.height = Y0 + side + 4;\n",
    " ctx.fillStyle = '#fff'; ctx.fillRect(0, 0, cv.width, cv.height);\n",
    " for (let i = 0; i < T; i++) for (let j = 0; j < T; j++) {\n",
    "  ctx.fillStyle = color(M[i][j], i, j, m); ctx.fillRect(X0 + j * CELL, Y0 + i * CELL, CELL, CELL);\n",
    " }\n",
    " ctx.fillStyle = '#000'; ctx.font = Math.min(12, CELL) + 'px monospace';\n",
    " ctx.textBaseline = 'middle'; ctx.textAlign = 'right';\n",
    " if (CELL >= 8) for (let i = 0; i < T; i++) {\n",
    "  const s = D.labels[i].slice(0, 8);\n",
    "  ctx.fillText(s, X0 - 4, Y0 + i * CELL + CELL / 2);\n",
    "  ctx.save(); ctx.translate(X0 + i * CELL + CELL / 2, Y0 - 4); ctx.rotate(-Math.PI / 2);\n",
    "  ctx.textAlign = 'left'; ctx.fillText(s, 0, 0); ctx.restore();\n",
    " }\n",
    " base = ctx.getImageData(0, 0, cv.width, cv.height);\n",
    " $('explain').textContent = VIEWTXT[view];\n",
    " document.querySelectorAll('#stats tbody tr').forEach((tr, k) => tr.className = k === cur ? 'sel' : '');\n",
    "}\n",
    "function fmt(x) { return x === null ? (view === 'masked' ? '-Infinity (masked)' : 'null') : String(x); }\n",
    "function showCell(i, j) {\n",
    " const h = D.heads[cur], x = matrix()[i][j];\n",
    " if (base) ctx.putImageData(base, 0, 0);\n",
    " ctx.strokeStyle = '#e00'; ctx.lineWidth = 2; ctx.strokeRect(X0 + j * CELL + 1, Y0 + i * CELL + 1, CELL - 2, CELL - 2);\n",
    " let pair = 'layer ' + h.layer + ' head ' + h.head + ' ' + view + ': query ' + i + ' \\u201c' + D.labels[i] +\n",
    "  '\\u201d \\u2192 key ' + j + ' \\u201c' + D.labels[j] + '\\u201d' + (j > i ? ' (future: masked)' : '');\n",
    " if (view === 'softmax') pair += '   row ' + i + ' sums to ' + matrix()[i].reduce((a, b) => a + b, 0).toFixed(7);\n",
    " $('info-pair').textContent = pair;\n",
    " const el = $('info-value');\n",
    " el.textContent = 'value ' + fmt(x);\n",
    " el.dataset.value = x === null ? '-inf' : String(x);\n",
    " el.dataset.layer = h.layer; el.dataset.head = h.head; el.dataset.i = i; el.dataset.j = j; el.dataset.view = view;\n",
    "}\n",
    "function fillHeads() {\n",
    " const l = +$('layer').value; $('head').innerHTML = '';\n",
    " D.heads.forEach(h => { if (h.layer === l) $('head').add(new Option(h.head, h.head)); });\n",
    "}\n",
    "function select(layer, head) {\n",
    " const k = D.heads.findIndex(h => h.layer === layer && h.head === head);\n",
    " if (k < 0) return false;\n",
    " cur = k; $('layer').value = layer; fillHeads(); $('head').value = head; draw(); return true;\n",
    "}\n",
    "function init() {\n",
    " $('meta').textContent = 'model ' + D.model + ' | ' + D.config.n_layer + ' layers, ' + D.config.n_head +\n",
    "  ' heads, d_model ' + D.config.d_model + ', d_k ' + D.config.head_size + ' | T = ' + T + ' tokens: ' + D.labels.join(' ');\n",
    " const c = D.checks;\n",
    " $('checks').textContent = 'engine check: probabilities re-run by the same kernel differ in ' + c.prob_mismatches +\n",
    "  ' entries, A\\u00b7V outputs in ' + c.out_mismatches + ', raw\\u00d7scale vs engine scores in ' + c.raw_mismatches + ' (0 = bit-identical)';\n",
    " const layers = [...new Set(D.heads.map(h => h.layer))];\n",
    " layers.forEach(l => $('layer').add(new Option(l, l)));\n",
    " const tb = document.querySelector('#stats tbody');\n",
    " D.heads.forEach((h, k) => {\n",
    "  const tr = tb.insertRow();\n",
    "  [h.layer, h.head, h.entropy.toFixed(4), h.entropy_uniform.toFixed(4), h.mean_distance.toFixed(3),\n",
    "   h.first_token_weight.toFixed(4)].forEach(v => tr.insertCell().textContent = v);\n",
    "  tr.onclick = () => select(h.layer, h.head);\n",
    " });\n",
    " $('layer').onchange = () => { fillHeads(); select(+$('layer').value, +$('head').value); };\n",
    " $('head').onchange = () => select(+$('layer').value, +$('head').value);\n",
    " document.querySelectorAll('input[name=view]').forEach(r => r.onchange = () => { view = r.value; draw(); });\n",
    " cv.onmousemove = e => {\n",
    "  const r = cv.getBoundingClientRect();\n",
    "  const j = Math.floor((e.clientX - r.left - X0) / CELL), i = Math.floor((e.clientY - r.top - Y0) / CELL);\n",
    "  if (i >= 0 && i < T && j >= 0 && j < T) showCell(i, j);\n",
    " };\n",
    " select(D.heads[0].layer, D.heads[0].head);\n",
    " const sel = /select=([0-9a-z,;]+)/.exec(location.hash);\n",
    " for (const part of sel ? sel[1].split(';') : []) {\n",
    "  const m = /^(\\d+),(\\d+),(\\d+),(\\d+)(?:,(\\w+))?$/.exec(part);\n",
    "  if (!m) { $('info-pair').textContent = 'bad selection: ' + part; continue; }\n",
    "  if (m[5] && D.heads[0][m[5]]) { view = m[5]; document.querySelector('input[value=' + view + ']').checked = true; }\n",
    "  const i = +m[3], j = +m[4];\n",
    "  if (!(select(+m[1], +m[2]) && i < T && j < T)) { $('info-pair').textContent = 'no such cell: ' + part; continue; }\n",
    "  showCell(i, j);\n",
    "  const probe = $('info-value').cloneNode(true);\n",
    "  probe.removeAttribute('id'); probe.className = 'probe'; probe.hidden = true;\n",
    "  $('probes').appendChild(probe);\n",
    " }\n",
    "}\n",
    "init();\n",
    "</script>\n</body></html>\n",
    NULL};

int attn_write_html(const char *path, const attn_export *x) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "andrea attention: cannot create '%s' for --html\n", path);
        return -1;
    }
    for (int i = 0; HTML_HEAD[i]; i++) fputs(HTML_HEAD[i], f);
    int rc = attn_write_json(f, x, ANDREA_VIEWS_ALL);
    for (int i = 0; HTML_TAIL[i]; i++) fputs(HTML_TAIL[i], f);
    if (fclose(f) != 0 || rc) {
        fprintf(stderr, "andrea attention: write error on '%s'\n", path);
        return -1;
    }
    fprintf(stderr, "attention: wrote '%s' (open it in a browser; works offline)\n", path);
    return 0;
}
