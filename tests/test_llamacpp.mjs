// test_llamacpp.mjs - llama.cpp itself (through node-llama-cpp) runs andrea's GGUF export.
//
// usage: node test_llamacpp.mjs MODEL.gguf PROMPT_IDS ANDREA_LOGPROBS.jsonl TOL
//   PROMPT_IDS: the prompt as andrea's tokenizer encodes it ("15 2 99")
//   ANDREA_LOGPROBS.jsonl: `andrea generate --temp 0 --logprobs` of the same prompt
//   TOL: the largest |log p_llama - log p_andrea| allowed for each generated token
// Checks, failing the process when wrong:
//   1. llama.cpp tokenizes the prompt's text into andrea's ids (the tokenizer in the GGUF);
//   2. llama.cpp's own greedy continuation is andrea's token sequence;
//   3. fed andrea's tokens, llama.cpp's next-token distribution gives each generated token
//      a log-probability within TOL of andrea's, and ranks it first.
// Prints one JSON line of measurements.
import {readFileSync} from "node:fs";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const [modelPath, promptIds, logprobsPath, tolArg] = process.argv.slice(2);
const tol = Number(tolArg);
const prompt = promptIds.trim().split(/\s+/).map(Number);
const ref = readFileSync(logprobsPath, "utf8").trim().split("\n").map((l) => JSON.parse(l));
const want = ref.map((r) => r.id);
const failures = [];

const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath});
const promptText = model.detokenize(prompt);
const llamaIds = Array.from(model.tokenize(promptText));
if (JSON.stringify(llamaIds) !== JSON.stringify(prompt))
    failures.push(`prompt tokens differ: llama.cpp ${llamaIds.join(" ")} vs andrea ${prompt.join(" ")}`);

const context = await model.createContext({contextSize: 64, batchSize: 64, threads: 2});

// 2. free-running greedy continuation
let seq = context.getSequence();
const greedy = [];
for await (const t of seq.evaluate(prompt, {temperature: 0})) {
    greedy.push(t);
    if (greedy.length === want.length) break;
}
if (JSON.stringify(greedy) !== JSON.stringify(want))
    failures.push(`greedy continuation differs: llama.cpp ${greedy.join(" ")} vs andrea ${want.join(" ")}`);
seq.dispose();

// 3. teacher-forced next-token distributions along andrea's path (full softmax at T = 1)
seq = context.getSequence();
const all = prompt.concat(want.slice(0, -1));
const first = prompt.length - 1;
const sample = {temperature: 1, topK: 0, topP: 1, minP: 0};
const input = all.map((t, i) => (i >= first ? [t, {generateNext: {probabilities: true, options: sample}}] : t));
const out = await seq.controlledEvaluate(input);
let maxDiff = 0, worst = -1;
for (let k = 0; k < want.length; k++) {
    const probs = out[first + k]?.next?.probabilities;
    if (!probs) {
        failures.push(`no probabilities at step ${k}`);
        continue;
    }
    const top = probs.keys().next().value;
    if (top !== want[k]) failures.push(`step ${k}: llama.cpp ranks ${top} first, andrea chose ${want[k]}`);
    const lp = Math.log(probs.get(want[k]) ?? 0);
    const d = Math.abs(lp - ref[k].logprob);
    if (!(d <= maxDiff)) { maxDiff = d; worst = k; }
}
if (!(maxDiff <= tol)) failures.push(`max |dlogprob| ${maxDiff.toExponential(3)} at step ${worst} > ${tol}`);
console.log(JSON.stringify({model: modelPath, tokens: want.length, max_abs_dlogprob: maxDiff, greedy_equal: JSON.stringify(greedy) === JSON.stringify(want)}));
await context.dispose();
await model.dispose();
for (const f of failures) console.error("test_llamacpp: " + f);
process.exit(failures.length ? 1 : 0);
