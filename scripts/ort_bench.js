#!/usr/bin/env node
// Time one ONNX model under ONNX Runtime (CPU execution provider), the
// baseline that scripts/bench-cpu compares onnxc against.
//
// usage: node scripts/ort_bench.js MODEL.onnx --input NAME=FILE.npy ...
//            [--repeat N] [--warmup W] [--threads T] [--output-dir DIR]
//
// Prints one line of JSON:
//   {"median_ms": .., "min_ms": .., "max_ms": .., "runs": N, "warmup": W,
//    "threads": T, "ort_version": "..", "outputs": {"NAME": [dims], ..},
//    "times_ms": [..]}
//
// The timing mirrors `onnxc run`: W untimed warm-up runs, then N timed runs
// of session.run() on the same input tensors; the median is the sorted
// times' element N/2 (as onnxc computes it).  A timed run includes the
// Node.js binding's overhead (a few tens of microseconds: wrapping the input
// buffers and copying the outputs into JS arrays), which only matters for
// the smallest models.
//
// onnxruntime-node is found, and .npy files are read and written, by
// scripts/ort_run.js's code: $ORT_NODE_DIR (the folder where `npm install
// onnxruntime-node` was run), Node's own module search, or the cache folder
// scripts/bench-cpu installs it into.

'use strict';

const fs = require('fs');
const path = require('path');

function die(msg) {
  process.stderr.write(`ort_bench: ${msg}\n`);
  process.exit(2);
}

// onnxruntime-node and .npy files as scripts/ort_run.js finds and reads them
const { loadOrt: findOrt, readNpy, writeNpy } = require('./ort_run.js');

function loadOrt() {
  return findOrt().ort;
}

function parseArgs(argv) {
  const a = { model: null, inputs: [], repeat: 20, warmup: 1, threads: 2, outputDir: null };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) die(`${arg} needs a value`);
      return argv[++i];
    };
    if (arg === '--input') {
      const v = next();
      const eq = v.indexOf('=');
      if (eq <= 0) die(`--input takes NAME=FILE, got ${v}`);
      a.inputs.push([v.slice(0, eq), v.slice(eq + 1)]);
    } else if (arg === '--repeat') a.repeat = parseInt(next(), 10);
    else if (arg === '--warmup') a.warmup = parseInt(next(), 10);
    else if (arg === '--threads') a.threads = parseInt(next(), 10);
    else if (arg === '--output-dir') a.outputDir = next();
    else if (arg === '-h' || arg === '--help') {
      process.stdout.write(fs.readFileSync(__filename, 'utf8').split('\n\'use strict')[0]
        .split('\n').slice(1).map(l => l.replace(/^\/\/ ?/, '')).join('\n') + '\n');
      process.exit(0);
    } else if (arg.startsWith('-')) die(`unknown option ${arg}`);
    else if (a.model) die(`more than one model given: ${a.model}, ${arg}`);
    else a.model = arg;
  }
  if (!a.model) die('no model given (usage: ort_bench.js MODEL.onnx --input NAME=FILE.npy ...)');
  if (!(a.repeat >= 1)) die('--repeat takes a positive count');
  if (!(a.warmup >= 0)) die('--warmup takes a count >= 0');
  if (!(a.threads >= 1)) die('--threads takes a positive count');
  return a;
}

// --- main ----------------------------------------------------------------

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ort = loadOrt();

  const session = await ort.InferenceSession.create(args.model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });

  const feeds = {};
  for (const [name, file] of args.inputs) {
    if (!session.inputNames.includes(name))
      die(`${args.model} has no input ${name} (inputs: ${session.inputNames.join(', ')})`);
    const t = readNpy(file);
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  const missing = session.inputNames.filter(n => !(n in feeds));
  if (missing.length) die(`no value given for input(s) ${missing.join(', ')}`);

  let out = null;
  for (let i = 0; i < args.warmup; i++) out = await session.run(feeds);
  const times = [];
  for (let i = 0; i < args.repeat; i++) {
    const t0 = process.hrtime.bigint();
    out = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }

  const outputs = {};
  for (const name of session.outputNames) {
    outputs[name] = out[name].dims;
    if (args.outputDir) {
      fs.mkdirSync(args.outputDir, { recursive: true });
      const file = path.join(args.outputDir, name.replace(/\//g, '_') + '.npy');
      try {
        writeNpy(file, out[name]);
      } catch (e) {
        die(`cannot write output ${name}: ${e.message}`);
      }
    }
  }
  const sorted = times.slice().sort((x, y) => x - y);
  const r = v => Math.round(v * 1000) / 1000;
  const result = {
    median_ms: r(sorted[Math.floor(sorted.length / 2)]),
    min_ms: r(sorted[0]),
    max_ms: r(sorted[sorted.length - 1]),
    runs: args.repeat,
    warmup: args.warmup,
    threads: args.threads,
    ort_version: ort.env.versions.node,
    outputs,
    times_ms: times.map(r),
  };
  await session.release();
  process.stdout.write(JSON.stringify(result) + '\n');
}

main().catch(e => die(e && e.stack ? e.stack : String(e)));
