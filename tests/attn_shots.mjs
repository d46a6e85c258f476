// attn_shots.mjs - the screenshots of docs/attention.md (not a test): sections of the
// explorer page in headless Chromium (puppeteer-core), one PNG per element.
//
// usage: node attn_shots.mjs CHROMIUM OUT_DIR NAME=PAGE.html#HASH=SELECTOR[=DIVISOR[=HIDE]] ...
// Each NAME is written as OUT_DIR/NAME.png: the element SELECTOR of the page opened at
// HASH ('~' for the hash's own '='); with DIVISOR, the live view's slider is first dragged
// (mouse) to that divisor; HIDE: a selector of elements hidden first (smaller pictures).
import puppeteer from "puppeteer-core";

const [chromium, out, ...shots] = process.argv.slice(2);
const browser = await puppeteer.launch({executablePath: chromium, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]});
try {
    const page = await browser.newPage();
    await page.setViewport({width: 1000, height: 800});
    for (const shot of shots) {
        const [name, url, selector, div, hide] = shot.split("=");
        const [file, hash] = url.split("#");
        await page.goto("about:blank");
        await page.goto("file://" + file + "#" + hash.replaceAll("~", "="), {waitUntil: "load"});
        if (div) {
            const el = await page.$("#live-div");
            await el.scrollIntoView();
            const b = await el.boundingBox(), lo = 1, hi = Number(await page.$eval("#live-div", (e) => e.max));
            const x = Number(div) <= lo ? 1 : Number(div) >= hi ? b.width - 1 : 8 + (b.width - 16) * (Number(div) - lo) / (hi - lo);
            await el.click({offset: {x, y: b.height / 2}});
        }
        if (hide) await page.$$eval(hide, (els) => els.forEach((e) => { e.style.display = "none"; }));
        const el = await page.$(selector);
        await el.screenshot({path: `${out}/${name}.png`});
        console.log(`wrote ${out}/${name}.png`);
    }
} finally {
    await browser.close();
}
