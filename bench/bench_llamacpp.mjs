// bench_llamacpp.mjs - llama.cpp's (node-llama-cpp's) batch-1 speed on a GGUF file, the
// llama.cpp half of bench_vs_llamacpp.sh.
//
// usage: node bench_llamacpp.mjs MODEL.gguf PROMPT_IDS N_GEN THREADS
//   PROMPT_IDS: the prompt's token ids ("15 2 99"), the ones andrea's run gets
// Prints one JSON line: prefill tok/s (the whole prompt in one evaluation, batch = the
// prompt, on a fresh sequence), generation tok/s (greedy; the forwards after the first
// generated token: (N_GEN - 1) / their time, as bench_vs_llamacpp.sh counts andrea's), and
// the CPU features llama.cpp's loaded CPU backend reports.
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const [modelPath, promptIds, genArg, threadsArg] = process.argv.slice(2);
const prompt = promptIds.trim().split(/\s+/).map(Number);
const nGen = Number(genArg), threads = Number(threadsArg);

const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath});
const context = await model.createContext({contextSize: prompt.length + nGen + 8,
                                           batchSize: prompt.length, threads});

// prefill: the prompt in one evaluation
let seq = context.getSequence();
let t0 = performance.now();
await seq.evaluateWithoutGeneratingNewTokens(prompt);
const prefillS = (performance.now() - t0) / 1000;
seq.dispose();

// generation: greedy, timed from the first generated token to the last
seq = context.getSequence();
let tFirst = 0, n = 0;
for await (const t of seq.evaluate(prompt, {temperature: 0})) {
    void t;
    if (++n === 1) tFirst = performance.now();
    if (n === nGen) break;
}
const genS = (performance.now() - tFirst) / 1000;
seq.dispose();

const features = String(llama.systemInfo ?? "").match(/CPU : ([^|]*(\|[^|=]*= 1 )*)/)?.[0] ?? "";
console.log(JSON.stringify({prefill_tok_s: prompt.length / prefillS, gen_tok_s: (n - 1) / genS,
                            prompt: prompt.length, generated: n, system_info: String(llama.systemInfo ?? ""),
                            features: features.trim()}));
await context.dispose();
await model.dispose();
