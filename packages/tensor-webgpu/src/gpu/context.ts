import { BindGroupCache } from "./bind-group-cache.js";
import { BufferPool } from "./buffer-pool.js";
import { type AcquiredDevice, acquireDevice, DeviceLostError, type DeviceOptions } from "./device.js";
import { fullGarbageCollector } from "./garbage-collector.js";
import { type KernelProfile, KernelProfiler } from "./kernel-profiler.js";
import { emulateSubgroupMatrices } from "./subgroup-matrix-emulation.js";
import { TexturePool } from "./texture-pool.js";
import { waitForGpu } from "./wait.js";

/** A buffer binding: a whole buffer, or a byte range of one. */
export type Binding = GPUBuffer | { buffer: GPUBuffer; offset?: number; size?: number };

/** A texture binding (a storage or sampled texture view), for kernels that read operands from textures. */
export interface TextureBinding {
  textureView: GPUTextureView;
}

/** What a dispatch may bind: buffers (or ranges of them) and texture views. */
export type Resource = Binding | TextureBinding;

export interface ContextStats {
  dispatches: number;
  /** Buffer-to-texture copies recorded (texture staging of operands). */
  textureCopies: number;
  /** Bind groups created, and dispatches that reused one bound to the same resources before. */
  bindGroups: number;
  bindGroupsReused: number;
  /** Cached bind groups dropped: a buffer or texture they bind was destroyed, or the cache filled up. */
  bindGroupsDropped: number;
  /** Full garbage collections run to free the native side of bind groups dropped from the cache. */
  garbageCollections: number;
  submits: number;
  readbacks: number;
  uploads: number;
  pipelines: number;
  /**
   * Milliseconds the thread spent waiting for the GPU in `read` and `sync` (its work and the copy back):
   * the rest of a loop's time is the CPU's (recording work, JS between steps). A read started before more
   * work is recorded counts from when the caller yields to wait for it.
   */
  waitMs: number;
}

export interface ContextOptions extends DeviceOptions {
  /**
   * Released buffers kept for reuse at most (default: the larger of 2 GiB and what keeps all the pool
   * holds, in use and kept, within twice the working set, the highest in-use total so far); the rest are
   * destroyed. `ctx.pool.trim()` frees what is kept.
   */
  maxPooledBytes?: number;
  /** The same for scratch textures (default 256 MiB). */
  maxPooledTextureBytes?: number;
  /**
   * In Node, run a full garbage collection after every 8,192 bind groups dropped from the cache (default
   * true): the only way to free their native side in time (see fullGarbageCollector).
   */
  collectGarbage?: boolean;
}

export class GpuValidationError extends Error {
  constructor(message: string) {
    super(`WebGPU reported an error: ${message}`);
    this.name = "GpuValidationError";
  }
}

const UNIFORM_SLOT = 256; // minUniformBufferOffsetAlignment on every adapter we know
const UNIFORM_SLOTS = 4096;
const MAP_READ = 0x1;
const COPY_DST = 0x8;
const UNIFORM = 0x40;

/**
 * Owns a device and records work for it: pipelines are compiled once and cached; dispatches go into one
 * open compute pass of one command encoder and are submitted together (a dispatch costs ~25 µs on
 * lavapipe, a submit much more); small kernel parameters go into one uniform ring written once per submit.
 * Reads flush, copy into a staging buffer and wait without spinning the JS thread.
 */
export class GpuContext {
  readonly device: GPUDevice;
  readonly pool: BufferPool;
  /** Scratch textures (operand staging of the texture matmul), reused like `pool`'s buffers. */
  readonly textures: TexturePool;
  readonly info: AcquiredDevice;
  private readonly pipelines = new Map<string, GPUComputePipeline>();
  private readonly bindGroups: BindGroupCache;
  /** Each pipeline's bind group layout: asking Dawn for it creates a new object every time. */
  private readonly layouts = new WeakMap<GPUComputePipeline, GPUBindGroupLayout>();
  private encoder: GPUCommandEncoder | undefined;
  private pass: GPUComputePassEncoder | undefined;
  private readonly uniformRing: GPUBuffer;
  private readonly uniformData = new Uint8Array(UNIFORM_SLOT * UNIFORM_SLOTS);
  private uniformSlots = 0;
  private lost: DeviceLostError | undefined;
  private pendingWaits = 0;
  private waitingSince = 0;
  private firstError: string | undefined;
  private profiler: KernelProfiler | undefined;
  private readonly stats_: Omit<
    ContextStats,
    "bindGroups" | "bindGroupsReused" | "bindGroupsDropped" | "garbageCollections"
  > = {
    dispatches: 0,
    textureCopies: 0,
    submits: 0,
    readbacks: 0,
    uploads: 0,
    pipelines: 0,
    waitMs: 0,
  };

  private constructor(
    info: AcquiredDevice,
    maxPooledBytes?: number,
    maxPooledTextureBytes?: number,
    collectGarbage?: () => void,
  ) {
    this.info = info;
    this.device = info.device;
    this.bindGroups = new BindGroupCache(collectGarbage);
    this.pool = new BufferPool(this.device, maxPooledBytes);
    this.textures = new TexturePool(this.device, maxPooledTextureBytes);
    // Bind groups hold their buffers and views: drop those that bind a destroyed one.
    this.pool.onDestroy = (buffers) => this.bindGroups.forget(buffers);
    this.textures.onDestroy = (views) => this.bindGroups.forget(views);
    this.uniformRing = this.device.createBuffer({
      size: this.uniformData.byteLength,
      usage: UNIFORM | COPY_DST,
      label: "uniform ring",
    });
    this.device.lost.then((lost) => {
      if (lost.reason !== "destroyed") this.lost = new DeviceLostError(String(lost.reason), lost.message);
    });
    this.device.addEventListener("uncapturederror", (event) => {
      this.firstError ??= (event as GPUUncapturedErrorEvent).error.message;
    });
  }

  static async create(options: ContextOptions = {}): Promise<GpuContext> {
    return new GpuContext(
      await acquireDevice(options),
      options.maxPooledBytes,
      options.maxPooledTextureBytes,
      options.collectGarbage === false ? undefined : await fullGarbageCollector(),
    );
  }

  get stats(): Readonly<ContextStats> {
    return {
      ...this.stats_,
      bindGroups: this.bindGroups.created,
      bindGroupsReused: this.bindGroups.reused,
      bindGroupsDropped: this.bindGroups.dropped,
      garbageCollections: this.bindGroups.collections,
    };
  }

  private check(): void {
    if (this.lost) throw this.lost;
    if (this.firstError !== undefined) {
      const message = this.firstError;
      this.firstError = undefined;
      throw new GpuValidationError(message);
    }
  }

  /** A compute pipeline for `code` (entry point `main`), compiled once per context. */
  pipeline(label: string, code: string): GPUComputePipeline {
    let pipeline = this.pipelines.get(code);
    if (!pipeline) {
      const source = this.info.features.subgroupMatrixEmulated
        ? emulateSubgroupMatrices(code, this.info.subgroupSizes.max)
        : code;
      const module = this.device.createShaderModule({ code: source, label });
      pipeline = this.device.createComputePipeline({
        layout: "auto",
        compute: { module, entryPoint: "main" },
        label,
      });
      if (this.firstError !== undefined)
        this.firstError = `while compiling kernel "${label}": ${this.firstError}`;
      this.check();
      this.pipelines.set(code, pipeline);
      this.stats_.pipelines++;
    }
    return pipeline;
  }

  /**
   * Record one dispatch. `bindings` (buffers, buffer ranges or texture views) take @binding(0..n-1) of
   * @group(0) in order; `params`, when given, is a uniform struct at @binding(n).
   */
  dispatch(
    pipeline: GPUComputePipeline,
    bindings: readonly Resource[],
    params: ArrayBufferView | undefined,
    workgroups: readonly [number, number?, number?],
  ): void {
    this.check();
    const [x, y = 1, z = 1] = workgroups;
    if (x === 0 || y === 0 || z === 0) return;
    const max = this.device.limits.maxComputeWorkgroupsPerDimension;
    if (x > max || y > max || z > max) {
      throw new RangeError(`dispatch of ${x}x${y}x${z} workgroups exceeds the limit of ${max} per dimension`);
    }
    if (params && params.byteLength > UNIFORM_SLOT) throw new RangeError("kernel params exceed 256 bytes");
    if (params && this.uniformSlots === UNIFORM_SLOTS) this.flush();
    let key = `${this.bindGroups.id(pipeline)}`;
    const resources: object[] = [];
    for (const b of bindings) {
      const resource = "textureView" in b ? b.textureView : "buffer" in b ? b.buffer : b;
      resources.push(resource);
      if ("textureView" in b) key += ` t${this.bindGroups.id(resource)}`;
      else if ("buffer" in b) key += ` b${this.bindGroups.id(resource)}@${b.offset ?? 0}+${b.size ?? "*"}`;
      else key += ` b${this.bindGroups.id(resource)}`;
    }
    let uniform: { offset: number; size: number } | undefined;
    if (params) {
      uniform = { offset: this.uniformSlots * UNIFORM_SLOT, size: Math.ceil(params.byteLength / 16) * 16 };
      this.uniformData.set(
        new Uint8Array(params.buffer, params.byteOffset, params.byteLength),
        uniform.offset,
      );
      this.uniformSlots++;
      key += ` u${uniform.offset}+${uniform.size}`;
    }
    const bindGroup = this.bindGroups.get(key, resources, () => {
      const entries: GPUBindGroupEntry[] = bindings.map((b, i) => ({
        binding: i,
        resource:
          "textureView" in b
            ? b.textureView
            : "buffer" in b
              ? { buffer: b.buffer, offset: b.offset ?? 0, size: b.size }
              : { buffer: b },
      }));
      if (uniform)
        entries.push({ binding: bindings.length, resource: { buffer: this.uniformRing, ...uniform } });
      let layout = this.layouts.get(pipeline);
      if (!layout) {
        layout = pipeline.getBindGroupLayout(0);
        this.layouts.set(pipeline, layout);
      }
      return this.device.createBindGroup({ layout, entries });
    });
    const pass = this.profiler ? this.profiledPass(this.profiler, pipeline.label) : this.computePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(x, y, z);
    if (this.profiler) this.commandEncoder(); // ends the dispatch's own pass
    this.stats_.dispatches++;
  }

  private computePass(): GPUComputePassEncoder {
    if (!this.pass) {
      this.encoder ??= this.device.createCommandEncoder();
      this.pass = this.encoder.beginComputePass();
    }
    return this.pass;
  }

  /** A compute pass for one dispatch, its start and end stamped for the profiler. */
  private profiledPass(profiler: KernelProfiler, label: string): GPUComputePassEncoder {
    const encoder = this.commandEncoder();
    this.pass = encoder.beginComputePass({ timestampWrites: profiler.timestampWrites(encoder, label) });
    return this.pass;
  }

  /**
   * Start measuring the GPU time of every dispatch, per kernel (needs the timestamp-query feature). Work
   * recorded before this call is not counted.
   */
  startKernelProfile(): void {
    if (this.profiler) throw new Error("a kernel profile is already running on this context");
    this.flush();
    this.profiler = new KernelProfiler(this.device);
  }

  /** Stop the profile: waits for the profiled work and returns the GPU time per kernel. */
  async stopKernelProfile(): Promise<KernelProfile> {
    const profiler = this.profiler;
    if (!profiler) throw new Error("no kernel profile is running on this context");
    await this.sync();
    this.profiler = undefined;
    return profiler.collect();
  }

  private commandEncoder(): GPUCommandEncoder {
    if (this.pass) {
      this.pass.end();
      this.pass = undefined;
    }
    this.encoder ??= this.device.createCommandEncoder();
    return this.encoder;
  }

  /** Record a buffer-to-buffer copy (ordered with the dispatches around it). */
  copy(
    source: GPUBuffer,
    sourceOffset: number,
    target: GPUBuffer,
    targetOffset: number,
    bytes: number,
  ): void {
    this.check();
    this.commandEncoder().copyBufferToBuffer(source, sourceOffset, target, targetOffset, bytes);
  }

  /**
   * Record a copy of rows of a buffer into a texture (ordered with the dispatches around it): `size` is
   * [width, height] in texels, rows `bytesPerRow` apart in the buffer (a multiple of 256) from `offset`.
   */
  copyToTexture(
    source: { buffer: GPUBuffer; offset: number; bytesPerRow: number },
    texture: GPUTexture,
    origin: { x: number; y: number },
    size: [number, number],
  ): void {
    this.check();
    this.commandEncoder().copyBufferToTexture(source, { texture, origin }, size);
    this.stats_.textureCopies++;
  }

  /** Submit everything recorded so far. */
  flush(): void {
    if (!this.encoder) {
      this.pool.destroyRetired();
      this.textures.destroyRetired();
      return;
    }
    if (this.pass) {
      this.pass.end();
      this.pass = undefined;
    }
    if (this.uniformSlots > 0) {
      this.device.queue.writeBuffer(
        this.uniformRing,
        0,
        this.uniformData,
        0,
        this.uniformSlots * UNIFORM_SLOT,
      );
      this.uniformSlots = 0;
    }
    this.profiler?.resolve(this.encoder);
    this.device.queue.submit([this.encoder.finish()]);
    this.profiler?.submitted();
    this.encoder = undefined;
    this.stats_.submits++;
    // Submitted work keeps what it uses alive, so over-budget releases can go now.
    this.pool.destroyRetired();
    this.textures.destroyRetired();
  }

  /**
   * Destroy buffers made outside the pool (a tuning run's operands) once the work using them is done, and
   * the cached bind groups that bind them.
   */
  destroyBuffers(buffers: Iterable<GPUBuffer>): void {
    const list = [...buffers];
    for (const buffer of list) buffer.destroy();
    this.bindGroups.forget(list);
  }

  /** Write `data` into `buffer` at `byteOffset`, after all work recorded so far. */
  write(buffer: GPUBuffer, data: ArrayBufferView, byteOffset = 0): void {
    this.check();
    // Queue writes run before not-yet-submitted commands, which may still read this buffer's old data.
    this.flush();
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const padded = bytes.byteLength % 4 === 0 ? bytes : padTo4(bytes);
    this.device.queue.writeBuffer(buffer, byteOffset, padded as Uint8Array<ArrayBuffer>);
    this.stats_.uploads++;
  }

  /** A pooled buffer holding a copy of `data`. */
  upload(data: ArrayBufferView, label?: string): GPUBuffer {
    const buffer = this.pool.acquire(Math.max(4, data.byteLength), label);
    this.write(buffer, data);
    return buffer;
  }

  /** Read `bytes` bytes of `buffer` from `byteOffset`, after all recorded work. */
  async read(buffer: GPUBuffer, bytes: number, byteOffset = 0): Promise<ArrayBuffer> {
    this.check();
    const size = Math.ceil(bytes / 4) * 4;
    const staging = this.device.createBuffer({
      size: Math.max(size, 4),
      usage: MAP_READ | COPY_DST,
      label: "readback",
    });
    if (size > 0) this.copy(buffer, byteOffset, staging, 0, size);
    this.flush();
    try {
      await this.timedWait(staging.mapAsync(MAP_READ));
      this.check();
      this.stats_.readbacks++;
      return staging.getMappedRange().slice(0, bytes);
    } finally {
      staging.destroy();
    }
  }

  /** Wait until all submitted work has finished. */
  async sync(): Promise<void> {
    this.flush();
    await this.timedWait(this.device.queue.onSubmittedWorkDone());
    this.check();
  }

  /**
   * `waitForGpu`, counted in stats.waitMs from when the thread starts waiting (not while the caller goes
   * on recording after starting a read). Waits that overlap (two reads awaited together) count once: the
   * clock runs while at least one is waiting.
   */
  private timedWait<T>(promise: Promise<T>): Promise<T> {
    return waitForGpu(promise, { clock: this.waitClock });
  }

  private readonly waitClock = {
    start: () => {
      if (this.pendingWaits++ === 0) this.waitingSince = performance.now();
    },
    stop: () => {
      if (--this.pendingWaits === 0) this.stats_.waitMs += performance.now() - this.waitingSince;
    },
  };

  /**
   * Release every GPU resource now, rather than when the garbage collector gets to it (on lavapipe each
   * device keeps thousands of memory mappings until then, and a process that creates devices one after
   * another reaches the kernel's limit on them). The context is unusable afterwards: its next use throws.
   */
  destroy(): void {
    if (this.lost?.reason === "destroyed") return;
    this.lost = new DeviceLostError("destroyed", "its owner destroyed it");
    this.pipelines.clear();
    this.bindGroups.clear();
    this.pool.trim();
    this.textures.trim();
    this.uniformRing.destroy();
    this.device.destroy();
  }
}

function padTo4(bytes: Uint8Array): Uint8Array {
  const padded = new Uint8Array(Math.ceil(bytes.byteLength / 4) * 4);
  padded.set(bytes);
  return padded;
}

/** Split `count` workgroups over x and y so neither exceeds the per-dimension limit. */
export function grid(count: number, maxPerDimension = 65535): [number, number] {
  if (count <= maxPerDimension) return [count, 1];
  const y = Math.ceil(count / maxPerDimension);
  return [Math.ceil(count / y), y];
}
