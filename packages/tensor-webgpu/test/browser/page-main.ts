// Runs inside headless Chromium (bundled by test/browser.test.ts): the same package, through navigator.gpu.

import {
  attention,
  backward,
  createCpuBackend,
  decodeAttention,
  decodeAttentionPacked,
  matmul,
  ropeAppendPacked,
  softmax,
  square,
  sum,
  tensor,
  useWebGpu,
} from "../../src/index.js";
import { textureAttentionLanes } from "../../src/kernels/attention/texture-staging.js";

declare global {
  interface Window {
    __result?: unknown;
  }
}

async function main(): Promise<unknown> {
  const gpu = await useWebGpu();
  const cpu = createCpuBackend();
  const n = 128; // 128³ multiply-adds: large enough for the texture matmul variant on software adapters
  const a = Float32Array.from({ length: n * n }, (_, i) => Math.sin(i));
  const b = Float32Array.from({ length: n * n }, (_, i) => Math.cos(i * 0.5));
  const run = async (backend: typeof cpu | typeof gpu) => {
    const x = tensor(a, [n, n], { backend, requiresGrad: true });
    const y = tensor(b, [n, n], { backend });
    const loss = sum(square(softmax(matmul(x, y))));
    backward(loss);
    return { loss: await loss.item(), grad: Array.from(await x.grad!.floats()) };
  };
  const onGpu = await run(gpu);
  const onCpu = await run(cpu);
  // Errors relative to the largest gradient, so a tiny loss cannot make the comparison vacuous.
  const scale = Math.max(...onCpu.grad.map(Math.abs));
  let worst = 0;
  for (let i = 0; i < onGpu.grad.length; i++)
    worst = Math.max(worst, Math.abs(onGpu.grad[i]! - onCpu.grad[i]!) / scale);
  const lossError = Math.abs(onGpu.loss - onCpu.loss) / Math.abs(onCpu.loss);
  return {
    adapter: gpu.ctx.info.adapter,
    features: gpu.ctx.info.features,
    worst,
    lossError,
    scale,
    attention: await attentionCheck(gpu, cpu),
    decode: await decodeCheck(gpu, cpu),
  };
}

/** Causal attention with the embedded models' heads (4/2 x 32), forward and backward, GPU against CPU. */
async function attentionCheck(
  gpu: Awaited<ReturnType<typeof useWebGpu>>,
  cpu: ReturnType<typeof createCpuBackend>,
) {
  const [batch, seqLen, numHeads, numKvHeads, headDim] = [2, 40, 4, 2, 32];
  const values = (length: number, seed: number) =>
    Float32Array.from({ length }, (_, i) => Math.sin(i * 0.37 + seed));
  const qData = values(batch * seqLen * numHeads * headDim, 1);
  const kData = values(batch * seqLen * numKvHeads * headDim, 2);
  const vData = values(batch * seqLen * numKvHeads * headDim, 3);
  const run = async (backend: typeof cpu | typeof gpu) => {
    const q = tensor(qData, [batch, seqLen, numHeads * headDim], { backend, requiresGrad: true });
    const k = tensor(kData, [batch, seqLen, numKvHeads * headDim], { backend, requiresGrad: true });
    const v = tensor(vData, [batch, seqLen, numKvHeads * headDim], { backend, requiresGrad: true });
    backward(sum(square(attention(q, k, v, { numHeads, numKvHeads }))));
    return [q, k, v].map(async (t) => Array.from(await t.grad!.floats()));
  };
  const onGpu = await Promise.all(await run(gpu));
  const onCpu = await Promise.all(await run(cpu));
  const scale = Math.max(...onCpu.flat().map(Math.abs));
  let worst = 0;
  for (const [i, grads] of onGpu.entries())
    for (const [j, g] of grads.entries()) worst = Math.max(worst, Math.abs(g - onCpu[i]![j]!) / scale);
  const dims = { batch, seqLen, kvLen: seqLen, numHeads, numKvHeads, headDim };
  return { worst, scale, textureKernels: textureAttentionLanes(gpu.ctx, dims) !== undefined };
}

/**
 * A decoding step from a packed q/k/v (rotation, cache append and attention; one kernel on WebGPU) with
 * the embedded models' heads, against the CPU backend's separate ops: the output and the appended keys.
 */
async function decodeCheck(
  gpu: Awaited<ReturnType<typeof useWebGpu>>,
  cpu: ReturnType<typeof createCpuBackend>,
) {
  const [batch, numHeads, numKvHeads, headDim, at, capacity] = [2, 4, 2, 32, 70, 80];
  const values = (length: number, seed: number) =>
    Float32Array.from({ length }, (_, i) => Math.sin(i * 0.29 + seed));
  const qkvData = values(batch * (numHeads + 2 * numKvHeads) * headDim, 4);
  const cacheData = values(batch * capacity * numKvHeads * headDim, 5);
  const run = async (backend: typeof cpu | typeof gpu, separate = false) => {
    const qkv = tensor(qkvData, [batch, 1, numHeads + 2 * numKvHeads, headDim], { backend });
    const shape = [batch, capacity, numKvHeads, headDim];
    const keys = tensor(cacheData, shape, { backend });
    const values = tensor(cacheData, shape, { backend });
    const positions = tensor(new Int32Array([at, at - 5]), [batch], { backend, dtype: "i32" });
    const kvStart = tensor(new Int32Array([0, 5]), [batch], { backend, dtype: "i32" });
    const cache = { keys, values, at };
    const options = { numHeads, numKvHeads, kvLen: at + 1, kvStart };
    const out = separate
      ? decodeAttention(ropeAppendPacked(qkv, positions, 1_000_000, cache, options), keys, values, options)
      : decodeAttentionPacked(qkv, positions, 1_000_000, cache, options);
    return [...(await out.floats()), ...(await keys.floats())];
  };
  const fused = await run(gpu);
  const separate = await run(gpu, true);
  const onCpu = await run(cpu);
  const scale = Math.max(...onCpu.map(Math.abs));
  const worstAgainst = (expected: number[]) =>
    Math.max(...fused.map((x, i) => Math.abs(x - expected[i]!) / scale));
  return {
    scale,
    fused: gpu.decodeAttentionRoped !== undefined,
    againstSeparate: worstAgainst(separate),
    againstCpu: worstAgainst(onCpu),
  };
}

main().then(
  (result) => {
    window.__result = result;
  },
  (error: Error) => {
    window.__result = { error: `${error.name}: ${error.message}` };
  },
);
