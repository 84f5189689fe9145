import { record } from "../autograd.js";
import { emptyTensor } from "../runtime.js";
import type { Tensor } from "../tensor.js";
import { inF32 } from "./precision.js";
import { backendOf, expectDType, ShapeError } from "./util.js";

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

/** log softmax(logits / T)[id] for each row: the log-probability of the chosen tokens (PPO's log π). */
export function tokenLogProbs(logits: Tensor, ids: Tensor, temperature = 1): Tensor {
  return inF32([logits], ([wide]) => tokenLogProbsF32(wide, ids, temperature), "f32");
}

function tokenLogProbsF32(logits: Tensor, ids: Tensor, temperature: number): Tensor {
  const backend = backendOf("tokenLogProbs", logits, ids);
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
  });
  const result = record("tokenLogProbs", out, [logits, ids], [logits, ids, lse], (g, [sl, si, sx]) => {
    const dLogits = emptyTensor(backend, logits.shape, "f32");
    backend.tokenLogProbsBackward({
      logits: sl!.buffer,
      ids: si!.buffer,
      lse: sx!.buffer,
      dOut: g.buffer,
      dLogits: dLogits.buffer,
      rows,
      vocab,
      temperature,
    });
    return [dLogits, null];
  });
  lse.dispose();
  return result;
}

/** Entropy of softmax(logits / T) per row. */
export function entropy(logits: Tensor, temperature = 1): Tensor {
  return inF32([logits], ([wide]) => entropyF32(wide, temperature), "f32");
}

function entropyF32(logits: Tensor, temperature: number): Tensor {
  const backend = backendOf("entropy", logits);
  const { rows, vocab, shape } = rowsAndVocab("entropy", logits);
  const out = emptyTensor(backend, shape, "f32");
  const lse = emptyTensor(backend, [rows], "f32");
  backend.entropy({ logits: logits.buffer, out: out.buffer, lse: lse.buffer, rows, vocab, temperature });
  const result = record("entropy", out, [logits], [logits, lse], (g, [sl, sx]) => {
    const dLogits = emptyTensor(backend, logits.shape, "f32");
    backend.entropyBackward({
      logits: sl!.buffer,
      lse: sx!.buffer,
      dOut: g.buffer,
      dLogits: dLogits.buffer,
      rows,
      vocab,
      temperature,
    });
    return [dLogits];
  });
  lse.dispose();
  return result;
}

/** Per-row cross-entropy against i32 `targets` (-100 = ignored: loss 0 and no gradient). */
export function crossEntropy(logits: Tensor, targets: Tensor): Tensor {
  return inF32([logits], ([wide]) => crossEntropyF32(wide, targets), "f32");
}

function crossEntropyF32(logits: Tensor, targets: Tensor): Tensor {
  const backend = backendOf("crossEntropy", logits, targets);
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
  });
  const result = record("crossEntropy", out, [logits, targets], [logits, targets, lse], (g, [sl, st, sx]) => {
    const dLogits = emptyTensor(backend, logits.shape, "f32");
    backend.crossEntropyBackward({
      logits: sl!.buffer,
      targets: st!.buffer,
      lse: sx!.buffer,
      dOut: g.buffer,
      dLogits: dLogits.buffer,
      rows,
      vocab,
    });
    return [dLogits, null];
  });
  lse.dispose();
  return result;
}
