/**
 * Matmul throughput: square products, transformer-shaped ones, and the linear layers of a Qwen2.5-0.5B-like
 * model for 512 tokens and for the model benchmark's 2048-token training step (forward x · Wᵀ, backward
 * dX = dY · W and dW = dYᵀ · X, the LM head). "auto" is what `matmul`
 * picks on this adapter; selected shapes are repeated with every variant forced, for comparison.
 * Texture-variant timings include repacking the operands into textures. flops = 2·m·n·k·batch.
 * Shapes marked f16 are measured again with f16 operands and result (f32 accumulation), next to the f32
 * row, when the adapter has shader-f16.
 */
import type { GpuContext } from "../../src/gpu/context.js";
import { cast } from "../../src/kernels/layout.js";
import {
  type MatmulArgs,
  type MatmulVariant,
  matmul,
  matmulVariant,
  subgroupMatrixShape,
  textureVariantAvailable,
} from "../../src/kernels/matmul.js";
import { type BlockedTile, blockedTileBytes } from "../../src/kernels/matmul-gpu.js";
import type { BenchCase } from "../case.js";

interface Shape {
  label: string;
  batch?: number;
  m: number;
  n: number;
  k: number;
  transA?: boolean;
  transB?: boolean;
  /** Also run every variant forced. */
  compare?: boolean;
  /** Also run with f16 operands. */
  f16?: boolean;
}

const HIDDEN = 896;
const INTERMEDIATE = 4864;
const TOKENS = 512;
/** Tokens of the model benchmark's training step (4 sequences of 512). */
const STEP_TOKENS = 2048;

const shapes: Shape[] = [
  { label: "256^3", m: 256, n: 256, k: 256 },
  { label: "512^3", m: 512, n: 512, k: 512 },
  { label: "1024^3", m: 1024, n: 1024, k: 1024, compare: true, f16: true },
  { label: "2048^3", m: 2048, n: 2048, k: 2048, f16: true },
  { label: "4096^3", m: 4096, n: 4096, k: 4096, compare: true, f16: true },
  { label: "[4096x128]·[128x384]", m: 4096, n: 384, k: 128, compare: true },
  { label: "[4096x384]·[384x128]", m: 4096, n: 128, k: 384, compare: true },
  { label: "qwen x·Wqᵀ [512x896]·[896x896]ᵀ", m: TOKENS, n: HIDDEN, k: HIDDEN, transB: true, f16: true },
  {
    label: "qwen x·Wupᵀ [512x896]·[4864x896]ᵀ",
    m: TOKENS,
    n: INTERMEDIATE,
    k: HIDDEN,
    transB: true,
    compare: true,
    f16: true,
  },
  { label: "qwen h·Wdownᵀ [512x4864]·[896x4864]ᵀ", m: TOKENS, n: HIDDEN, k: INTERMEDIATE, transB: true },
  { label: "qwen dX=dY·Wup [512x4864]·[4864x896]", m: TOKENS, n: HIDDEN, k: INTERMEDIATE },
  { label: "qwen dWup=dYᵀ·X [4864x512]ᵀ·[512x896]", m: INTERMEDIATE, n: HIDDEN, k: TOKENS, transA: true },
  { label: "qwen dWq=dYᵀ·X [896x512]ᵀ·[512x896]", m: HIDDEN, n: HIDDEN, k: TOKENS, transA: true, f16: true },
  // The model benchmark's training step, 4 x 512 tokens: forward, dX and dW of the MLP, and the LM head.
  {
    label: "train x·Wupᵀ [2048x896]·[4864x896]ᵀ",
    m: STEP_TOKENS,
    n: INTERMEDIATE,
    k: HIDDEN,
    transB: true,
    compare: true,
  },
  {
    label: "train dX=dY·Wup [2048x4864]·[4864x896]",
    m: STEP_TOKENS,
    n: HIDDEN,
    k: INTERMEDIATE,
    compare: true,
  },
  {
    label: "train dWup=dYᵀ·X [4864x2048]ᵀ·[2048x896]",
    m: INTERMEDIATE,
    n: HIDDEN,
    k: STEP_TOKENS,
    transA: true,
    compare: true,
  },
  { label: "train lm head [2048x896]·[151936x896]ᵀ", m: STEP_TOKENS, n: 151936, k: HIDDEN, transB: true },
  // Decoding: one new token for each of 16 sequences, and for a single sequence.
  {
    label: "qwen decode x16 [16x896]·[4864x896]ᵀ",
    m: 16,
    n: INTERMEDIATE,
    k: HIDDEN,
    transB: true,
    compare: true,
  },
  {
    label: "qwen decode x1 [1x896]·[4864x896]ᵀ",
    m: 1,
    n: INTERMEDIATE,
    k: HIDDEN,
    transB: true,
    compare: true,
  },
  {
    label: "qwen lm head x16 [16x896]·[151936x896]ᵀ",
    m: 16,
    n: 151936,
    k: HIDDEN,
    transB: true,
    compare: true,
  },
];

function filled(ctx: GpuContext, n: number, seed: number, dtype: "f32" | "f16"): GPUBuffer {
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = Math.sin(i * 0.37 + seed) * 0.5;
  const wide = ctx.upload(data);
  if (dtype === "f32") return wide;
  const half = ctx.pool.acquire(n * 2);
  cast(ctx, { x: wide, out: half, n, from: "f32", to: "f16" });
  ctx.pool.release(wide);
  return half;
}

/** A variant to force; "blocked RxC/D" is "blocked" with an R x C output tile and a k-step of D. */
type BenchVariant = MatmulVariant | `blocked ${number}x${number}/${number}`;

/** The tile of a "blocked RxC/D" variant. */
function blockedTileOf(variant: BenchVariant | undefined): BlockedTile | undefined {
  const match = variant?.match(/^blocked (\d+)x(\d+)\/(\d+)$/);
  if (!match) return undefined;
  return { rows: Number(match[1]), cols: Number(match[2]), depth: Number(match[3]) } as BlockedTile;
}

function skipReason(ctx: GpuContext, shape: Shape, variant: BenchVariant | undefined, dtype: "f32" | "f16") {
  if (variant === "matvec" && (shape.m > 16 || !shape.transB || shape.transA))
    return "x · Wᵀ of <= 16 rows only";
  if (variant === "texture" && !textureVariantAvailable(ctx))
    return "for software adapters' narrow subgroups";
  if (dtype === "f16" && !ctx.info.features.shaderF16) return "no shader-f16";
  const tile = blockedTileOf(variant);
  if (tile && blockedTileBytes(tile) > ctx.device.limits.maxComputeWorkgroupStorageSize)
    return "needs more workgroup memory than this device has";
  if (variant === "subgroup-matrix") {
    if (dtype !== "f16") return "f16 operands only";
    if (!subgroupMatrixShape(ctx)) return "no f16 subgroup matrices on this adapter";
  }
  return undefined;
}

function caseFor(shape: Shape, variant?: BenchVariant, dtype: "f32" | "f16" = "f32"): BenchCase {
  const batch = shape.batch ?? 1;
  return {
    family: "matmul",
    name: `${shape.label} [${variant ?? "auto"}${dtype === "f16" ? " f16" : ""}]`,
    flops: 2 * batch * shape.m * shape.n * shape.k,
    skip: (ctx) => skipReason(ctx, shape, variant, dtype),
    setup(ctx) {
      const a = filled(ctx, batch * shape.m * shape.k, 1, dtype);
      const b = filled(ctx, batch * shape.k * shape.n, 2, dtype);
      const out = ctx.pool.acquire(batch * shape.m * shape.n * (dtype === "f16" ? 2 : 4));
      const tile = blockedTileOf(variant);
      const forced = tile ? "blocked" : (variant as MatmulVariant | undefined);
      const args: MatmulArgs = {
        a,
        b,
        out,
        batch,
        m: shape.m,
        n: shape.n,
        k: shape.k,
        variant: forced,
        dtype,
      };
      if (tile) args.blockedTile = tile;
      if (shape.transA) args.transA = true;
      if (shape.transB) args.transB = true;
      if (!variant) console.log(`  (auto picks "${matmulVariant(ctx, args)}" for ${shape.label})`);
      return {
        run: () => matmul(ctx, args),
        dispose: () => {
          for (const buffer of [a, b, out]) ctx.pool.release(buffer);
        },
      };
    },
  };
}

const variants: BenchVariant[] = [
  "texture",
  "tiled",
  "buffer",
  "blocked",
  "blocked 128x128/16",
  "blocked 128x64/16",
  "blocked 64x128/16",
  "blocked 64x64/16",
  "blocked 64x64/32",
  "subgroup-matrix",
  "matvec",
];
/** Variants measured with f32 operands only (the tile shapes are an f32 question first). */
const f32Only = (v: BenchVariant) => v.startsWith("blocked ");

export const cases: BenchCase[] = [
  ...shapes.flatMap((shape) =>
    shape.f16 ? [caseFor(shape), caseFor(shape, undefined, "f16")] : [caseFor(shape)],
  ),
  ...shapes
    .filter((shape) => shape.compare)
    .flatMap((shape) =>
      variants.flatMap((v) =>
        v === "subgroup-matrix"
          ? shape.f16
            ? [caseFor(shape, v, "f16")]
            : []
          : shape.f16 && !f32Only(v)
            ? [caseFor(shape, v), caseFor(shape, v, "f16")]
            : [caseFor(shape, v)],
      ),
    ),
];
