/**
 * The released resources (buffers, textures) a pool keeps, by size class. `take` hands out the one
 * created first among the free ones of its class. Which one it hands out depends only on which are free,
 * not on the order they were released in, so a step that asks for what the step before it asked for gets
 * the same resources back, and the bind groups recorded for them are reused instead of created. (Handing
 * out the last one released rotated through them: a training step releases its tensors in another order
 * than it made them, and nearly every dispatch of the next step made a new bind group.)
 */
export class FreeLists<Key, T extends object> {
  /** Each class's free resources, the first created last (where `take` pops). */
  private readonly lists = new Map<Key, T[]>();
  private readonly serials = new WeakMap<T, number>();
  private nextSerial = 0;
  /** The free resources and their classes, longest unused first: what a pool over budget drops first. */
  private readonly unused = new Map<T, Key>();

  /** Number a new resource, so that the free lists know their creation order. */
  created(resource: T): void {
    this.serials.set(resource, this.nextSerial++);
  }

  /** The free resource of class `key` created first, taken out of the lists; undefined if none is free. */
  take(key: Key): T | undefined {
    const resource = this.lists.get(key)?.pop();
    if (resource) this.unused.delete(resource);
    return resource;
  }

  /** Keep a released resource of class `key`. */
  put(key: Key, resource: T): void {
    let list = this.lists.get(key);
    if (!list) {
      list = [];
      this.lists.set(key, list);
    }
    list.splice(this.insertionIndex(list, resource), 0, resource);
    this.unused.set(resource, key);
  }

  /** Takes out and returns the free resource unused longest (undefined if none is free). */
  takeLongestUnused(): T | undefined {
    const next = this.unused.entries().next();
    if (next.done) return undefined;
    const [resource, key] = next.value;
    const list = this.lists.get(key)!;
    list.splice(list.indexOf(resource), 1);
    this.unused.delete(resource);
    return resource;
  }

  /** Takes out and returns every free resource. */
  takeAll(): T[] {
    const all = [...this.unused.keys()];
    this.lists.clear();
    this.unused.clear();
    return all;
  }

  /** Where `resource` goes in a list ordered by creation, the first created last (a binary search). */
  private insertionIndex(list: readonly T[], resource: T): number {
    const serial = this.serialOf(resource);
    let [low, high] = [0, list.length];
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.serialOf(list[middle]!) > serial) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** A resource the pool did not number (none should be) sorts as the newest. */
  private serialOf(resource: T): number {
    return this.serials.get(resource) ?? Number.MAX_SAFE_INTEGER;
  }
}
