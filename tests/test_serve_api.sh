#!/usr/bin/env bash
# test_serve_api.sh - what `andrea serve` does with the fields and routes clients send
# (docs/server.md), with curl and python3's json on loopback:
#   fields: every one honoured or refused by name (unknown fields, suffix, best_of), an
#     unknown model is 404 model_not_found, per-request top_k / min_p / repeat_penalty /
#     frequency and presence penalties change the text, echo returns the prompt and its
#     log-probabilities, and echo + logprobs with max_tokens 0 scores a text exactly as
#     `andrea eval` does (lm-eval-harness's loglikelihood);
#   chat inputs: content-part arrays, null assistant content with tool_calls, the tool
#     role, the name field;
#   routes: /v1/embeddings (float and base64, batches, unit length, the same text the same
#     vector), /tokenize and /detokenize (llama-server's shapes, a round trip),
#     /v1/models/{id} (404 for another), /props, /favicon.ico;
#   HTTP: a POST that is not JSON gets 415, --cors answers a preflight and adds its header
#     (none without it), keep-alive and pipelined GETs, a clean JSON 413 for a huge
#     Content-Length, a per-client connection limit (serve_raw.py).
# Skips (77) in a build without the server or without curl/python3.
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"; T="$ANDREA_TMP"
if "$A" serve --help 2>&1 | grep -q "has no server"; then echo "skip: built without libmicrohttpd" >&2; exit 77; fi
for t in curl python3; do command -v $t > /dev/null || { echo "skip: $t not found" >&2; exit 77; }; done
. "$(dirname "$0")/serve_lib.sh"
# py EXPR JSON: evaluates EXPR with r = the parsed JSON (status stripped), prints it
py() { python3 -c "import json,sys,base64,struct; r=json.loads(sys.argv[2].rsplit(' ',1)[0]); print($1)" "$1" "$2" 2>&1; }
# check NAME EXPR OUTPUT: EXPR (python, r = the JSON) is True
check() { local v; v=$(py "$2" "$3"); [ "$v" = True ] && pass "$1" || fail "$1: $2 is '$v' on ${3:0:300}"; }

serve_tiny_model "$T/m"
start_server "$T/serve.log" -m "$T/m/ckpt.bin" --name tiny --parallel 4 --max-tokens 64 --max-conns-per-client 8
B="http://127.0.0.1:$PORT"
C=/v1/completions

# ---- fields --------------------------------------------------------------------------
expect "unknown field" 400 '"param":"foo"' "$(req POST $C -d '{"prompt":"a","foo":1}')"
expect "unknown chat field" 400 '"param":"functions"' "$(req POST /v1/chat/completions -d '{"messages":[{"role":"user","content":"a"}],"functions":[]}')"
expect "unknown model" 404 '"code":"model_not_found"' "$(req POST $C -d '{"prompt":"a","model":"gpt-4"}')"
expect "the served model" 200 '"model":"tiny"' "$(req POST $C -d '{"prompt":"a","model":"tiny","max_tokens":2}')"
expect "suffix" 400 '"param":"suffix"' "$(req POST $C -d '{"prompt":"a","suffix":"b"}')"
expect "best_of > n" 400 '"param":"best_of"' "$(req POST $C -d '{"prompt":"a","best_of":2}')"
expect "best_of = n" 200 '"index":1' "$(req POST $C -d '{"prompt":"a","best_of":2,"n":2,"max_tokens":2}')"
expect "top_k a string" 400 '"param":"top_k"' "$(req POST $C -d '{"prompt":"a","top_k":"x"}')"
expect "min_p over 1" 400 '"param":"min_p"' "$(req POST $C -d '{"prompt":"a","min_p":2}')"
expect "frequency_penalty over 2" 400 '"param":"frequency_penalty"' "$(req POST $C -d '{"prompt":"a","frequency_penalty":3}')"
expect "max_tokens 0 without echo" 400 '"param":"max_tokens"' "$(req POST $C -d '{"prompt":"a","max_tokens":0}')"
expect "stop as an array" 200 '"finish_reason"' "$(req POST $C -d '{"prompt":"To be","stop":["o","e"],"max_tokens":20,"seed":1}')"
expect "max_completion_tokens" 200 '"completion_tokens":3' "$(req POST /v1/chat/completions -d '{"messages":[{"role":"user","content":"a"}],"max_completion_tokens":3,"logit_bias":{"256":-100,"10":-100,"62":-100}}')"
# each sampling field changes the text against the same seed without it
base='"prompt":"To be, or not","max_tokens":40,"seed":5,"temperature":1.2,"logit_bias":{"256":-100}'
plain=$(py 'r["choices"][0]["text"]' "$(req POST $C -d "{$base}")")
for f in '"top_k":1' '"min_p":0.5' '"repeat_penalty":3' '"frequency_penalty":2' '"presence_penalty":2'; do
    t=$(py 'r["choices"][0]["text"]' "$(req POST $C -d "{$base,$f}")")
    [ -n "$t" ] && [ "$t" != "$plain" ] && pass "$f changes the text: '${t:0:30}' vs '${plain:0:30}'" || fail "$f: '$t' = '$plain'"
done
# top_k 1 is greedy: the same text whatever the seed
g1=$(py 'r["choices"][0]["text"]' "$(req POST $C -d '{"prompt":"To be","max_tokens":20,"seed":1,"top_k":1}')")
g2=$(py 'r["choices"][0]["text"]' "$(req POST $C -d '{"prompt":"To be","max_tokens":20,"seed":2,"top_k":1}')")
g0=$(py 'r["choices"][0]["text"]' "$(req POST $C -d '{"prompt":"To be","max_tokens":20,"temperature":0}')")
[ "$g1" = "$g2" ] && [ "$g1" = "$g0" ] && pass "top_k 1 = greedy whatever the seed: '$g1'" || fail "top_k 1: '$g1' '$g2' '$g0'"
# frequency_penalty 2 at temperature 0: fewer repeats than greedy decoding without it
distinct() { py 'len(set(r["choices"][0]["logprobs"]["tokens"]))' "$(req POST $C -d "{\"prompt\":\"To be\",\"max_tokens\":30,\"temperature\":0,\"logprobs\":0$1}")"; }
d0=$(distinct ''); d2=$(distinct ',"frequency_penalty":2')
[ "$d2" -gt "$d0" ] && pass "frequency_penalty 2, greedy: $d2 distinct tokens of 30 (without: $d0)" || fail "frequency_penalty: $d2 vs $d0"
# echo: the prompt, then the completion; its first token has no log-probability
out=$(req POST $C -d '{"prompt":"To be","max_tokens":4,"echo":true,"logprobs":2,"seed":3}')
check "echo: the text starts with the prompt" 'r["choices"][0]["text"].startswith("To be") and len(r["choices"][0]["text"]) == 9' "$out"
check "echo logprobs: null first, then one per token, with 2 alternatives" \
    '(lp := r["choices"][0]["logprobs"]) and lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None and len(lp["tokens"]) == 9 and all(len(t) == 2 for t in lp["top_logprobs"][1:]) and "".join(lp["tokens"]) == r["choices"][0]["text"]' "$out"
# lm-eval-harness's loglikelihood: echo + logprobs, max_tokens 0; the mean of the tokens'
# negative log-probabilities equals `andrea eval` on the same text (one window of n - 1)
text='Whether tis nobler in the mind to suffer the slings and arr'
printf '%s' "$text" > "$T/eval.txt"
n=${#text}
ev=$("$A" eval -m "$T/m/ckpt.bin" -d "$T/eval.txt" --seq $((n - 1)) --batch 1 -t 1 | sed -n 's/.*| loss \([0-9.]*\) |.*/\1/p')
out=$(req POST $C -d "{\"prompt\":\"$text\",\"max_tokens\":0,\"echo\":true,\"logprobs\":1,\"temperature\":0}")
sv=$(py '(l := r["choices"][0]["logprobs"]["token_logprobs"][1:]) and "%.6f %d %d" % (-sum(l) / len(l), len(l), r["usage"]["completion_tokens"])' "$out")
[ -n "$ev" ] && [ "$(python3 -c "a=$ev; b=float('${sv%% *}'); print(abs(a-b) <= 2e-6 + 1e-5 * a)")" = True ] && [ "${sv#* }" = "$((n - 1)) 0" ] &&
    pass "echo loglikelihood = andrea eval: ${sv%% *} vs $ev over $((n - 1)) tokens" || fail "loglikelihood: server '$sv', eval '$ev'"

check "a batch of one prompt as token ids ([[ids]], as lm-eval-harness sends it)" \
    'r["choices"][0]["text"] == "To be" and r["choices"][0]["logprobs"]["token_logprobs"][0] is None' \
    "$(req POST $C -d '{"prompt":[[84,111,32,98,101]],"max_tokens":0,"echo":true,"logprobs":1}')"
expect "a batch of two prompts" 400 'one prompt per request' "$(req POST $C -d '{"prompt":["a","b"]}')"

# ---- chat inputs ---------------------------------------------------------------------
parts='{"messages":[{"role":"user","content":[{"type":"text","text":"To be"},{"type":"text","text":"or not"}]}],"max_tokens":2}'
str='{"messages":[{"role":"user","content":"To be or not"}],"max_tokens":2}'
check "content parts = their text joined by a space (same prompt tokens)" \
    "r['usage']['prompt_tokens'] == $(py 'r["usage"]["prompt_tokens"]' "$(req POST /v1/chat/completions -d "$str")")" "$(req POST /v1/chat/completions -d "$parts")"
expect "an image part" 400 'content\[0\]: only' "$(req POST /v1/chat/completions -d '{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}')"
tools='{"messages":[{"role":"user","name":"ann","content":"add 1 and 2"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"add","arguments":"{\"a\":1,\"b\":2}"}}]},{"role":"tool","tool_call_id":"c1","content":"3"}],"max_tokens":2}'
expect "null assistant content with tool_calls, the tool role, a name" 200 '"chat.completion"' "$(req POST /v1/chat/completions -d "$tools")"
expect "null user content" 400 'must not be null' "$(req POST /v1/chat/completions -d '{"messages":[{"role":"user","content":null}]}')"
expect "an unknown role" 400 'is not system, developer, user, assistant or tool' "$(req POST /v1/chat/completions -d '{"messages":[{"role":"robot","content":"a"}]}')"

# ---- the prompt cache -----------------------------------------------------------------
# a prompt that starts with the previous request's prompt and answer (a chat's next turn)
# reuses that slot's cache, and the answer (greedy) equals the one without the cache
cached() { curl -s "$B/metrics" | sed -n 's/^andrea_prompt_cached_tokens_total //p'; }
p1='To be, or not to be, that is the question: whether tis nobler in the mind'
a1=$(py 'r["choices"][0]["text"]' "$(req POST $C -d "{\"prompt\":\"$p1\",\"max_tokens\":10,\"temperature\":0,\"logit_bias\":{\"256\":-100,\"10\":-100,\"34\":-100,\"92\":-100}}")")
c0=$(cached)
p2=$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1] + sys.argv[2] + " to"))' "$p1" "$a1")
with=$(req POST $C -d "{\"prompt\":$p2,\"max_tokens\":10,\"temperature\":0,\"logprobs\":0}")
c1=$(cached)
without=$(req POST $C -d "{\"prompt\":$p2,\"max_tokens\":10,\"temperature\":0,\"logprobs\":0,\"cache_prompt\":false}")
c2=$(cached)
same=$(py "r['choices'][0]['logprobs']['token_logprobs']" "$with"); other=$(py "r['choices'][0]['logprobs']['token_logprobs']" "$without")
close=$(python3 -c "a=$same; b=$other; print(len(a) == len(b) == 10 and all(abs(x - y) <= 1e-4 for x, y in zip(a, b)))")
[ $((c1 - c0)) -gt 70 ] && [ "$c2" = "$c1" ] && [ "$close" = True ] &&
    [ "$(py 'r["choices"][0]["text"]' "$with")" = "$(py 'r["choices"][0]["text"]' "$without")" ] &&
    pass "prompt cache: the next turn reused $((c1 - c0)) cached tokens; its answer and logprobs equal those without the cache (1e-4)" ||
    fail "prompt cache: cached $c0 -> $c1 -> $c2, logprobs $same vs $other"

# ---- routes --------------------------------------------------------------------------
E=/v1/embeddings
out=$(req POST $E -d '{"input":"To be, or not to be","model":"tiny"}')
check "embeddings: one vector of the model's width (32), unit length" \
    'len(r["data"]) == 1 and len(r["data"][0]["embedding"]) == 32 and abs(sum(x * x for x in r["data"][0]["embedding"]) - 1) < 1e-5 and r["usage"]["prompt_tokens"] == 19' "$out"
one=$(py 'r["data"][0]["embedding"]' "$out")
out=$(req POST $E -d '{"input":["To be, or not to be","Whether tis nobler"],"encoding_format":"base64"}')
b64=$(py "max(abs(a - b) for a, b in zip(struct.unpack('<32f', base64.b64decode(r['data'][0]['embedding'])), $one)) < 1e-6 and len(r['data']) == 2 and r['data'][1]['index'] == 1" "$out")
[ "$b64" = True ] && pass "embeddings: a batch in base64 (float32 LE), the first equal to the float one" || fail "base64 embeddings: $b64"
out=$(req POST $E -d '{"input":[[84,111,32,98,101],"To be"]}')
check "embeddings: token ids and the same text give the same vector" \
    'max(abs(a - b) for a, b in zip(r["data"][0]["embedding"], r["data"][1]["embedding"])) < 1e-6' "$out"
check "embeddings: another text, another vector" "sum(a * b for a, b in zip(r['data'][0]['embedding'], $one)) < 0.9999" "$out"
expect "embeddings: empty input" 400 '"param":"input"' "$(req POST $E -d '{"input":""}')"
expect "embeddings: dimensions" 400 '"param":"dimensions"' "$(req POST $E -d '{"input":"a","dimensions":8}')"
expect "embeddings: too long" 400 'context_length_exceeded' "$(req POST $E -d "{\"input\":\"$(head -c 200 /dev/zero | tr '\0' x)\"}")"
out=$(req POST /tokenize -d '{"content":"To be"}')
check "tokenize: the byte ids" 'r == {"tokens": [84, 111, 32, 98, 101]}' "$out"
check "tokenize with_pieces" 'r["tokens"][0] == {"id": 84, "piece": "T"}' "$(req POST /tokenize -d '{"content":"To be","with_pieces":true}')"
check "detokenize: back to the text" 'r == {"content": "To be"}' "$(req POST /detokenize -d '{"tokens":[84,111,32,98,101]}')"
expect "detokenize: an id out of range" 400 '"param":"tokens"' "$(req POST /detokenize -d '{"tokens":[999]}')"
expect "models/{id}" 200 '"object":"model"' "$(req GET /v1/models/tiny)"
expect "models/{another id}" 404 '"code":"model_not_found"' "$(req GET /v1/models/gpt-4)"
check "props: context, slots, tokenizer, defaults" \
    'r["n_ctx"] == 96 and r["total_slots"] == 4 and r["tokenizer"] == "byte" and r["default_generation_settings"]["temperature"] == 0.8' "$(req GET /props)"
expect "favicon" 200 '<svg' "$(req GET /favicon.ico)"

# ---- HTTP ----------------------------------------------------------------------------
expect "a text/plain POST" 415 'unsupported_media_type' "$(curl -s -w ' %{http_code}' -H 'Content-Type: text/plain' "$B$C" -d '{"prompt":"a"}')"
expect "an untyped POST" 415 'unsupported_media_type' "$(curl -s -w ' %{http_code}' -H 'Content-Type:' "$B$C" -d '{"prompt":"a"}')"
hdr=$(curl -s -D - -o /dev/null -H 'Origin: https://a.example' "$B/health")
grep -qi '^Access-Control' <<< "$hdr" && fail "CORS headers without --cors: $hdr" || pass "no CORS headers without --cors"
for c in pipeline bigcl; do
    out=$(timeout 60 python3 "$(dirname "$0")/serve_raw.py" $c "$PORT") && pass "$(tr '\n' '|' <<< "$out")" || fail "$out"
done
out=$(timeout 60 python3 "$(dirname "$0")/serve_raw.py" perclient "$PORT" 20 8) && pass "$(tr '\n' '|' <<< "$out")" || fail "$out"
kill "$SPID"; wait "$SPID" 2> /dev/null
start_server "$T/serve_cors.log" -m "$T/m/ckpt.bin" --cors https://a.example
B="http://127.0.0.1:$PORT"
hdr=$(curl -s -D - -o /dev/null -X OPTIONS -H 'Origin: https://a.example' -H 'Access-Control-Request-Method: POST' "$B$C")
grep -q '^HTTP/1.1 204' <<< "$hdr" && grep -qi '^Access-Control-Allow-Origin: https://a.example' <<< "$hdr" &&
    grep -qi '^Access-Control-Allow-Headers: Authorization, Content-Type' <<< "$hdr" && pass "--cors: the preflight" || fail "preflight: $hdr"
hdr=$(curl -s -D - -o /dev/null -H 'Content-Type: application/json' "$B$C" -d '{"prompt":"a","max_tokens":1}')
grep -qi '^Access-Control-Allow-Origin: https://a.example' <<< "$hdr" && pass "--cors: the answer's header" || fail "cors header: $hdr"
kill "$SPID"; wait "$SPID" 2> /dev/null
if "$A" serve -m "$T/m/ckpt.bin" --host ::1 --port 0 -t 1 2> "$T/v6.log" & V6=$!; PIDS+=("$V6"); sleep 1.5; grep -q 'listening on http://\[::1\]:[0-9]*/' "$T/v6.log"; then
    pass "IPv6: the banner brackets the address: $(grep -o 'http://[^ ]*' "$T/v6.log")"
elif grep -q "cannot listen" "$T/v6.log"; then echo "note: no IPv6 loopback here; banner check skipped"
else fail "IPv6 banner: $(cat "$T/v6.log")"; fi
kill "$V6" 2> /dev/null; wait "$V6" 2> /dev/null
finish
