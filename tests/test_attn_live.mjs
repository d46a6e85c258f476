// test_attn_live.mjs - the explorer's live view in headless Chromium (puppeteer-core).
//
// usage: node test_attn_live.mjs PAGE.html EXPORT.json CHROMIUM
// Opens the page on layer 1, head 1, query T-1, drags the divisor slider with the mouse to
// three places (its left end, the sqrt(d_k) mark, its right end) and changes the
// temperature; after each move the max p, entropy and softmax gradient the page shows must
// equal those computed here, independently, from the JSON export's q and k at the divisor
// the slider reports. Then a pretended d_k = 4096: the slider runs to 128 with its mark at
// 64, the row is one-hot at 1 and spread at 64.
import puppeteer from "puppeteer-core";
import {readFileSync} from "node:fs";

const [pagePath, jsonPath, chromium] = process.argv.slice(2);
const D = JSON.parse(readFileSync(jsonPath, "utf8"));
const failures = [];
const check = (ok, what) => { if (!ok) failures.push(what); else console.log("ok: " + what); };
const close = (a, b) => Math.abs(a - b) <= 1e-9 * (1 + Math.abs(b));

/* the reference: softmax of q_i . k_j / (divisor * temperature), j <= i, from the JSON */
function expected(layer, head, i, div) {
    const h = D.heads.find((e) => e.layer === layer && e.head === head);
    const [q, k] = h.qkv, z = [];
    for (let j = 0; j <= i; j++) z.push(q[i].reduce((s, x, e) => s + x * k[j][e], 0) / div);
    const m = Math.max(...z), ex = z.map((x) => Math.exp(x - m)), sum = ex.reduce((a, b) => a + b);
    const p = ex.map((x) => x / sum);
    let H = 0, J = 0;
    p.forEach((a, x) => { H -= a > 0 ? a * Math.log(a) : 0; p.forEach((b, y) => { J += ((x === y ? a : 0) - a * b) ** 2; }); });
    return {maxp: Math.max(...p), H, J: Math.sqrt(J)};
}

const browser = await puppeteer.launch({executablePath: chromium, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]});
try {
    const page = await browser.newPage();
    await page.setViewport({width: 1400, height: 900});
    page.on("pageerror", (e) => failures.push("page error: " + e.message));
    const T = D.T, HS = D.config.head_size, r = Math.sqrt(HS);
    await page.goto("file://" + pagePath + "#live=1,1," + (T - 1), {waitUntil: "load"});
    const shown = () => page.evaluate(() => {
        const v = (id) => Number(document.getElementById(id).dataset.value), box = document.getElementById("sec-live").dataset;
        return {maxp: v("live-maxp"), H: v("live-entropy"), J: v("live-grad"), div: Number(box.div), temp: Number(box.temp),
                i: Number(box.i), layer: Number(box.layer), head: Number(box.head),
                min: Number(document.getElementById("live-div").min), max: Number(document.getElementById("live-div").max)};
    });
    let s = await shown();
    check(s.layer === 1 && s.head === 1 && s.i === T - 1, `live view on layer 1 head 1 query ${T - 1}`);
    check(close(s.div, r) && s.min === 1 && close(s.max, 2 * r), `slider from 1 to 2 sqrt(d_k) = ${2 * r}, starting at sqrt(d_k) = ${r}`);
    const slider = await page.$("#live-div");
    await slider.scrollIntoView();
    const box = await slider.boundingBox();
    // the thumb's centre runs from 8 px to width - 8 px (Chromium's 16-px thumb); a click
    // at x within the slider (scrolled into view by puppeteer) moves the thumb there
    const at = (v) => 8 + (box.width - 16) * (v - 1) / (2 * r - 1);
    const clickAt = (el, x, b) => el.click({offset: {x, y: b.height / 2}});
    for (const [name, v] of [["left end", 1], ["sqrt(d_k) mark", r], ["right end", 2 * r]]) {
        await clickAt(slider, v === 1 ? 1 : v === 2 * r ? box.width - 1 : at(v), box);
        s = await shown();
        const want = expected(1, 1, T - 1, s.div * s.temp);
        check(Math.abs(s.div - v) < 0.05 * r, `mouse at the ${name}: divisor ${s.div.toFixed(3)} (about ${v.toFixed(3)})`);
        check(close(s.maxp, want.maxp) && close(s.H, want.H) && close(s.J, want.J),
              `divisor ${s.div.toFixed(3)}: max p ${s.maxp} entropy ${s.H} gradient ${s.J} = the JSON's ${want.maxp} ${want.H} ${want.J}`);
    }
    const pAt = {};
    for (const v of [1, 2 * r]) { await clickAt(slider, v === 1 ? 1 : box.width - 1, box); pAt[v] = (await shown()).maxp; }
    check(pAt[1] >= pAt[2 * r], `a larger divisor never sharpens this row: max p ${pAt[1]} at 1, ${pAt[2 * r]} at ${2 * r}`);
    // the temperature multiplies the divisor
    const temp = await page.$("#live-temp"), tb = await temp.boundingBox();
    await clickAt(temp, tb.width - 1, tb);
    s = await shown();
    const wt = expected(1, 1, T - 1, s.div * s.temp);
    check(s.temp > 3.9 && close(s.maxp, wt.maxp) && close(s.H, wt.H), `temperature ${s.temp}: max p ${s.maxp}, entropy ${s.H} as computed`);
    // pretend d_k = 4096: random unit-variance vectors, the lesson's 64 (a fresh page:
    // temperature 1)
    await page.reload({waitUntil: "load"});
    await page.select("#live-src", "4096");
    await slider.dispose();
    const s4 = await page.$("#live-div");
    await s4.scrollIntoView();
    s = await shown();
    check(close(s.div, 64) && s.max === 128, `pretend d_k 4096: slider to ${s.max}, at sqrt(d_k) = ${s.div}`);
    const sdText = await page.$eval("#live-sd", (el) => el.textContent);
    const rms = Number(/ ([0-9.]+) /.exec(sdText.replace(/^[0-9]+ /, ""))?.[1]);
    check(rms > 64 * 0.5 && rms < 64 * 1.5, `pretend d_k 4096: the scores' size ${rms} is about sqrt(4096) = 64 (${sdText})`);
    const spread = s.maxp;
    await clickAt(s4, 1, box);
    s = await shown();
    check(s.div === 1 && s.maxp > 0.99 && s.J < 0.1 && spread < 0.6,
          `pretend d_k 4096: divided by 1 the row is one-hot (max p ${s.maxp}, gradient ${s.J}); by 64 max p ${spread}`);
    const hText = await page.$eval("#live-h", (el) => el.textContent);
    check(hText.includes("128") && hText.includes("11.3") && hText.includes("64"), `section (h): ${hText.slice(0, 90)}...`);
} finally {
    await browser.close();
}
if (failures.length) { console.log(failures.map((f) => "FAIL: " + f).join("\n")); process.exit(1); }
