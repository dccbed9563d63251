#!/usr/bin/env node
// Run an ONNX model once under ONNX Runtime (CPU execution provider) on .npy
// inputs and write its outputs as .npy: an independent reference for what
// onnxc computes and for the models `onnxc export` writes.
//
// usage: node scripts/ort_run.js MODEL.onnx [--input NAME=FILE.npy | --input FILE.npy]...
//            [--output-dir DIR] [--threads T] [--optimization LEVEL]
//        node scripts/ort_run.js --batch JOBS.json [--threads T]
//        node scripts/ort_run.js --check
//
// --optimization sets ONNX Runtime's graph optimization level: all (the
// default), extended, basic or disabled. At all it fuses, among others,
// QuantizeLinear -> DequantizeLinear pairs around Conv and MatMul into its
// integer kernels, which round differently from the float graph; disabled
// runs each node as the model says (a --batch job: "optimization").
//
// Inputs are given by graph input name, or without a name in graph-input
// order. With --output-dir, output K (in graph-output order) is written as
// DIR/output_K.npy. Prints one line of JSON:
//   {"ort_version": "..", "outputs": [{"name": .., "type": .., "dims": [..],
//    "file": ..}, ..]}
//
// .npy files: little-endian, C order; float32, float16, float64, int64,
// int32, int16, int8, uint64, uint32, uint16, uint8 and bool (ONNX Runtime's
// Node.js binding has no bfloat16).
//
// onnxruntime-node is found through $ORT_NODE_DIR (the folder where
// `npm install onnxruntime-node` was run), else Node's own module search,
// else the folder scripts/bench-cpu installs it into,
// ${XDG_CACHE_HOME:-~/.cache}/onnxc-bench/ort-$ORT_VERSION (default 1.30.0).
// --check only loads it and prints where it was found.
//
// --batch runs many models in one process (starting Node.js and ONNX
// Runtime costs about 0.1 s): JOBS.json is a list of {"model": PATH,
// "inputs": [[NAME or null, FILE.npy], ..], "output_dir": DIR}; each job
// prints one line of JSON, {"model", "outputs"} or {"model", "error"}, and
// a failed job does not stop the others.
//
// Exit status: 0 success, 1 a model failed to load or run, 2 bad usage or
// unreadable input, 3 onnxruntime-node cannot be loaded.

'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

// A model that fails to load or run (reported per job with --batch).
class JobError extends Error {}

function die(msg, status = 2) {
  process.stderr.write(`ort_run: ${msg}\n`);
  process.exit(status);
}

// --- finding onnxruntime-node --------------------------------------------

function ortCandidates() {
  const list = [];
  if (process.env.ORT_NODE_DIR)
    list.push(path.join(process.env.ORT_NODE_DIR, 'node_modules', 'onnxruntime-node'));
  list.push('onnxruntime-node');
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  const version = process.env.ORT_VERSION || '1.30.0';
  list.push(path.join(cache, 'onnxc-bench', `ort-${version}`, 'node_modules', 'onnxruntime-node'));
  return list;
}

function loadOrt() {
  const errors = [];
  for (const where of ortCandidates()) {
    try {
      return { ort: require(where), where };
    } catch (e) {
      errors.push(`${where}: ${e.message.split('\n')[0]}`);
    }
  }
  die(`cannot load onnxruntime-node (set ORT_NODE_DIR):\n  ${errors.join('\n  ')}`, 3);
}

// --- .npy reading and writing -------------------------------------------

// numpy descr <-> ORT tensor type and the typed array holding its elements
const NPY_TYPES = {
  '<f4': ['float32', Float32Array],
  '<f2': ['float16', Uint16Array],
  '<f8': ['float64', Float64Array],
  '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array],
  '<i2': ['int16', Int16Array],
  '|i1': ['int8', Int8Array],
  '<u8': ['uint64', BigUint64Array],
  '<u4': ['uint32', Uint32Array],
  '<u2': ['uint16', Uint16Array],
  '|u1': ['uint8', Uint8Array],
  '|b1': ['bool', Uint8Array],
};
const NPY_DESCR = Object.fromEntries(Object.entries(NPY_TYPES).map(([d, [t]]) => [t, d]));

function readNpy(file) {
  let buf;
  try {
    buf = fs.readFileSync(file);
  } catch (e) {
    die(`cannot read ${file}: ${e.message}`);
  }
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY')
    die(`${file}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hstart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hstart, hstart + hlen);
  const descr = /'descr':\s*'([^']*)'/.exec(header);
  const order = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !order || !shape) die(`${file}: unreadable .npy header: ${header}`);
  if (order[1] === 'True') die(`${file}: Fortran-order arrays are not supported`);
  const t = NPY_TYPES[descr[1]];
  if (!t) die(`${file}: unsupported dtype ${descr[1]}`);
  const dims = shape[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const [type, Ctor] = t;
  const start = hstart + hlen;
  if (buf.length - start < count * Ctor.BYTES_PER_ELEMENT) die(`${file}: truncated data`);
  // copy into a fresh, aligned buffer (the file's data offset need not be)
  const data = new Ctor(count);
  new Uint8Array(data.buffer).set(buf.subarray(start, start + count * Ctor.BYTES_PER_ELEMENT));
  const bools = type === 'bool' ? Uint8Array.from(data, v => (v !== 0 ? 1 : 0)) : null;
  return { type, dims, data: bools || data };
}

function writeNpy(file, tensor) {
  const descr = NPY_DESCR[tensor.type];
  if (!descr) throw new JobError(`cannot write an output of type ${tensor.type} as .npy`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  // pad so the data starts on a 64-byte boundary; the header ends with '\n'
  header += ' '.repeat((64 - ((10 + header.length + 1) % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  let d = tensor.data;
  if (tensor.type === 'bool') d = Uint8Array.from(d, v => (v ? 1 : 0));
  const body = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

// --- command line --------------------------------------------------------

function usage() {
  const text = fs.readFileSync(__filename, 'utf8').split("\n'use strict")[0];
  const lines = text.split('\n').slice(1).map(l => l.replace(/^\/\/ ?/, ''));
  process.stdout.write(lines.join('\n') + '\n');
  process.exit(0);
}

const OPT_LEVELS = ['all', 'extended', 'basic', 'disabled'];

function parseArgs(argv) {
  const a = { model: null, inputs: [], outputDir: null, threads: 1, check: false, batch: null,
              optimization: 'all' };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) die(`${arg} needs a value`);
      return argv[++i];
    };
    if (arg === '--input') {
      const v = next();
      const eq = v.indexOf('=');
      a.inputs.push(eq > 0 ? [v.slice(0, eq), v.slice(eq + 1)] : [null, v]);
    } else if (arg === '--output-dir') a.outputDir = next();
    else if (arg === '--threads') a.threads = parseInt(next(), 10);
    else if (arg === '--optimization') a.optimization = next();
    else if (arg === '--check') a.check = true;
    else if (arg === '--batch') a.batch = next();
    else if (arg === '-h' || arg === '--help') usage();
    else if (arg.startsWith('-')) die(`unknown option ${arg}`);
    else if (a.model) die(`more than one model given: ${a.model}, ${arg}`);
    else a.model = arg;
  }
  if (!a.model && !a.check && !a.batch)
    die('no model given (usage: ort_run.js MODEL.onnx --input NAME=FILE.npy ...)');
  if (!(a.threads >= 1)) die('--threads takes a positive count');
  if (!OPT_LEVELS.includes(a.optimization))
    die(`--optimization takes one of ${OPT_LEVELS.join(', ')}`);
  return a;
}

// --- main ----------------------------------------------------------------

function feedsFor(session, inputs, ort) {
  const feeds = {};
  inputs.forEach(([name, file], k) => {
    const n = name === null ? session.inputNames[k] : name;
    if (n === undefined)
      throw new JobError(`the model has ${session.inputNames.length} inputs, more were given`);
    if (!session.inputNames.includes(n))
      throw new JobError(`the model has no input ${n} (inputs: ${session.inputNames.join(', ')})`);
    const t = readNpy(file);
    feeds[n] = new ort.Tensor(t.type, t.data, t.dims);
  });
  const missing = session.inputNames.filter(n => !(n in feeds));
  if (missing.length) throw new JobError(`no value given for input(s) ${missing.join(', ')}`);
  return feeds;
}

// Runs one model; returns its outputs' descriptions or throws a JobError.
async function runJob(ort, job, threads) {
  let session, out;
  try {
    session = await ort.InferenceSession.create(job.model, {
      executionProviders: ['cpu'],
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      graphOptimizationLevel: job.optimization || 'all',
    });
  } catch (e) {
    throw new JobError(`ONNX Runtime cannot load ${job.model}: ${e.message}`);
  }
  try {
    out = await session.run(feedsFor(session, job.inputs, ort));
  } catch (e) {
    if (e instanceof JobError) throw e;
    throw new JobError(`ONNX Runtime failed to run ${job.model}: ${e.message}`);
  }
  if (job.outputDir) fs.mkdirSync(job.outputDir, { recursive: true });
  const outputs = session.outputNames.map((name, k) => {
    const t = out[name];
    const file = job.outputDir ? path.join(job.outputDir, `output_${k}.npy`) : null;
    if (file) writeNpy(file, t);
    return { name, type: t.type, dims: t.dims, file };
  });
  await session.release();
  return outputs;
}

// --batch FILE: a JSON list of {"model", "inputs": [[NAME or null, FILE], ..],
// "output_dir"}; one line of JSON per job, with "error" where it failed.
async function runBatch(ort, file, threads) {
  let jobs, failed = 0;
  try {
    jobs = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    die(`cannot read the job list ${file}: ${e.message}`);
  }
  for (const j of jobs) {
    const job = { model: j.model, inputs: j.inputs || [], outputDir: j.output_dir || null,
                  optimization: j.optimization };
    let line;
    try {
      line = { model: job.model, outputs: await runJob(ort, job, threads) };
    } catch (e) {
      if (!(e instanceof JobError)) throw e;
      line = { model: job.model, error: e.message };
      failed++;
    }
    process.stdout.write(JSON.stringify(line) + '\n');
  }
  return failed ? 1 : 0;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const { ort, where } = loadOrt();
  if (args.check) {
    process.stdout.write(JSON.stringify({ ort_version: ort.env.versions.node, where }) + '\n');
    return;
  }
  if (args.batch) {
    process.exitCode = await runBatch(ort, args.batch, args.threads);
    return;
  }
  let outputs;
  try {
    const job = { model: args.model, inputs: args.inputs, outputDir: args.outputDir,
                  optimization: args.optimization };
    outputs = await runJob(ort, job, args.threads);
  } catch (e) {
    if (e instanceof JobError) die(e.message, 1);
    throw e;
  }
  process.stdout.write(JSON.stringify({ ort_version: ort.env.versions.node, outputs }) + '\n');
}

// scripts/ort_bench.js reuses the loader and the .npy code
module.exports = { loadOrt, readNpy, writeNpy };

if (require.main === module)
  main().catch(e => die(e && e.stack ? e.stack : String(e), 1));
