// Runs inside headless Chromium (bundled by test/browser.test.ts): the same package, through navigator.gpu.

import {
  attention,
  backward,
  createCpuBackend,
  matmul,
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

main().then(
  (result) => {
    window.__result = result;
  },
  (error: Error) => {
    window.__result = { error: `${error.name}: ${error.message}` };
  },
);
