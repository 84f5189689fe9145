import type { Backend, DType } from "./backend.js";
import { float16ArrayToFloat32 } from "./core/half-float.js";

/**
 * A reference-counted device buffer. Several tensors may share one (reshape is free); it returns to
 * the backend's pool when the last of them lets go.
 */
export class Storage {
  private refs = 1;
  constructor(
    readonly backend: Backend,
    readonly buffer: unknown,
    readonly bytes: number,
  ) {}

  retain(): this {
    if (this.refs <= 0) throw new Error("retain() on freed storage");
    this.refs++;
    return this;
  }

  release(): void {
    if (--this.refs === 0) this.backend.free(this.buffer);
  }

  get alive(): boolean {
    return this.refs > 0;
  }
}

/** What an op records so that `backward` can send gradients to its inputs (see autograd.ts). */
export interface GradNode {
  readonly op: string;
  retain(): void;
  release(): void;
}

export function shapeSize(shape: readonly number[]): number {
  let size = 1;
  for (const d of shape) size *= d;
  return size;
}

export function shapeToString(shape: readonly number[]): string {
  return `[${shape.join(", ")}]`;
}

/** Tensors created while a scope is open are disposed when it closes (unless kept or returned). */
const scopeStack: Set<Tensor>[] = [];

export class TensorDisposedError extends Error {
  constructor(what: string) {
    super(`${what} was disposed and cannot be used`);
    this.name = "TensorDisposedError";
  }
}

/**
 * An n-dimensional array on a backend (WebGPU or CPU), always contiguous row-major. Created by ops
 * (see ops/) and by `tensor()`, `zeros()` and friends. Memory: a tensor holds its storage until
 * `dispose()`; `scope(fn)` disposes everything created inside fn except what fn returns. Autograd:
 * a tensor with `requiresGrad` collects `.grad` when `backward()` runs on something computed from it.
 */
export class Tensor {
  readonly shape: readonly number[];
  readonly size: number;
  readonly dtype: DType;
  readonly storage: Storage;
  /** Leaf tensors that want gradients (parameters). Non-leaf tensors get it from their inputs. */
  requiresGrad: boolean;
  /** The accumulated gradient of a leaf tensor. */
  grad: Tensor | undefined;
  /** The op that produced this tensor, when it was recorded for autograd. */
  node: GradNode | undefined;
  /** A name for messages and checkpoints (parameter names). */
  name: string | undefined;
  private disposed = false;

  constructor(storage: Storage, shape: readonly number[], dtype: DType, requiresGrad = false) {
    for (const d of shape) {
      if (!Number.isInteger(d) || d < 0) throw new RangeError(`Invalid tensor shape ${shapeToString(shape)}`);
    }
    this.storage = storage;
    this.shape = Object.freeze([...shape]);
    this.size = shapeSize(shape);
    this.dtype = dtype;
    this.requiresGrad = requiresGrad;
    scopeStack.at(-1)?.add(this);
  }

  get backend(): Backend {
    return this.storage.backend;
  }

  get rank(): number {
    return this.shape.length;
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  /** The backend buffer (GPUBuffer or ArrayBuffer), for kernels. */
  get buffer(): unknown {
    this.assertAlive();
    return this.storage.buffer;
  }

  assertAlive(): void {
    if (this.disposed || !this.storage.alive) throw new TensorDisposedError(this.describe());
  }

  describe(): string {
    return `Tensor${this.name ? ` "${this.name}"` : ""} ${this.dtype}${shapeToString(this.shape)}`;
  }

  /** Copy the values to the CPU (f16 values widened to a Float32Array, exactly). */
  async data(): Promise<Float32Array | Int32Array> {
    this.assertAlive();
    const elementBytes = this.backend.elementBytes(this.dtype);
    const bytes = await this.backend.read(this.storage.buffer, this.size * elementBytes);
    if (this.dtype === "i32") return new Int32Array(bytes);
    // Halves on the device; a backend that emulates f16 in f32 words reads like f32.
    if (elementBytes === 2) return float16ArrayToFloat32(new Uint16Array(bytes, 0, this.size));
    return new Float32Array(bytes);
  }

  /** The values as a Float32Array (f32 and f16 tensors). */
  async floats(): Promise<Float32Array> {
    if (this.dtype === "i32") throw new TypeError(`${this.describe()} is not a float tensor`);
    return (await this.data()) as Float32Array;
  }

  /** The single value of a one-element tensor. */
  async item(): Promise<number> {
    if (this.size !== 1) throw new RangeError(`item() needs a one-element tensor, got ${this.describe()}`);
    return (await this.data())[0]!;
  }

  /** Release this tensor's hold on its storage (and its gradient's). Safe to call twice. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.storage.release();
    this.grad?.dispose();
    this.grad = undefined;
    if (this.node) {
      this.node.release();
      this.node = undefined;
    }
    for (const scope of scopeStack) scope.delete(this);
  }

  /** Detach from any enclosing scope, so the tensor outlives it (parameters, optimizer state). */
  keep(): this {
    for (const scope of scopeStack) scope.delete(this);
    return this;
  }
}

/** Run `fn`; dispose every tensor created inside that is not part of what it returns (or kept). */
export function scope<T>(fn: () => T): T {
  scopeStack.push(new Set());
  let created: Set<Tensor> | undefined;
  try {
    const result = fn();
    if (result instanceof Promise) {
      throw new TypeError("scope(fn) needs a synchronous fn; use asyncScope for async work");
    }
    created = scopeStack.pop();
    disposeExcept(created!, result);
    return result;
  } finally {
    if (!created) {
      const leftover = scopeStack.pop();
      if (leftover) for (const t of leftover) t.dispose();
    }
  }
}

/** Like scope, for async functions (tensors created by concurrent work in the meantime are swept too). */
export async function asyncScope<T>(fn: () => Promise<T>): Promise<T> {
  const own = new Set<Tensor>();
  scopeStack.push(own);
  try {
    const result = await fn();
    disposeExcept(own, result);
    return result;
  } catch (error) {
    for (const t of own) t.dispose();
    throw error;
  } finally {
    const index = scopeStack.lastIndexOf(own);
    if (index >= 0) scopeStack.splice(index, 1);
  }
}

function disposeExcept(created: Set<Tensor>, result: unknown): void {
  const keep = new Set<Tensor>();
  collectTensors(result, keep);
  for (const t of created) {
    if (!keep.has(t)) t.dispose();
  }
  // Returned tensors belong to the enclosing scope now.
  const parent = scopeStack.at(-1);
  if (parent) for (const t of keep) if (created.has(t)) parent.add(t);
}

function collectTensors(value: unknown, into: Set<Tensor>, depth = 0): void {
  if (depth > 4 || value === null || typeof value !== "object") return;
  if (value instanceof Tensor) {
    into.add(value);
    return;
  }
  const items = Array.isArray(value)
    ? value
    : value instanceof Map
      ? [...value.values()]
      : Object.values(value);
  for (const item of items) collectTensors(item, into, depth + 1);
}
