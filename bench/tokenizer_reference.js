#!/usr/bin/env node
// tokenizer_reference.js - encode speed of the npm GPT-2 reference encoders on the
// same files bench_tokenizer measures. Needs tests/fixtures/node_modules (see
// tests/fixtures/gpt2_reference.js for the one-time npm install).
//   node bench/tokenizer_reference.js ../shared/data
"use strict";
const fs = require("fs");
const path = require("path");
const mods = path.join(__dirname, "..", "tests", "fixtures", "node_modules");
const { getEncoding } = require(path.join(mods, "js-tiktoken"));
const gptTok = require(path.join(mods, "gpt-tokenizer", "cjs", "encoding", "r50k_base.js"));
const dataDir = process.argv[2] || path.join(__dirname, "..", "..", "shared", "data");

const tiktoken = getEncoding("gpt2");
const encoders = [
  ["js-tiktoken", (s) => tiktoken.encode(s, [], [])],
  ["gpt-tokenizer", (s) => gptTok.encode(s, { disallowedSpecial: new Set() })],
];
console.log("== GPT-2 BPE encode speed (npm reference, node " + process.version + ") ==");
for (const name of ["tinyshakespeare.txt", "gutenberg_books.txt"]) {
  const buf = fs.readFileSync(path.join(dataDir, name));
  const text = buf.toString("utf8");
  const mb = buf.length / 1e6;
  for (const [enc, fn] of encoders) {
    let t0 = process.hrtime.bigint();
    let ids = fn(text);
    const cold = Number(process.hrtime.bigint() - t0) / 1e9;
    let warm = Infinity;
    for (let r = 0; r < 3; r++) {
      t0 = process.hrtime.bigint();
      ids = fn(text);
      warm = Math.min(warm, Number(process.hrtime.bigint() - t0) / 1e9);
    }
    console.log(`${name.padEnd(22)} ${mb.toFixed(2).padStart(8)} MB ${String(ids.length).padStart(8)} tokens  ` +
      `${enc.padEnd(13)} encode cold ${(mb / cold).toFixed(1).padStart(6)} MB/s  warm ${(mb / warm).toFixed(1).padStart(6)} MB/s`);
  }
}
