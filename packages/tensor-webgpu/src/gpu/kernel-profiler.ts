/**
 * GPU time per kernel, from timestamp queries: while a profile runs, every dispatch gets a compute pass of
 * its own whose start and end the GPU stamps. The stamps are resolved into a buffer before each submit and
 * read back when the profile stops, then summed per pipeline label. One pass per dispatch adds a little
 * overhead of its own, so a profile answers "where does the GPU's time go", not "how fast is the step".
 */

const QUERY_RESOLVE = 0x200;
const COPY_SRC = 0x4;
const COPY_DST = 0x8;
const MAP_READ = 0x1;
/** Timestamps per query set (two per dispatch). */
const QUERIES_PER_SET = 2048;

/** The GPU time of one kernel (pipeline label) over a profile. */
export interface KernelTime {
  label: string;
  dispatches: number;
  /** Summed GPU time of its dispatches, in milliseconds. */
  ms: number;
}

export interface KernelProfile {
  /** Kernels by GPU time, longest first. */
  kernels: KernelTime[];
  /** Summed GPU time of every profiled dispatch, in milliseconds. */
  totalMs: number;
  dispatches: number;
}

interface QueryBatch {
  set: GPUQuerySet;
  labels: string[];
  staging?: GPUBuffer;
  mapped?: Promise<void>;
}

export class KernelProfiler {
  private current: QueryBatch | undefined;
  private readonly resolved: QueryBatch[] = [];
  private resolveBuffers: GPUBuffer[] = [];

  constructor(private readonly device: GPUDevice) {
    if (!device.features.has("timestamp-query")) {
      throw new Error(
        "kernel profiling needs the adapter's timestamp-query feature, which this device lacks",
      );
    }
  }

  /** Timestamp writes for the pass of the next dispatch of `label`. */
  timestampWrites(encoder: GPUCommandEncoder, label: string): GPUComputePassTimestampWrites {
    if (this.current && this.current.labels.length * 2 === QUERIES_PER_SET) this.resolve(encoder);
    this.current ??= {
      set: this.device.createQuerySet({ type: "timestamp", count: QUERIES_PER_SET }),
      labels: [],
    };
    const index = this.current.labels.length * 2;
    this.current.labels.push(label);
    return { querySet: this.current.set, beginningOfPassWriteIndex: index, endOfPassWriteIndex: index + 1 };
  }

  /** Record the resolve of the open query set into a readable buffer (outside any pass). */
  resolve(encoder: GPUCommandEncoder): void {
    const batch = this.current;
    if (!batch || batch.labels.length === 0) return;
    this.current = undefined;
    const bytes = batch.labels.length * 2 * 8;
    const resolveBuffer = this.device.createBuffer({ size: bytes, usage: QUERY_RESOLVE | COPY_SRC });
    batch.staging = this.device.createBuffer({ size: bytes, usage: MAP_READ | COPY_DST });
    encoder.resolveQuerySet(batch.set, 0, batch.labels.length * 2, resolveBuffer, 0);
    encoder.copyBufferToBuffer(resolveBuffer, 0, batch.staging, 0, bytes);
    this.resolved.push(batch);
    this.resolveBuffers.push(resolveBuffer);
  }

  /** After a submit: start mapping what it resolved (submitted work keeps the resolve buffers alive). */
  submitted(): void {
    for (const batch of this.resolved) batch.mapped ??= batch.staging!.mapAsync(MAP_READ);
    for (const buffer of this.resolveBuffers) buffer.destroy();
    this.resolveBuffers = [];
  }

  /** Read every resolved batch and sum the times per label; the profiler is spent afterwards. */
  async collect(): Promise<KernelProfile> {
    const byLabel = new Map<string, KernelTime>();
    let totalMs = 0;
    let dispatches = 0;
    for (const batch of this.resolved) {
      await batch.mapped;
      const stamps = new BigUint64Array(batch.staging!.getMappedRange());
      batch.labels.forEach((label, i) => {
        const begin = stamps[2 * i]!;
        const end = stamps[2 * i + 1]!;
        const ms = end > begin ? Number(end - begin) / 1e6 : 0;
        const entry = byLabel.get(label) ?? { label, dispatches: 0, ms: 0 };
        entry.dispatches++;
        entry.ms += ms;
        byLabel.set(label, entry);
        totalMs += ms;
        dispatches++;
      });
      batch.staging!.unmap();
      batch.staging!.destroy();
      batch.set.destroy();
    }
    this.current?.set.destroy();
    return { kernels: [...byLabel.values()].sort((a, b) => b.ms - a.ms), totalMs, dispatches };
  }
}
