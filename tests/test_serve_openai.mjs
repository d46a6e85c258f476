// test_serve_openai.mjs - the official OpenAI client (npm `openai`) against `andrea serve`.
//
// usage: node test_serve_openai.mjs BASE_URL API_KEY [EVAL_TEXT EVAL_LOSS]
// Checks, failing the process when wrong:
//   - models.list names the served model;
//   - chat and completions, not streamed: text, finish_reason, usage as OpenAI defines them;
//   - the same requests streamed give the same text (same seed), chunk by chunk, with the
//     finish_reason on the last chunk and usage when stream_options.include_usage;
//   - logprobs: chat (logprobs + top_logprobs) and completions (logprobs: k), one entry per
//     generated token, the chosen token's logprob <= 0, alternatives sorted;
//   - stop strings, n choices, max_tokens;
//   - 16 concurrent requests (the batch) all complete with their own usage;
//   - errors come back as the client's typed errors (400 BadRequest, 401 Authentication,
//     404 NotFound for another model);
//   - models.retrieve, embeddings.create (the client's default base64 and float agree),
//     echo + logprobs with max_tokens 0 scoring EVAL_TEXT to EVAL_LOSS (`andrea eval`'s mean
//     loss on it: lm-eval-harness's loglikelihood), a json_schema answer that ajv (npm
//     `ajv`, a real JSON Schema validator) accepts, tools answered as tool_calls.
import OpenAI from "openai";

const [base, key, evalText, evalLoss] = process.argv.slice(2);
const client = new OpenAI({baseURL: base + "/v1", apiKey: key, maxRetries: 0, timeout: 30000});
const failures = [];
const check = (ok, what) => { if (!ok) failures.push(what); else console.log("ok: " + what); };

const models = await client.models.list();
const model = models.data[0].id;
check(models.data.length === 1 && typeof model === "string", `models.list: ${model}`);

const messages = [{role: "system", content: "A play."}, {role: "user", content: "To be, or not to be"}];
const chat = await client.chat.completions.create({model, messages, max_tokens: 12, seed: 7, temperature: 0.9});
const c0 = chat.choices[0];
check(chat.object === "chat.completion" && c0.message.role === "assistant" && typeof c0.message.content === "string",
      `chat: '${c0.message.content}' (${c0.finish_reason})`);
check(["stop", "length"].includes(c0.finish_reason), "chat finish_reason is stop or length");
check(chat.usage.completion_tokens <= 12 && chat.usage.total_tokens === chat.usage.prompt_tokens + chat.usage.completion_tokens,
      `chat usage ${JSON.stringify(chat.usage)}`);
check(!c0.message.content.includes("\n>"), "chat reply stops before the next user turn");

let streamed = "", chunks = 0, finish = null, usage = null, role = null;
const stream = await client.chat.completions.create({model, messages, max_tokens: 12, seed: 7, temperature: 0.9,
                                                     stream: true, stream_options: {include_usage: true}});
for await (const ch of stream) {
    if (ch.usage) usage = ch.usage;
    if (!ch.choices.length) continue;
    const d = ch.choices[0].delta;
    if (d.role) role = d.role;
    if (d.content) { streamed += d.content; chunks++; }
    if (ch.choices[0].finish_reason) finish = ch.choices[0].finish_reason;
}
check(streamed === c0.message.content, `chat streamed = not streamed (same seed): '${streamed}' in ${chunks} chunks`);
check(role === "assistant" && finish === c0.finish_reason, `stream: role ${role}, finish ${finish}`);
check(usage && usage.completion_tokens === chat.usage.completion_tokens && usage.prompt_tokens === chat.usage.prompt_tokens,
      `stream usage ${JSON.stringify(usage)}`);

const comp = await client.completions.create({model, prompt: "Whether tis nobler", max_tokens: 16, seed: 3, logprobs: 3});
const k0 = comp.choices[0], lp = k0.logprobs;
const nk = comp.usage.completion_tokens; // 16 unless the model ended its text (BOS)
check(comp.object === "text_completion" && (nk === 16 ? k0.finish_reason === "length" : k0.finish_reason === "stop"),
      `completion: '${k0.text}' (${k0.finish_reason}, ${comp.usage.completion_tokens} tokens)`);
check(lp.tokens.length === nk && lp.token_logprobs.every((x) => x <= 0) && lp.tokens.join("") === k0.text,
      "completion logprobs: one per token, tokens that spell the text, logprob <= 0");
check(lp.top_logprobs.every((o) => { const v = Object.values(o); return v.length >= 1 && v.length <= 3 && v.every((x, i) => i === 0 || v[i - 1] >= x); }),
      "completion top_logprobs: up to 3 alternatives, best first");
check(lp.text_offset[0] === 0 && lp.text_offset.every((o, i) => i === 0 || o >= lp.text_offset[i - 1]), "text_offset grows from 0");

let ctext = "", cfinish = null;
for await (const ch of await client.completions.create({model, prompt: "Whether tis nobler", max_tokens: 16, seed: 3, stream: true})) {
    ctext += ch.choices[0].text;
    if (ch.choices[0].finish_reason) cfinish = ch.choices[0].finish_reason;
}
check(ctext === k0.text && cfinish === k0.finish_reason, `completion streamed = not streamed: '${ctext}'`);

const clp = await client.chat.completions.create({model, messages, max_tokens: 6, seed: 1, logprobs: true, top_logprobs: 2});
const content = clp.choices[0].logprobs.content;
check(content.length === clp.usage.completion_tokens && content.every((t) => t.logprob <= 0 && t.top_logprobs.length === 2 && t.bytes.length >= 1),
      `chat logprobs: ${content.length} tokens, 2 alternatives each`);

const stopped = await client.completions.create({model, prompt: "To be", max_tokens: 60, seed: 5, stop: ["e", "o"]});
check(!/[eo]/.test(stopped.choices[0].text), `stop ["e","o"]: '${stopped.choices[0].text}' (${stopped.choices[0].finish_reason})`);
const two = await client.completions.create({model, prompt: "To be", max_tokens: 8, seed: 5, n: 2});
check(two.choices.length === 2 && two.choices[1].index === 1 && two.usage.completion_tokens <= 16 && two.usage.completion_tokens >= 2, `n=2: two choices, usage ${two.usage.completion_tokens}`);

// 16 at once: they share the batch; every one completes with its own usage
const many = await Promise.all(Array.from({length: 16}, (_, i) =>
    client.completions.create({model, prompt: "To be " + i, max_tokens: 10 + i, seed: i})));
check(many.every((r, i) => r.choices[0].finish_reason && r.usage.completion_tokens <= 10 + i && r.usage.completion_tokens >= 1),
      "16 concurrent completions: all finished with their own usage");

try {
    await client.chat.completions.create({model, messages: [{role: "pirate", content: "arr"}]});
    check(false, "bad role accepted");
} catch (e) {
    check(e instanceof OpenAI.BadRequestError && e.status === 400 && e.error && e.error.param === "messages",
          `bad role: ${e.status} ${e.message}`);
}
try {
    await new OpenAI({baseURL: base + "/v1", apiKey: "wrong", maxRetries: 0}).models.list();
    check(false, "wrong key accepted");
} catch (e) {
    check(e instanceof OpenAI.AuthenticationError && e.status === 401, `wrong key: ${e.status} ${e.message}`);
}
// models.retrieve, and another model's id
const one = await client.models.retrieve(model);
check(one.id === model && one.object === "model", `models.retrieve: ${one.id}`);
try {
    await client.models.retrieve("gpt-4");
    check(false, "models.retrieve of another model");
} catch (e) {
    check(e instanceof OpenAI.NotFoundError && e.status === 404, `models.retrieve('gpt-4'): ${e.status}`);
}
try {
    await client.completions.create({model: "gpt-4", prompt: "a"});
    check(false, "another model accepted");
} catch (e) {
    check(e instanceof OpenAI.NotFoundError && e.error && e.error.code === "model_not_found", `completions with model gpt-4: ${e.status}`);
}

// embeddings: the client asks base64 by default and decodes it
const emb = await client.embeddings.create({model, input: ["To be, or not to be", "Whether tis nobler"]});
const embF = await client.embeddings.create({model, input: "To be, or not to be", encoding_format: "float"});
const v0 = emb.data[0].embedding, norm = Math.sqrt(v0.reduce((a, x) => a + x * x, 0));
check(emb.data.length === 2 && v0.length === embF.data[0].embedding.length && Math.abs(norm - 1) < 1e-5 &&
      v0.every((x, i) => Math.abs(x - embF.data[0].embedding[i]) < 1e-6) && emb.usage.prompt_tokens > 0,
      `embeddings: 2 vectors of ${v0.length}, unit length, base64 = float`);

// lm-eval-harness's loglikelihood: echo + logprobs, nothing generated
if (evalText) {
    const sc = await client.completions.create({model, prompt: evalText, max_tokens: 0, echo: true, logprobs: 1, temperature: 0});
    const tl = sc.choices[0].logprobs.token_logprobs;
    const mean = -tl.slice(1).reduce((a, x) => a + x, 0) / (tl.length - 1);
    check(tl[0] === null && sc.choices[0].text === evalText && Math.abs(mean - Number(evalLoss)) <= 2e-6 + 1e-5 * Number(evalLoss),
          `echo loglikelihood ${mean.toFixed(6)} = andrea eval ${evalLoss} over ${tl.length - 1} tokens`);
}

// structured output: a JSON Schema answer that a real validator accepts
let Ajv = null;
try { Ajv = (await import("ajv")).default; } catch { console.log("note: npm ajv missing: the schema check is skipped"); }
if (Ajv) {
    // small enough that the longest answer it allows fits --max-tokens 64 of a byte model
    const schema = {type: "object", additionalProperties: false, required: ["name", "ok", "likes"],
                    properties: {name: {type: "string", minLength: 1, maxLength: 4}, ok: {type: "boolean"},
                                 likes: {type: "array", items: {anyOf: [{enum: ["tea", 7]}, {type: "null"}]}, minItems: 1, maxItems: 2}}};
    const validate = new (Ajv.default || Ajv)({strict: true}).compile(schema);
    for (const seed of [1, 2]) {
        const r = await client.chat.completions.create({model, messages: [{role: "user", content: "x"}], seed, max_tokens: 64,
            response_format: {type: "json_schema", json_schema: {name: "person", strict: true, schema}}});
        const text = r.choices[0].message.content;
        let ok = false;
        try { ok = validate(JSON.parse(text)); } catch { ok = false; }
        check(ok && r.choices[0].finish_reason === "stop", `json_schema (seed ${seed}), ajv says valid: ${text}`);
    }
}
const tools = [{type: "function", function: {name: "add", parameters: {type: "object", properties: {a: {type: "integer"}, b: {type: "integer"}}}}}];
const tc = await client.chat.completions.create({model, messages, max_tokens: 60, seed: 2, tools, tool_choice: "required"});
const call = tc.choices[0].message.tool_calls?.[0];
check(tc.choices[0].finish_reason === "tool_calls" && call && call.function.name === "add" &&
      Object.keys(JSON.parse(call.function.arguments)).join() === "a,b", `tools: ${call && call.function.arguments}`);
let scall = null, sfinish = null;
for await (const ch of await client.chat.completions.create({model, messages, max_tokens: 60, seed: 2, tools, tool_choice: "required", stream: true})) {
    const d = ch.choices[0]?.delta;
    if (d?.tool_calls) scall = d.tool_calls[0];
    if (ch.choices[0]?.finish_reason) sfinish = ch.choices[0].finish_reason;
}
check(sfinish === "tool_calls" && scall && scall.function.arguments === call.function.arguments,
      `tools streamed: the same call (${scall && scall.function.arguments}), finish ${sfinish}`);
try {
    await client.completions.create({model, prompt: "a", foo: 1});
    check(false, "an unknown field accepted");
} catch (e) {
    check(e instanceof OpenAI.BadRequestError && e.error && e.error.param === "foo", `unknown field: ${e.status} param ${e.error && e.error.param}`);
}
if (failures.length) {
    for (const f of failures) console.error("FAIL: " + f);
    process.exit(1);
}
