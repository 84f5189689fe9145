/**
 * Bind groups kept for reuse, keyed by the pipeline and the identity, offset and size of every resource
 * bound. Creating a bind group is most of what a dispatch costs the CPU (measured on lavapipe: 20 of
 * 31 µs), and a decoding or training loop binds the same pooled buffers to the same kernels step after
 * step, with its kernel parameters at the same uniform slots. A hit means exactly the same resources, so
 * a cached group is valid wherever a new one would be.
 *
 * When buffers or textures are destroyed, only the groups that bind them are dropped: a pool that retires
 * one over-budget buffer a step would otherwise throw away every group of the step, and each dispatch of
 * the next step would create its group again (seen on an H200: all 1,314 groups of a training step).
 */

/** The most bind groups kept; past it the cache starts again (a few training steps' worth). */
const MAX_ENTRIES = 8192;

/**
 * Bind groups dropped from the cache between two collections. A full collection took 150 ms on a heap of
 * two million small objects, and a Quest step drops about 10,000 groups: about one collection a step.
 */
export const DROPPED_PER_COLLECTION = 8192;

interface Entry {
  group: GPUBindGroup;
  /** The buffers and texture views it binds: destroying any of them drops the group. */
  resources: readonly object[];
}

export class BindGroupCache {
  private readonly ids = new WeakMap<object, number>();
  private nextId = 1;
  private readonly groups = new Map<string, Entry>();
  /** The keys of the cached groups that bind each resource. */
  private readonly keysByResource = new Map<object, Set<string>>();
  /** Bind groups created (cache misses) and reused (hits). */
  created = 0;
  reused = 0;
  /** Bind groups dropped because a resource they bind was destroyed, or because the cache was full or cleared. */
  dropped = 0;
  /** Garbage collections asked for, to free the native side of dropped groups. */
  collections = 0;
  private droppedSinceCollection = 0;

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

  /** Groups held now. */
  get size(): number {
    return this.groups.size;
  }

  /**
   * The cached group for `key`, or `create()`'s, kept under `key` until one of `resources` (the buffers and
   * texture views it binds that can be destroyed) is forgotten.
   */
  get(key: string, resources: readonly object[], create: () => GPUBindGroup): GPUBindGroup {
    const cached = this.groups.get(key);
    if (cached) {
      this.reused++;
      return cached.group;
    }
    if (this.groups.size >= MAX_ENTRIES) this.clear();
    const group = create();
    this.groups.set(key, { group, resources });
    for (const resource of resources) {
      let keys = this.keysByResource.get(resource);
      if (!keys) {
        keys = new Set();
        this.keysByResource.set(resource, keys);
      }
      keys.add(key);
    }
    this.created++;
    return group;
  }

  /** Drop the groups that bind any of `resources` (they are being destroyed). */
  forget(resources: Iterable<object>): void {
    let dropped = 0;
    for (const resource of resources) {
      const keys = this.keysByResource.get(resource);
      if (!keys) continue;
      this.keysByResource.delete(resource);
      for (const key of keys) {
        const entry = this.groups.get(key);
        if (!entry) continue;
        this.groups.delete(key);
        dropped++;
        for (const other of entry.resources)
          if (other !== resource) this.keysByResource.get(other)?.delete(key);
      }
    }
    this.countDropped(dropped);
  }

  /** Drop every group (the cache is full, or its context ends). */
  clear(): void {
    const dropped = this.groups.size;
    this.groups.clear();
    this.keysByResource.clear();
    this.countDropped(dropped);
  }

  private countDropped(count: number): void {
    this.dropped += count;
    this.droppedSinceCollection += count;
    if (this.collect && this.droppedSinceCollection >= this.collectAfter) {
      this.droppedSinceCollection = 0;
      this.collections++;
      this.collect();
    }
  }
}
