// bench_prompt_cache.mjs - time to first token over a 10-turn chat, with and without the
// prompt cache (cache_prompt), against `andrea serve` on loopback.
//
// usage: node bench_prompt_cache.mjs BASE_URL [TURNS=10] [TOKENS=24] [REPEATS=2] (the chat must fit the context)
// Each conversation: TURNS user messages; each answer streamed (TOKENS tokens at most,
// greedy), appended to the history, so each prompt starts with the previous one. The two
// modes alternate, REPEATS conversations each; prints the TTFT of every turn (median over
// the repeats, and the minimum: on a loaded machine the minimum is the cost, the median the
// cost plus the load) and the prompt lengths. First, the cost alone: a prompt of about 225
// tokens whose cache holds all but its last 3, 12 times each way, alternated. Bounded:
// TURNS x REPEATS x 2 + 48 requests, 60 s each.
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
        messages.push({role: "user", content: `Turn ${i + 1}?`});
        const r = await turn(messages, cache);
        messages.push({role: "assistant", content: r.text});
        out.push(r);
    }
    return out;
}

await turn([{role: "user", content: "warm up"}], false); // first-request costs out of the timings
const min = (xs) => Math.min(...xs);
{
    const text = "To be, or not to be, that is the question: whether tis nobler in the mind to suffer the slings " +
                 "and arrows of outrageous fortune, or to take arms against a sea of troubles and by opposing end them.";
    const once = async (prompt, cache) => {
        const t0 = performance.now();
        const r = await fetch(base + "/v1/completions", {method: "POST", headers: {"Content-Type": "application/json"},
            signal: AbortSignal.timeout(60000), body: JSON.stringify({prompt, max_tokens: 1, temperature: 0, cache_prompt: cache})});
        const j = await r.json();
        if (!r.ok) throw new Error(JSON.stringify(j));
        return {ms: performance.now() - t0, tokens: j.usage.prompt_tokens};
    };
    const t = {true: [], false: []};
    let n = 0;
    for (let k = 0; k < 12; k++) for (const cache of [true, false]) {
        await once(text, true); // a slot now holds the prompt
        const r = await once(text + " x" + k, cache);
        t[cache].push(r.ms);
        n = r.tokens;
    }
    const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
    console.log(`one prompt of ${n} tokens, all but the last few in a slot's cache: with the cache min ${min(t.true).toFixed(1)} ms, ` +
                `median ${med(t.true).toFixed(1)} ms; without min ${min(t.false).toFixed(1)} ms, median ${med(t.false).toFixed(1)} ms ` +
                `(${(min(t.false) / min(t.true)).toFixed(1)}x by the minimum)`);
}
const runs = {true: [], false: []};
for (let k = 0; k < REPEATS; k++) for (const cache of [false, true]) runs[cache].push(await conversation(cache));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
console.log("turn | prompt tokens | TTFT no cache: median / min (ms) | TTFT cache: median / min (ms) | ratio of the minima");
let sumNo = 0, sumYes = 0;
for (let i = 0; i < TURNS; i++) {
    const no = runs.false.map((c) => c[i].ttft), yes = runs.true.map((c) => c[i].ttft);
    sumNo += min(no); sumYes += min(yes);
    console.log(`${i + 1} | ${runs.true[0][i].prompt} | ${median(no).toFixed(1)} / ${min(no).toFixed(1)} | ` +
                `${median(yes).toFixed(1)} / ${min(yes).toFixed(1)} | ${(min(no) / min(yes)).toFixed(2)}`);
}
console.log(`sum of the minima | | ${sumNo.toFixed(1)} | ${sumYes.toFixed(1)} | ${(sumNo / sumYes).toFixed(2)}`);
const same = runs.true.every((c, k) => c.every((t, i) => t.text === runs.false[k][i].text));
console.log(`answers with the cache equal those without: ${same}`);
