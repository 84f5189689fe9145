import type { GpuContext } from "../gpu/context.js";

/**
 * The subgroup width the texture kernels (the "texture" matmul, the software attention kernels) and the
 * lane form of decoding attention are generated for, or undefined where they cannot run: they need
 * subgroups of a known, narrow width.
 */
export function textureLanes(ctx: GpuContext): number | undefined {
  if (!ctx.info.features.subgroups) return undefined;
  const info = (ctx.device as { adapterInfo?: { subgroupMinSize?: number } }).adapterInfo;
  let lanes = info?.subgroupMinSize;
  if (!lanes) {
    // Older implementations: lavapipe names its SIMD width ("llvmpipe ... 256-bits"), 32-bit lanes.
    const bits = /(\d+)-bits/.exec(ctx.info.adapter.device)?.[1];
    lanes = bits && /llvmpipe/i.test(ctx.info.adapter.device) ? Number(bits) / 32 : undefined;
  }
  // Made for software adapters' narrow SIMD: on a 32-lane GPU (H100) the matmul ran 4x slower than
  // "tiled", and its 16 x 4L tiles outgrow small textures.
  return lanes && lanes >= 4 && lanes <= 16 && (lanes & (lanes - 1)) === 0 ? lanes : undefined;
}
