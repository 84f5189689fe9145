import type { GpuContext } from "../gpu/context.js";

/** One object per GPU context, created on first use and dropped on request (the tuning tables). */
export class PerContext<T> {
  private readonly items = new WeakMap<GpuContext, T>();

  constructor(private readonly create: (ctx: GpuContext) => T) {}

  get(ctx: GpuContext): T | undefined {
    return this.items.get(ctx);
  }

  /** The context's object, created if it has none. */
  ensure(ctx: GpuContext): T {
    let item = this.items.get(ctx);
    if (item === undefined) {
      item = this.create(ctx);
      this.items.set(ctx, item);
    }
    return item;
  }

  drop(ctx: GpuContext): void {
    this.items.delete(ctx);
  }
}
