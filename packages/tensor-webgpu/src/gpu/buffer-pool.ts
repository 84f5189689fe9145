/**
 * Reuses GPU buffers by size class, so a training loop that allocates the same shapes every step does
 * not create (and leak) thousands of buffers. Size classes are 2^k × {1, 1.25, 1.5, 1.75}: at most 25%
 * of a buffer is slack.
 *
 * By default the pool keeps released buffers while everything it holds (in use and kept) stays within
 * twice the highest in-use total seen (the working set), and at least 2 GiB of them, as a caching
 * allocator does: a step whose activations exceed a fixed budget would otherwise destroy and re-create
 * them every step (measured on an H100: a Qwen2.5-0.5B step peaks at 9.2 GiB, and with a 2 GiB budget
 * 0.61 s of its 0.74 s went to the CPU). Twice, because a step's buffers outnumber its peak: a buffer
 * released early in a size class that is not asked for again sits kept while later ones are made (a
 * budget of the working set alone destroyed 4 buffers a step of the tiny benchmark model).
 */
import { bufferBytes } from "./buffer-bytes.js";
import { FreeLists } from "./free-lists.js";

export const STORAGE_USAGE = 0x80 | 0x4 | 0x8; // STORAGE | COPY_SRC | COPY_DST (numeric: no GPU globals needed)

export function sizeClass(bytes: number): number {
  const min = 256;
  if (bytes <= min) return min;
  const power = 2 ** Math.floor(Math.log2(bytes));
  const quarter = power / 4;
  const size = power + Math.ceil((bytes - power) / quarter) * quarter;
  return Math.ceil(size / 16) * 16;
}

export interface PoolStats {
  /** Bytes in buffers handed out and not yet released. */
  inUseBytes: number;
  /** Bytes held for reuse. */
  pooledBytes: number;
  /** Highest inUseBytes seen. */
  peakInUseBytes: number;
  /** Buffers ever created. */
  created: number;
  /** Acquisitions served from the pool. */
  reused: number;
  /** Buffers destroyed: released beyond the budget, or trimmed. */
  destroyed: number;
}

export class BufferPool {
  /** Released buffers by size class: the same buffers for the same requests (see FreeLists). */
  private readonly free = new FreeLists<number, GPUBuffer>();
  private readonly stats_: PoolStats = {
    inUseBytes: 0,
    pooledBytes: 0,
    peakInUseBytes: 0,
    created: 0,
    reused: 0,
    destroyed: 0,
  };

  private readonly retired: GPUBuffer[] = [];
  /** Called with the buffers just destroyed (so that bind groups holding them can be dropped). */
  onDestroy: ((buffers: readonly GPUBuffer[]) => void) | undefined;

  /**
   * @param maxPooledBytes released buffers beyond this are destroyed (after the next submit) instead of kept;
   *   by default the larger of `floorBytes` and what keeps all the pool holds within twice the working set
   *   (the highest in-use total so far)
   * @param floorBytes the least the default budget keeps (2 GiB)
   */
  constructor(
    private readonly device: GPUDevice,
    private readonly maxPooledBytes?: number,
    private readonly floorBytes = 2 ** 31,
  ) {}

  /** Bytes of released buffers the pool keeps at most, now. */
  get budget(): number {
    const { peakInUseBytes, inUseBytes } = this.stats_;
    return this.maxPooledBytes ?? Math.max(this.floorBytes, 2 * peakInUseBytes - inUseBytes);
  }

  acquire(bytes: number, label = "tensor"): GPUBuffer {
    const size = sizeClass(bytes);
    let buffer = this.free.take(size);
    if (buffer) {
      this.stats_.reused++;
      this.stats_.pooledBytes -= size;
    } else {
      // WebGPU reports an oversized buffer later, as a validation error far from its cause.
      const limit = this.device.limits.maxBufferSize;
      if (size > limit)
        throw new RangeError(
          `a ${label} of ${formatBytes(bytes)} is larger than this device's largest buffer (maxBufferSize ${formatBytes(limit)}): lower the batch, micro-batch or sequence sizes`,
        );
      buffer = this.device.createBuffer({ size, usage: STORAGE_USAGE, label });
      this.free.created(buffer);
      this.stats_.created++;
    }
    this.stats_.inUseBytes += size;
    this.stats_.peakInUseBytes = Math.max(this.stats_.peakInUseBytes, this.stats_.inUseBytes);
    return buffer;
  }

  release(buffer: GPUBuffer): void {
    const size = bufferBytes(buffer);
    this.stats_.inUseBytes -= size;
    const budget = this.budget;
    if (size > budget) {
      this.retire(buffer);
      return;
    }
    // Over budget, the longest-unused buffers go: shapes change (growing prompts, new batch sizes) and the
    // recent sizes are the ones the next steps ask for again.
    while (this.stats_.pooledBytes + size > budget) {
      const old = this.free.takeLongestUnused();
      if (!old) break;
      this.stats_.pooledBytes -= bufferBytes(old);
      this.retire(old);
    }
    this.free.put(size, buffer);
    this.stats_.pooledBytes += size;
  }

  /** Recorded but unsubmitted commands may still use a released buffer: destroying it now would fail their submit. */
  private retire(buffer: GPUBuffer): void {
    this.retired.push(buffer);
  }

  /** Destroy the buffers released beyond the pool's budget; call once their commands are submitted. */
  destroyRetired(): void {
    if (this.retired.length > 0) this.destroy(this.retired.splice(0));
  }

  /** Destroy every pooled buffer (buffers in use are untouched). */
  trim(): void {
    this.destroyRetired();
    this.destroy(this.free.takeAll());
    this.stats_.pooledBytes = 0;
  }

  private destroy(buffers: GPUBuffer[]): void {
    if (buffers.length === 0) return;
    for (const b of buffers) b.destroy();
    this.stats_.destroyed += buffers.length;
    this.onDestroy?.(buffers);
  }

  get stats(): Readonly<PoolStats> {
    return { ...this.stats_ };
  }
}

function formatBytes(bytes: number): string {
  const gib = bytes / 2 ** 30;
  return gib >= 1 ? `${gib.toFixed(1)} GiB` : `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}
