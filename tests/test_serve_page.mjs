// test_serve_page.mjs - the chat page of `andrea serve` in headless Chromium (puppeteer-core).
//
// usage: node test_serve_page.mjs BASE_URL API_KEY CHROMIUM
// Types the API key and a message, sends it, and checks that the answer arrives as a
// stream (several deltas, each shown as it came), then opens the answer's attention view:
// the explorer of `andrea attention` in the side frame, picks the last layer and head,
// hovers one cell and checks that the value the lesson's view shows is the one in the
// page's own data for that cell. Also: the page loads nothing but the server.
import puppeteer from "puppeteer-core";

const [base, key, chromium] = process.argv.slice(2);
const failures = [];
const check = (ok, what) => { if (!ok) failures.push(what); else console.log("ok: " + what); };

const browser = await puppeteer.launch({executablePath: chromium, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]});
try {
    const page = await browser.newPage();
    const foreign = [];
    page.on("request", (r) => { if (!r.url().startsWith(base) && !r.url().startsWith("about:")) foreign.push(r.url()); });
    page.on("pageerror", (e) => failures.push("page error: " + e.message));
    await page.goto(base + "/", {waitUntil: "load"});
    await page.type("#key", key);
    await page.$eval("#key", (el) => el.dispatchEvent(new Event("change")));
    // record every text the answer shows, to see it grow
    await page.evaluate(() => {
        window.seen = [];
        new MutationObserver(() => {
            const a = document.querySelector(".assistant");
            if (a) window.seen.push(a.textContent);
        }).observe(document.getElementById("log"), {subtree: true, childList: true, characterData: true});
    });
    await page.$eval("#maxtok", (el) => { el.value = "24"; });
    await page.type("#msg", "To be, or not to be");
    await page.click("#send");
    await page.waitForSelector('.assistant[data-done="1"], .assistant.error', {timeout: 30000});
    const answer = await page.$eval(".assistant", (el) => ({text: el.textContent, chunks: Number(el.dataset.chunks), err: el.classList.contains("error")}));
    const seen = await page.evaluate(() => [...new Set(window.seen)].filter((s) => s.length));
    check(!answer.err && answer.text.length > 0, `answer: '${answer.text}'`);
    // (a tiny model writes its tokens faster than the network delivers them, so several
    // deltas often arrive in one read: the count of distinct texts shown is only reported)
    check(answer.chunks >= 2, `streamed: ${answer.chunks} SSE deltas appended (${seen.length} successive texts shown)`);
    check(await page.$eval(".meta", (el) => /finish: (stop|length)/.test(el.textContent)), "finish reason shown");

    await page.click(".attn-btn");
    const frameEl = await page.waitForSelector("#attn");
    let frame = null;
    for (let k = 0; k < 300 && !frame; k++) { // srcdoc: the frame document changes once loaded
        try { // the frame navigates (about:blank -> srcdoc) while we look
            const f = await frameEl.contentFrame();
            if (f && await f.$("#andrea-data") && await f.$eval("#layer", (el) => el.options.length > 0)) frame = f;
        } catch { /* navigated under us: look again */ }
        if (!frame) await new Promise((r) => setTimeout(r, 100));
    }
    check(frame !== null, "the attention explorer opened in the side frame");
    if (frame) {
        const layers = await frame.$$eval("#layer option", (os) => os.map((o) => o.value));
        const heads = await frame.$$eval("#head option", (os) => os.map((o) => o.value));
        check(layers.length >= 1 && heads.length >= 1, `layer picker ${layers.join(",")}, head picker ${heads.join(",")}`);
        await frame.select("#layer", layers[layers.length - 1]);
        const heads2 = await frame.$$eval("#head option", (os) => os.map((o) => o.value));
        await frame.select("#head", heads2[heads2.length - 1]);
        await frame.evaluate(() => { // the mouse over a cell low and right of the map
            const cv = document.getElementById("cv"), r = cv.getBoundingClientRect();
            cv.dispatchEvent(new MouseEvent("mousemove", {clientX: r.left + r.width * 0.75, clientY: r.top + r.height * 0.8}));
        });
        const cell = await frame.$eval("#info-value", (el) => ({...el.dataset}));
        const pair = await frame.$eval("#info-pair", (el) => el.textContent);
        const want = await frame.evaluate((c) => {
            const D = JSON.parse(document.getElementById("andrea-data").textContent);
            const h = D.heads.find((x) => x.layer === +c.layer && x.head === +c.head);
            const v = h && h[c.view] && h[c.view][+c.i] ? h[c.view][+c.i][+c.j] : undefined;
            return v === null ? "-inf" : String(v);
        }, cell);
        check(cell.layer === layers[layers.length - 1] && cell.head === heads2[heads2.length - 1] && cell.value !== undefined &&
              Number(cell.value) === Number(want),
              `one cell: ${pair} = ${cell.value} (the page's data: ${want})`);
    }
    check(foreign.length === 0, `no request leaves the server (${foreign.length} did: ${foreign.slice(0, 3).join(" ")})`);
} finally {
    await browser.close();
}
if (failures.length) {
    for (const f of failures) console.error("FAIL: " + f);
    process.exit(1);
}
