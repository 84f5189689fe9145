import { record } from "../autograd.js";
import { emptyTensor } from "../runtime.js";
import type { Tensor } from "../tensor.js";
import { backendOf, expectDType, floatDtypeOf, ShapeError } from "./util.js";

function rowsAndVocab(
  op: string,
  logits: Tensor,
  ids?: Tensor,
): { rows: number; vocab: number; shape: number[] } {
  const vocab = logits.shape[logits.rank - 1]!;
  const shape = logits.shape.slice(0, -1);
  const rows = logits.size / Math.max(vocab, 1);
  if (ids) {
    expectDType(op, ids, "i32");
    if (ids.size !== rows)
      throw new ShapeError(`${op}: ${ids.describe()} does not match the rows of ${logits.describe()}`);
  }
  return { rows, vocab, shape };
}

/*
 * The losses read f32 or f16 logits in their kernels (computing in f32) and give f32 results; the
 * logits' gradient has the logits' dtype. An f16 head's logits, the largest tensor of a step, are
 * never copied to f32.
 */

/** log softmax(logits / T)[id] for each row: the log-probability of the chosen tokens (PPO's log π). */
export function tokenLogProbs(logits: Tensor, ids: Tensor, temperature = 1): Tensor {
  const backend = backendOf("tokenLogProbs", logits, ids);
  const dtype = floatDtypeOf("tokenLogProbs", logits);
  const { rows, vocab, shape } = rowsAndVocab("tokenLogProbs", logits, ids);
  const out = emptyTensor(backend, shape, "f32");
  const lse = emptyTensor(backend, [rows], "f32");
  backend.tokenLogProbs({
    logits: logits.buffer,
    ids: ids.buffer,
    out: out.buffer,
    lse: lse.buffer,
    rows,
    vocab,
    temperature,
    dtype,
  });
  const result = record("tokenLogProbs", out, [logits, ids], [logits, ids, lse], (g, [sl, si, sx]) => {
    const dLogits = emptyTensor(backend, logits.shape, dtype);
    backend.tokenLogProbsBackward({
      logits: sl!.buffer,
      ids: si!.buffer,
      lse: sx!.buffer,
      dOut: g.buffer,
      dLogits: dLogits.buffer,
      rows,
      vocab,
      temperature,
      dtype,
    });
    return [dLogits, null];
  });
  lse.dispose();
  return result;
}

/** Entropy of softmax(logits / T) per row. */
export function entropy(logits: Tensor, temperature = 1): Tensor {
  const backend = backendOf("entropy", logits);
  const dtype = floatDtypeOf("entropy", logits);
  const { rows, vocab, shape } = rowsAndVocab("entropy", logits);
  const out = emptyTensor(backend, shape, "f32");
  const lse = emptyTensor(backend, [rows], "f32");
  backend.entropy({
    logits: logits.buffer,
    out: out.buffer,
    lse: lse.buffer,
    rows,
    vocab,
    temperature,
    dtype,
  });
  const result = record("entropy", out, [logits], [logits, lse], (g, [sl, sx]) => {
    const dLogits = emptyTensor(backend, logits.shape, dtype);
    backend.entropyBackward({
      logits: sl!.buffer,
      lse: sx!.buffer,
      dOut: g.buffer,
      dLogits: dLogits.buffer,
      rows,
      vocab,
      temperature,
      dtype,
    });
    return [dLogits];
  });
  lse.dispose();
  return result;
}

/** Per-row cross-entropy against i32 `targets` (-100 = ignored: loss 0 and no gradient). */
export function crossEntropy(logits: Tensor, targets: Tensor): Tensor {
  const backend = backendOf("crossEntropy", logits, targets);
  const dtype = floatDtypeOf("crossEntropy", logits);
  const { rows, vocab, shape } = rowsAndVocab("crossEntropy", logits, targets);
  const out = emptyTensor(backend, shape, "f32");
  const lse = emptyTensor(backend, [rows], "f32");
  backend.crossEntropy({
    logits: logits.buffer,
    targets: targets.buffer,
    out: out.buffer,
    lse: lse.buffer,
    rows,
    vocab,
    dtype,
  });
  const result = record("crossEntropy", out, [logits, targets], [logits, targets, lse], (g, [sl, st, sx]) => {
    const dLogits = emptyTensor(backend, logits.shape, dtype);
    backend.crossEntropyBackward({
      logits: sl!.buffer,
      targets: st!.buffer,
      lse: sx!.buffer,
      dOut: g.buffer,
      dLogits: dLogits.buffer,
      rows,
      vocab,
      dtype,
    });
    return [dLogits, null];
  });
  lse.dispose();
  return result;
}
