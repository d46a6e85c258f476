// bench_prompt_cache.mjs - time to first token over a 10-turn chat, with and without the
// prompt cache (cache_prompt), against `andrea serve` on loopback.
//
// usage: node bench_prompt_cache.mjs BASE_URL [TURNS=10] [TOKENS=24] [REPEATS=2]
// Each conversation: TURNS user messages; each answer streamed (TOKENS tokens at most,
// greedy), appended to the history, so each prompt starts with the previous one. The two
// modes alternate, REPEATS conversations each; prints the TTFT of every turn (median over
// the repeats) and the prompt lengths. Bounded: TURNS x REPEATS x 2 requests, 60 s each.
const [base, turnsArg, tokArg, repArg] = process.argv.slice(2);
const TURNS = Number(turnsArg || 10), TOKENS = Number(tokArg || 24), REPEATS = Number(repArg || 2);

async function turn(messages, cache) {
    const t0 = performance.now();
    const r = await fetch(base + "/v1/chat/completions", {
        method: "POST", headers: {"Content-Type": "application/json"}, signal: AbortSignal.timeout(60000),
        body: JSON.stringify({messages, max_tokens: TOKENS, temperature: 0, stream: true, cache_prompt: cache,
                              stream_options: {include_usage: true}}),
    });
    if (!r.ok) throw new Error(`turn of ${messages.length} messages: HTTP ${r.status}: ${await r.text()}`);
    let ttft = null, text = "", buf = "", usage = null;
    const dec = new TextDecoder();
    for await (const chunk of r.body) {
        buf += dec.decode(chunk, {stream: true});
        let at;
        while ((at = buf.indexOf("\n\n")) >= 0) {
            const line = buf.slice(0, at); buf = buf.slice(at + 2);
            if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
            const j = JSON.parse(line.slice(6));
            if (j.usage) usage = j.usage;
            const d = j.choices?.[0]?.delta?.content;
            if (d) { if (ttft === null) ttft = performance.now() - t0; text += d; }
        }
    }
    return {ttft: ttft ?? performance.now() - t0, text, prompt: usage?.prompt_tokens};
}

async function conversation(cache) {
    const messages = [{role: "system", content: "A play in many turns."}], out = [];
    for (let i = 0; i < TURNS; i++) {
        messages.push({role: "user", content: `Turn ${i + 1}: to be, or not to be, that is the question?`});
        const r = await turn(messages, cache);
        messages.push({role: "assistant", content: r.text});
        out.push(r);
    }
    return out;
}

await turn([{role: "user", content: "warm up"}], false); // first-request costs out of the timings
const runs = {true: [], false: []};
for (let k = 0; k < REPEATS; k++) for (const cache of [false, true]) runs[cache].push(await conversation(cache));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
console.log("turn | prompt tokens | TTFT no cache (ms) | TTFT cache (ms) | ratio");
let sumNo = 0, sumYes = 0;
for (let i = 0; i < TURNS; i++) {
    const no = median(runs.false.map((c) => c[i].ttft)), yes = median(runs.true.map((c) => c[i].ttft));
    sumNo += no; sumYes += yes;
    console.log(`${i + 1} | ${runs.true[0][i].prompt} | ${no.toFixed(1)} | ${yes.toFixed(1)} | ${(no / yes).toFixed(2)}`);
}
console.log(`mean | | ${(sumNo / TURNS).toFixed(1)} | ${(sumYes / TURNS).toFixed(1)} | ${(sumNo / sumYes).toFixed(2)}`);
const same = runs.true.every((c, k) => c.every((t, i) => t.text === runs.false[k][i].text));
console.log(`answers with the cache equal those without: ${same}`);
