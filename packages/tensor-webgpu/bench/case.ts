import type { GpuContext } from "../src/gpu/context.js";

/** One benchmark: `setup` allocates inputs and returns a function that records one iteration's work. */
export interface BenchCase {
  /** Kernel family ("matmul", "attention", ...). */
  family: string;
  /** What is measured, e.g. "matmul 1024x1024x1024" or "attention fwd+bwd T=512". */
  name: string;
  /** Floating-point operations per iteration (for GFLOP/s), if meaningful. */
  flops?: number;
  /** Bytes read + written per iteration (for GB/s), for memory-bound kernels. */
  bytes?: number;
  /** A reason this adapter cannot run the case (a missing feature), or undefined. */
  skip?(ctx: GpuContext): string | undefined;
  setup(ctx: GpuContext): { run: () => void; dispose: () => void };
}
