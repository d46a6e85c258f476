#!/usr/bin/env bash
# test_serve_structured.sh - constrained decoding through `andrea serve` (docs/server.md):
# models trained for ONE step (their text is noise) with the byte, a trained BPE and the
# GPT-2 tokenizer must still answer
#   - response_format json_schema: JSON that parses and fits the schema (checked here by
#     schema_check.py, a small validator of the keywords the request uses),
#   - grammar (GBNF): a text of the grammar's language,
#   - tools with tool_choice "required": tool_calls whose arguments parse (also streamed),
#   - response_format json_object: JSON whenever finish_reason is "stop";
# and unsupported schema keywords or broken grammars are refused by name (400).
# Skips (77) without the server, curl or python3; the GPT-2 case without its vocabulary.
. "$(dirname "$0")/lib.sh"
A="$ANDREA_BIN"; T="$ANDREA_TMP"; HERE=$(cd "$(dirname "$0")" && pwd)
if "$A" serve --help 2>&1 | grep -q "has no server"; then echo "skip: built without libmicrohttpd" >&2; exit 77; fi
for t in curl python3; do command -v $t > /dev/null || { echo "skip: $t not found" >&2; exit 77; }; done
. "$HERE/serve_lib.sh"

printf 'To be, or not to be, that is the question:\nWhether tis nobler in the mind to suffer\n%.0s' $(seq 1 100) > "$T/text.txt"
"$A" tokenizer train -k bpe -i "$T/text.txt" -V 300 -o "$T/bpe.tok" -q || fail "bpe tokenizer"
TOKS=(byte "$T/bpe.tok")
G2="${ANDREA_DATA_DIR:-}/gpt2"
if [ -f "$G2/encoder.json" ] && "$A" tokenizer info "gpt2:$G2" > /dev/null 2>&1; then TOKS+=("gpt2:$G2")
else echo "note: no GPT-2 vocabulary ($G2): the gpt2 case is skipped"; fi

SCHEMA='{"type":"object","properties":{"name":{"type":"string","minLength":1,"maxLength":10},"age":{"type":"integer"},"score":{"type":"number"},"ok":{"type":"boolean"},"kind":{"enum":["cat","dog",3]},"tags":{"type":"array","items":{"type":"string","maxLength":4},"minItems":1,"maxItems":3},"note":{"anyOf":[{"type":"null"},{"const":"x"}]}},"required":["name","age"],"additionalProperties":false}'
TOOLS='[{"type":"function","function":{"name":"add","parameters":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}}},{"type":"function","function":{"name":"say","parameters":{"type":"object","properties":{"text":{"type":"string","maxLength":8}}}}}]'
i=0
for tok in "${TOKS[@]}"; do
    i=$((i + 1)); kind=${tok%%:*}; [ "$tok" = "$T/bpe.tok" ] && kind=bpe
    "$A" train --data "$T/text.txt" --tokenizer "$tok" --preset tiny --ctx 256 --seq 16 --batch 1 --max-steps 1 \
        --eval-every 0 --eval-batches 1 --sample-every 0 -q -t 2 -o "$T/m$i" > /dev/null 2>&1 || { fail "$kind: train"; continue; }
    start_server "$T/serve$i.log" -m "$T/m$i/ckpt.bin" --name m --max-tokens 200 --parallel 4
    B="http://127.0.0.1:$PORT"
    seeds="1 2 3"; [ $i -gt 1 ] && seeds=1 # the byte model three times, the others once
    for seed in $seeds; do
        out=$(req POST /v1/chat/completions -d "{\"messages\":[{\"role\":\"user\",\"content\":\"who?\"}],\"seed\":$seed,\"temperature\":1,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"p\",\"strict\":true,\"schema\":$SCHEMA}}}")
        if v=$(python3 "$HERE/schema_check.py" "$SCHEMA" "$out" 2>&1); then pass "$kind json_schema seed $seed: $v"
        else fail "$kind json_schema seed $seed: $v"; fi
    done
    out=$(req POST /v1/completions -d '{"prompt":"To be","seed":4,"grammar":"root ::= (\"yes\" | \"no\") \", \" [0-9]{2,3} \"!\""}')
    t=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1].rsplit(" ",1)[0]); c=r["choices"][0]; print(c["finish_reason"], c["text"])' "$out")
    [[ "$t" =~ ^stop\ (yes|no),\ [0-9]{2,3}!$ ]] && pass "$kind grammar: '$t'" || fail "$kind grammar: $t ($out)"
    out=$(req POST /v1/chat/completions -d "{\"messages\":[{\"role\":\"user\",\"content\":\"add\"}],\"seed\":5,\"tools\":$TOOLS,\"tool_choice\":\"required\"}")
    t=$(python3 -c '
import json,sys
r=json.loads(sys.argv[1].rsplit(" ",1)[0]); c=r["choices"][0]; call=c["message"]["tool_calls"][0]["function"]
a=json.loads(call["arguments"])
assert c["finish_reason"] == "tool_calls" and c["message"]["content"] is None and call["name"] in ("add","say")
assert (set(a) == {"a","b"} and all(type(v) is int for v in a.values())) if call["name"] == "add" else (set(a) == {"text"} and len(a["text"]) <= 8)
print(call["name"], call["arguments"])' "$out" 2>&1) && pass "$kind tools: $t" || fail "$kind tools: $t ($out)"
    out=$(req POST /v1/chat/completions -d '{"messages":[{"role":"user","content":"x"}],"seed":6,"max_tokens":100,"response_format":{"type":"json_object"}}')
    t=$(python3 -c '
import json,sys
r=json.loads(sys.argv[1].rsplit(" ",1)[0]); c=r["choices"][0]
if c["finish_reason"] == "stop": assert type(json.loads(c["message"]["content"])) is dict
print(c["finish_reason"], c["message"]["content"][:60])' "$out" 2>&1) && pass "$kind json_object: $t" || fail "$kind json_object: $t"
    kill "$SPID"; wait "$SPID" 2> /dev/null
done
start_server "$T/serve_err.log" -m "$T/m1/ckpt.bin" --name m
B="http://127.0.0.1:$PORT"
expect "a schema keyword the grammar cannot enforce" 400 "keyword 'pattern'" "$(req POST /v1/chat/completions -d '{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":{"type":"string","pattern":"a+"}}}}')"
expect "a broken grammar" 400 'line 1, column 12: a string is not closed' "$(req POST /v1/completions -d '{"prompt":"a","grammar":"root ::= \"a"}')"
expect "grammar and response_format together" 400 'one of' "$(req POST /v1/completions -d '{"prompt":"a","grammar":"root ::= \"a\"","response_format":{"type":"json_object"}}')"
out=$(curl -sN -m 30 -H 'Content-Type: application/json' "$B/v1/chat/completions" -d "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":true,\"seed\":1,\"tools\":$TOOLS,\"tool_choice\":\"required\"}")
grep -q '"tool_calls":\[{"index":0,"id":"call_' <<< "$out" && grep -q '"finish_reason":"tool_calls"' <<< "$out" && [ "$(tail -n 1 <<< "$out")" = "data: [DONE]" ] &&
    pass "tools streamed: one tool_calls delta, finish_reason tool_calls, [DONE]" || fail "tools streamed: $out"
expect "tool_choice naming no tool" 400 '"param":"tool_choice"' "$(req POST /v1/chat/completions -d "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":$TOOLS,\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"nope\"}}}")"
finish
