#!/usr/bin/env node
// The VAD model of make_vad.py streamed under ONNX Runtime (CPU), as
// vad.c streams the compiled model: chunk after chunk of DATA/audio.f32, the
// state fed back, at 16 kHz and then at 8 kHz from a zero state. Writes
// OUTDIR/expected_<rate>.f32 in make_vad.py's layout (per chunk the
// probability, then the final state) and OUTDIR/audio.f32, so that
// `vad OUTDIR WEIGHTS` checks onnxc against ONNX Runtime instead of torch.
//
// usage: node examples/vad/vad_ort.js DATA OUTDIR
// onnxruntime-node is found as scripts/ort_run.js finds it (exit 3 if not).
'use strict';
const fs = require('fs');
const path = require('path');
const { loadOrt } = require('../../scripts/ort_run.js');

const CHUNK = 512;

async function main() {
  const [data, outdir] = process.argv.slice(2);
  if (!outdir) {
    process.stderr.write('usage: vad_ort.js DATA OUTDIR\n');
    process.exit(2);
  }
  const { ort } = loadOrt();
  const session = await ort.InferenceSession.create(path.join(data, 'vad.onnx'));
  const raw = fs.readFileSync(path.join(data, 'audio.f32'));
  const audio = new Float32Array(raw.buffer, raw.byteOffset, raw.length / 4);
  const chunks = audio.length / CHUNK;
  fs.mkdirSync(outdir, { recursive: true });
  fs.writeFileSync(path.join(outdir, 'audio.f32'), raw);
  for (const rate of [16000, 8000]) {
    let state = new ort.Tensor('float32', new Float32Array(2 * 1 * 32), [2, 1, 32]);
    const probs = [];
    for (let c = 0; c < chunks; c++) {
      const r = await session.run({
        input: new ort.Tensor('float32', audio.slice(c * CHUNK, (c + 1) * CHUNK), [1, CHUNK]),
        state,
        sr: new ort.Tensor('int64', BigInt64Array.from([BigInt(rate)]), []),
      });
      probs.push(r.output.data[0]);
      state = r.stateN;
    }
    const out = new Float32Array(probs.length + state.data.length);
    out.set(probs);
    out.set(state.data, probs.length);
    fs.writeFileSync(path.join(outdir, `expected_${rate}.f32`), Buffer.from(out.buffer));
  }
}

main().catch((e) => {
  process.stderr.write(`vad_ort: ${e.message}\n`);
  process.exit(1);
});
