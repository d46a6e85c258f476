// test_serve_page.mjs - the chat page of `andrea serve` in headless Chromium (puppeteer-core).
//
// usage: node test_serve_page.mjs BASE_URL API_KEY CHROMIUM
// Types the API key and a message, sends it, and checks that the answer arrives as a
// stream (several deltas, each shown as it came), then opens the answer's attention view:
// the explorer of `andrea attention` in the side frame, picks the last layer and head,
// hovers one cell and checks that the value the lesson's view shows is the one in the
// page's own data for that cell, its cells at a readable size (zoom 12 px). Then: while an
// answer streams Send is disabled and Stop shown, and Stop ends it; a chat longer than the
// model's context leaves out its earliest turns and says so (no error); the favicon is
// served. Also: the page loads nothing but the server.
import puppeteer from "puppeteer-core";

const [base, key, chromium] = process.argv.slice(2);
const failures = [];
const check = (ok, what) => { if (!ok) failures.push(what); else console.log("ok: " + what); };

const browser = await puppeteer.launch({executablePath: chromium, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]});
try {
    const page = await browser.newPage();
    const foreign = [];
    const own = (u) => u.startsWith(base) || u.startsWith("about:") || u.startsWith("blob:" + base);
    page.on("request", (r) => { if (!own(r.url())) foreign.push(r.url()); });
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
        const zoom = await frame.$eval("#zoom", (el) => Number(el.value));
        check(zoom === 12, `the explorer's cells at a readable size: ${zoom} px`);
        check(cell.layer === layers[layers.length - 1] && cell.head === heads2[heads2.length - 1] && cell.value !== undefined &&
              Number(cell.value) === Number(want),
              `one cell: ${pair} = ${cell.value} (the page's data: ${want})`);
    }
    // while an answer streams: Send disabled, Stop shown; Stop ends the answer (the server
    // holds each chat request 0.8 s here, through request interception)
    let holding = true;
    await page.setRequestInterception(true);
    page.on("request", (r) => {
        if (!holding) return;
        const go = () => { if (holding) r.continue().catch(() => {}); };
        if (r.url().endsWith("/v1/chat/completions")) setTimeout(go, 800);
        else go();
    });
    await page.type("#msg", "Whether tis nobler");
    await page.click("#send");
    await new Promise((r) => setTimeout(r, 200));
    const during = await page.evaluate(() => ({send: document.getElementById("send").disabled, stop: !document.getElementById("stop").hidden}));
    check(during.send && during.stop, `while streaming: Send disabled ${during.send}, Stop shown ${during.stop}`);
    await page.click("#stop");
    await page.waitForFunction(() => !document.getElementById("send").disabled, {timeout: 10000});
    const metas = await page.$$eval(".meta", (els) => els.map((e) => e.textContent));
    check(/finish: stopped/.test(metas[metas.length - 1]) && await page.$eval("#stop", (el) => el.hidden),
          `Stop ended the answer (${metas[metas.length - 1]}), Send is back`);
    await new Promise((r) => setTimeout(r, 900)); // the held request lets go (aborted)
    holding = false;
    await page.setRequestInterception(false);
    // more turns than the context (96 tokens) holds: the earliest are left out, said so
    for (let k = 0; k < 4; k++) {
        const n = await page.$$eval(".assistant", (els) => els.length);
        await page.type("#msg", "To be, or not to be, turn " + k);
        await page.click("#send");
        await page.waitForFunction((n) => { const a = document.querySelectorAll(".assistant"); return a.length > n && (a[n].dataset.done === "1" || a[n].classList.contains("error")); },
                                   {timeout: 30000}, n);
    }
    const notes = await page.$$eval(".note", (els) => els.map((e) => e.textContent));
    const errors = await page.$$eval(".assistant.error", (els) => els.map((e) => e.textContent));
    check(notes.length >= 1 && /left out/.test(notes[0]) && errors.length === 0,
          `a long chat: ${notes.length} note(s) '${notes[0]}', ${errors.length} errors`);
    const icon = await page.evaluate(async () => { const r = await fetch(document.querySelector("link[rel=icon]").href); return r.status + " " + r.headers.get("content-type"); });
    check(icon === "200 image/svg+xml", `favicon: ${icon}`);
    check(foreign.length === 0, `no request leaves the server (${foreign.length} did: ${foreign.slice(0, 3).join(" ")})`);
} finally {
    await browser.close();
}
if (failures.length) {
    for (const f of failures) console.error("FAIL: " + f);
    process.exit(1);
}
