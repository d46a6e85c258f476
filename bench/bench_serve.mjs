// bench_serve.mjs - load test of `andrea serve` on loopback: for each concurrency level,
// that many clients stream completions at once (each ROUNDS requests one after another,
// TOKENS tokens each, BOS banned so every answer has exactly TOKENS tokens), and we report
// aggregate tokens/s, p50/p95 time to first token, p50/p95 request latency and p50/p95
// time between tokens, and whether anything was lost (every request must finish with
// "length" and TOKENS tokens, or be counted as an error with its status). The prompts share
// their first 20 tokens: with the prompt cache (CACHE=true) a slot's cache is reused.
//
// usage: node bench_serve.mjs BASE_URL "1 4 16 64" TOKENS ROUNDS [CACHE=true|false]
const [base, levelsArg, tokensArg, roundsArg, cacheArg] = process.argv.slice(2);
const levels = levelsArg.trim().split(/\s+/).map(Number), TOKENS = Number(tokensArg), ROUNDS = Number(roundsArg);
const CACHE = cacheArg !== "false";
const now = () => performance.now() / 1000;
const pct = (xs, p) => { if (!xs.length) return NaN; const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };

async function one(i) {
    const body = {prompt: "To be, or not to be " + i, max_tokens: TOKENS, temperature: 0.8, seed: i, stream: true,
                  logit_bias: {"256": -100}, stream_options: {include_usage: true}, cache_prompt: CACHE};
    const t0 = now();
    const r = await fetch(base + "/v1/completions", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
    if (!r.ok) return {error: r.status};
    const dec = new TextDecoder(), reader = r.body.getReader();
    let buf = "", first = null, last = null, gaps = [], finish = null, tokens = 0, done = false;
    for (;;) {
        const {value, done: end} = await reader.read();
        if (end) break;
        const t = now();
        buf += dec.decode(value, {stream: true});
        let at;
        while ((at = buf.indexOf("\n\n")) >= 0) {
            const ev = buf.slice(0, at).replace(/^data: /, "");
            buf = buf.slice(at + 2);
            if (ev === "[DONE]") { done = true; continue; }
            const j = JSON.parse(ev);
            if (j.error) return {error: j.error.code || j.error.type};
            if (j.usage) tokens = j.usage.completion_tokens;
            const c = j.choices[0];
            if (!c) continue;
            if (c.text) {
                if (first === null) first = t - t0;
                else gaps.push(t - last);
                last = t;
            }
            if (c.finish_reason) finish = c.finish_reason;
        }
    }
    if (!done || finish !== "length" || tokens !== TOKENS) return {error: `lost: done ${done} finish ${finish} tokens ${tokens}`};
    return {ttft: first, gaps, tokens, latency: now() - t0};
}

console.log(`prompt cache: ${CACHE ? "on" : "off"}`);
console.log(`| clients | requests | ok | errors | tokens/s (all) | TTFT p50 | TTFT p95 | latency p50 | latency p95 | per-token p50 | per-token p95 | wall |`);
console.log(`|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|`);
for (const c of levels) {
    const t0 = now();
    const results = await Promise.all(Array.from({length: c}, async (_, k) => {
        const out = [];
        for (let r = 0; r < ROUNDS; r++) out.push(await one(k * ROUNDS + r).catch((e) => ({error: String(e)})));
        return out;
    }));
    const wall = now() - t0, all = results.flat(), ok = all.filter((x) => !x.error), errs = all.filter((x) => x.error);
    const tokens = ok.reduce((a, x) => a + x.tokens, 0);
    const ttft = ok.map((x) => x.ttft), gaps = ok.flatMap((x) => x.gaps), lat = ok.map((x) => x.latency);
    const ms = (x) => (1000 * x).toFixed(1) + " ms";
    console.log(`| ${c} | ${all.length} | ${ok.length} | ${errs.length}${errs.length ? " (" + [...new Set(errs.map((e) => e.error))].join(", ") + ")" : ""} | ` +
                `${(tokens / wall).toFixed(1)} | ${ms(pct(ttft, 0.5))} | ${ms(pct(ttft, 0.95))} | ${ms(pct(lat, 0.5))} | ${ms(pct(lat, 0.95))} | ` +
                `${ms(pct(gaps, 0.5))} | ${ms(pct(gaps, 0.95))} | ${wall.toFixed(1)} s |`);
}
