"""schema_check.py SCHEMA RESPONSE - the chat answer in RESPONSE (curl output: JSON then
the HTTP status) is JSON that fits SCHEMA, for the keywords test_serve_structured.sh uses
(type, properties, required, additionalProperties, items, minItems, maxItems, minLength,
maxLength, enum, const, anyOf). Prints the answer; exits 1 with the reason otherwise."""
import json
import sys


def fits(v, s, path="$"):
    if "const" in s:
        assert v == s["const"], f"{path}: {v!r} is not {s['const']!r}"
    if "enum" in s:
        assert any(v == e and type(v) is type(e) for e in s["enum"]), f"{path}: {v!r} not in {s['enum']}"
    if "anyOf" in s:
        errs = []
        for sub in s["anyOf"]:
            try:
                return fits(v, sub, path)
            except AssertionError as e:
                errs.append(str(e))
        raise AssertionError(f"{path}: no anyOf branch fits: {errs}")
    t = s.get("type")
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
    if t == "integer":
        assert type(v) is int, f"{path}: {v!r} is not an integer"
    elif t == "number":
        assert type(v) in (int, float), f"{path}: {v!r} is not a number"
    elif t:
        assert type(v) is kinds[t], f"{path}: {v!r} is not {t}"
    if t == "object":
        props = s.get("properties", {})
        for k in s.get("required", []):
            assert k in v, f"{path}: lacks '{k}'"
        if s.get("additionalProperties") is False:
            assert set(v) <= set(props), f"{path}: extra keys {set(v) - set(props)}"
        for k, sub in props.items():
            if k in v:
                fits(v[k], sub, f"{path}.{k}")
    if t == "string":
        assert s.get("minLength", 0) <= len(v) <= s.get("maxLength", 1 << 30), f"{path}: length {len(v)}"
    if t == "array":
        assert s.get("minItems", 0) <= len(v) <= s.get("maxItems", 1 << 30), f"{path}: {len(v)} items"
        for i, x in enumerate(v):
            fits(x, s.get("items", {}), f"{path}[{i}]")


schema = json.loads(sys.argv[1])
r = json.loads(sys.argv[2].rsplit(" ", 1)[0])
c = r["choices"][0]
try:
    assert c["finish_reason"] == "stop", f"finish_reason {c['finish_reason']}"
    fits(json.loads(c["message"]["content"]), schema)
except (AssertionError, ValueError, KeyError) as e:
    print(f"{e}: {c['message']['content']!r}")
    sys.exit(1)
print(c["message"]["content"])
