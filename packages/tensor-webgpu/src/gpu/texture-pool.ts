/**
 * Reuses 2-D scratch textures by format and size class, like BufferPool does for buffers: kernels that
 * stage operands in textures (the texture matmul) acquire one per call and release it as soon as their
 * commands are recorded. Commands recorded later on the same encoder may then reuse it: WebGPU orders
 * every use of a resource within a command buffer, so the next writer waits for the previous readers.
 * Width and height are rounded up to 2^j · {1, 1.25, 1.5, 1.75} (at least 16), so varying sequence lengths
 * map onto a few textures instead of one per shape.
 */
import { FreeLists } from "./free-lists.js";

export interface TexturePoolStats {
  /** Bytes in textures handed out and not yet released. */
  inUseBytes: number;
  /** Bytes held for reuse. */
  pooledBytes: number;
  /** Textures held for reuse. */
  pooledTextures: number;
  /** Textures ever created. */
  created: number;
  /** Acquisitions served from the pool. */
  reused: number;
}

export interface PooledTexture {
  readonly texture: GPUTexture;
  /** A view of the whole texture (for bind groups). */
  readonly view: GPUTextureView;
  readonly format: GPUTextureFormat;
  readonly width: number;
  readonly height: number;
  readonly bytes: number;
}

const BYTES_PER_TEXEL: Partial<Record<GPUTextureFormat, number>> = {
  rgba32float: 16,
  rgba16float: 8,
  r32float: 4,
};

const COPY_DST = 0x2;
const TEXTURE_BINDING = 0x4;
const STORAGE_BINDING = 0x8;
const SCRATCH_USAGE = COPY_DST | TEXTURE_BINDING | STORAGE_BINDING;

/** Rounds up to 2^j · {1, 1.25, 1.5, 1.75} (at least 16), capped at `max`: at most 25% slack. */
export function textureSizeClass(x: number, max = Number.POSITIVE_INFINITY): number {
  if (x <= 16) return Math.min(16, max);
  const power = 2 ** Math.floor(Math.log2(x));
  return Math.min(power + Math.ceil((x - power) / (power / 4)) * (power / 4), max);
}

export class TexturePool {
  /** Released textures by format and size class: the same textures for the same requests (see FreeLists). */
  private readonly free = new FreeLists<string, PooledTexture>();
  private readonly retired: PooledTexture[] = [];
  /** Called with the views of the textures just destroyed (so that bind groups holding them can be dropped). */
  onDestroy: ((views: readonly GPUTextureView[]) => void) | undefined;
  private readonly stats_: TexturePoolStats = {
    inUseBytes: 0,
    pooledBytes: 0,
    pooledTextures: 0,
    created: 0,
    reused: 0,
  };

  /**
   * @param maxPooledBytes released textures beyond this are destroyed (after the next submit) instead of
   *   kept; may be changed at any time.
   */
  constructor(
    private readonly device: GPUDevice,
    public maxPooledBytes = 256 * 1024 * 1024,
  ) {}

  /** A scratch texture of at least width x height texels (copy destination, sampled and storage). */
  acquire(format: GPUTextureFormat, width: number, height: number, label = "scratch texture"): PooledTexture {
    const texelBytes = BYTES_PER_TEXEL[format];
    if (texelBytes === undefined) throw new Error(`TexturePool: unsupported format ${format}`);
    const max = this.device.limits.maxTextureDimension2D;
    if (width > max || height > max) {
      throw new RangeError(`TexturePool: ${width} x ${height} texels exceed the ${max} texel limit`);
    }
    const w = textureSizeClass(width, max);
    const h = textureSizeClass(height, max);
    const key = `${format} ${w}x${h}`;
    let entry = this.free.take(key);
    if (entry) {
      this.stats_.reused++;
      this.stats_.pooledBytes -= entry.bytes;
      this.stats_.pooledTextures--;
    } else {
      const texture = this.device.createTexture({ size: [w, h], format, usage: SCRATCH_USAGE, label });
      entry = { texture, view: texture.createView(), format, width: w, height: h, bytes: w * h * texelBytes };
      this.free.created(entry);
      this.stats_.created++;
    }
    this.stats_.inUseBytes += entry.bytes;
    return entry;
  }

  /**
   * Give a texture back. Commands already recorded may still use it: it is only reused by later
   * commands, and destroyed (when over budget) only after the next submit.
   */
  release(entry: PooledTexture): void {
    this.stats_.inUseBytes -= entry.bytes;
    if (entry.bytes > this.maxPooledBytes) {
      this.retired.push(entry);
      return;
    }
    while (this.stats_.pooledBytes + entry.bytes > this.maxPooledBytes) {
      const old = this.free.takeLongestUnused();
      if (!old) break;
      this.stats_.pooledBytes -= old.bytes;
      this.stats_.pooledTextures--;
      this.retired.push(old);
    }
    this.free.put(keyOf(entry), entry);
    this.stats_.pooledBytes += entry.bytes;
    this.stats_.pooledTextures++;
  }

  /** Destroy the textures released beyond the budget; call once their commands are submitted. */
  destroyRetired(): void {
    if (this.retired.length > 0) this.destroy(this.retired.splice(0));
  }

  /** Destroy every pooled texture (textures in use are untouched). */
  trim(): void {
    this.destroyRetired();
    this.destroy(this.free.takeAll());
    this.stats_.pooledBytes = 0;
    this.stats_.pooledTextures = 0;
  }

  private destroy(entries: PooledTexture[]): void {
    if (entries.length === 0) return;
    for (const entry of entries) entry.texture.destroy();
    this.onDestroy?.(entries.map((entry) => entry.view));
  }

  get stats(): Readonly<TexturePoolStats> {
    return { ...this.stats_ };
  }
}

function keyOf(entry: PooledTexture): string {
  return `${entry.format} ${entry.width}x${entry.height}`;
}
