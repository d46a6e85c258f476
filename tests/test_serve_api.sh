#!/usr/bin/env bash
# test_serve_api.sh - what `andrea serve` does with the fields and routes clients send
# (docs/server.md), with curl and python3's json on loopback:
#   fields: every one honoured or refused by name (unknown fields, suffix, best_of), an
#     unknown model is 404 model_not_found, per-request top_k / min_p / repeat_penalty /
#     frequency and presence penalties change the text, echo returns the prompt and its
#     log-probabilities, and echo + logprobs with max_tokens 0 scores a text exactly as
#     `andrea eval` does (lm-eval-harness's loglikelihood);
#   chat inputs: content-part arrays, null assistant content with tool_calls, the tool
#     role, the name field.
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
start_server "$T/serve.log" -m "$T/m/ckpt.bin" --name tiny --parallel 4 --max-tokens 64
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
finish
