import { emptyTensor, tensor } from "../runtime.js";
import type { Tensor } from "../tensor.js";
import { backendOf, ShapeError } from "./util.js";

export interface SampledRows {
  tokens: Int32Array;
  logProbs: Float32Array;
}

/** One token per row and its log-probability, still on the device: [rows] i32 and [rows] f32. */
export interface SampledRowsOnDevice {
  tokens: Tensor;
  logProbs: Tensor;
}

/**
 * Sample one token per row of `logits` ([rows, vocab], or any shape whose leading dimensions multiply to
 * the rows, e.g. [batch, 1, vocab]) with the uniform draws `uniforms` (one in [0, 1) per row), on the
 * logits' backend: only the token and its log-probability under softmax(logits / temperature) come back,
 * not the logits. Temperature 0 is greedy (argmax, first of ties). Not recorded for autograd.
 */
export async function sampleRows(
  logits: Tensor,
  uniforms: Float32Array,
  temperature: number,
): Promise<SampledRows> {
  const sampled = sampleRowsOnDevice(logits, uniforms, temperature);
  try {
    return await readSampledRows(sampled);
  } finally {
    sampled.tokens.dispose();
    sampled.logProbs.dispose();
  }
}

/** The tokens and log-probabilities of `sampleRowsOnDevice`, read back (the tensors stay alive). */
export async function readSampledRows({ tokens, logProbs }: SampledRowsOnDevice): Promise<SampledRows> {
  if (tokens.size === 0) return { tokens: new Int32Array(0), logProbs: new Float32Array(0) };
  // Both reads start before either is awaited: one wait for the GPU, not two.
  const [tokenData, logProbData] = await Promise.all([tokens.data(), logProbs.data()]);
  return { tokens: tokenData as Int32Array, logProbs: logProbData as Float32Array };
}

/**
 * `sampleRows` without the read: records the sampling and returns the tokens and log-probabilities as
 * tensors, so that the next decoding step can be recorded from the tokens before they reach the CPU.
 */
export function sampleRowsOnDevice(
  logits: Tensor,
  uniforms: Float32Array,
  temperature: number,
): SampledRowsOnDevice {
  const backend = backendOf("sampleRows", logits);
  if (logits.rank < 1 || logits.dtype === "i32")
    throw new TypeError(`sampleRows: expected float logits [rows, vocab], got ${logits.describe()}`);
  if (!(temperature >= 0) || !Number.isFinite(temperature))
    throw new RangeError(`sampleRows: temperature must be >= 0, got ${temperature}`);
  const vocab = logits.shape[logits.rank - 1]!;
  if (vocab === 0) throw new ShapeError(`sampleRows: ${logits.describe()} has no vocabulary`);
  const rows = logits.size / vocab;
  if (uniforms.length !== rows)
    throw new ShapeError(
      `sampleRows: ${uniforms.length} uniform draws for the ${rows} rows of ${logits.describe()}`,
    );
  const tokens = emptyTensor(backend, [rows], "i32");
  const logProbs = emptyTensor(backend, [rows], "f32");
  if (rows === 0) return { tokens, logProbs };
  let draws: Tensor | undefined;
  try {
    draws = tensor(uniforms, [rows], { backend });
    // f16 logits are read as halves by the kernel (the softmax is f32): no f32 copy of [rows, vocab].
    backend.sampleRows({
      logits: logits.buffer,
      uniforms: draws.buffer,
      tokens: tokens.buffer,
      logProbs: logProbs.buffer,
      rows,
      vocab,
      temperature,
      dtype: logits.dtype,
    });
  } catch (error) {
    tokens.dispose();
    logProbs.dispose();
    throw error;
  } finally {
    draws?.dispose();
  }
  return { tokens, logProbs };
}
