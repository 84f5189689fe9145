/**
 * Bind groups kept for reuse, keyed by the pipeline and the identity, offset and size of every resource
 * bound. Creating a bind group is most of what a dispatch costs the CPU (measured on lavapipe: 20 of
 * 31 µs), and a decoding or training loop binds the same pooled buffers to the same kernels step after
 * step, with its kernel parameters at the same uniform slots. A hit means exactly the same resources, so
 * a cached group is valid wherever a new one would be.
 */

/** The most bind groups kept; past it the cache starts again (a few training steps' worth). */
const MAX_ENTRIES = 8192;

/**
 * Bind groups dropped from the cache between two collections. A full collection took 150 ms on a heap of
 * two million small objects, and a Quest step drops about 10,000 groups: about one collection a step.
 */
export const DROPPED_PER_COLLECTION = 8192;

export class BindGroupCache {
  private readonly ids = new WeakMap<object, number>();
  private nextId = 1;
  private readonly groups = new Map<string, GPUBindGroup>();
  /** Bind groups created (cache misses) and reused (hits). */
  created = 0;
  reused = 0;
  /** Garbage collections asked for, to free the native side of dropped groups. */
  collections = 0;
  private dropped = 0;

  /**
   * @param collect a full garbage collection (see fullGarbageCollector), run once `collectAfter` groups
   *   were dropped since the last one: the only way to free dropped groups' descriptor sets in time
   */
  constructor(
    private readonly collect?: () => void,
    private readonly collectAfter = DROPPED_PER_COLLECTION,
  ) {}

  /** A short stable name for an object (pipeline, buffer, texture view) for keys. */
  id(object: object): number {
    let id = this.ids.get(object);
    if (id === undefined) {
      id = this.nextId++;
      this.ids.set(object, id);
    }
    return id;
  }

  /** The cached group for `key`, or `create()`'s, kept under `key`. */
  get(key: string, create: () => GPUBindGroup): GPUBindGroup {
    const cached = this.groups.get(key);
    if (cached) {
      this.reused++;
      return cached;
    }
    if (this.groups.size >= MAX_ENTRIES) this.clear();
    const group = create();
    this.groups.set(key, group);
    this.created++;
    return group;
  }

  /** Drop every group (their buffers may be destroyed soon: a pool trim, the context's end). */
  clear(): void {
    this.dropped += this.groups.size;
    this.groups.clear();
    if (this.collect && this.dropped >= this.collectAfter) {
      this.dropped = 0;
      this.collections++;
      this.collect();
    }
  }
}
