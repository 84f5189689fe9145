import { type GradNode, scope, Tensor } from "./tensor.js";

/**
 * Reverse-mode autograd on a tape of nodes. Each differentiable op records a Node holding what its
 * backward needs: aliases of the tensors it saved (so the user may dispose the originals) and its
 * inputs' nodes. Nodes are reference-counted by their output tensor and by the nodes built on them, so
 * an intermediate the user disposed stays differentiable while the loss still depends on it, and the
 * whole graph is freed as soon as nothing can reach it. `backward` frees each node's saved tensors as
 * soon as its gradient is computed, and the rest of the graph it walked at the end.
 */

let gradEnabled = true;

/** Is autograd recording right now? */
export function isGradEnabled(): boolean {
  return gradEnabled;
}

/** Run `fn` without recording (inference, optimizer steps). */
export function noGrad<T>(fn: () => T): T {
  const previous = gradEnabled;
  gradEnabled = false;
  try {
    return fn();
  } finally {
    gradEnabled = previous;
  }
}

/** `noGrad` for async work (rollouts): recording stays off until the promise settles. */
export async function noGradAsync<T>(fn: () => Promise<T>): Promise<T> {
  const previous = gradEnabled;
  gradEnabled = false;
  try {
    return await fn();
  } finally {
    gradEnabled = previous;
  }
}

/** Does an op on these inputs need recording? */
export function needsGrad(inputs: readonly (Tensor | undefined)[]): boolean {
  return gradEnabled && inputs.some((t) => t?.requiresGrad === true);
}

export type BackwardFn = (gradOutput: Tensor, saved: readonly Tensor[]) => (Tensor | null | undefined)[];

export class GraphFreedError extends Error {
  constructor(op: string) {
    super(`backward() reached the "${op}" node, whose graph was already freed by an earlier backward()`);
    this.name = "GraphFreedError";
  }
}

/** Creation order of nodes: `checkpoint` tells the nodes its function recorded from older ones. */
let nextNodeSerial = 0;

class Node implements GradNode {
  readonly serial = nextNodeSerial++;
  private refs = 1; // the output tensor
  private freed = false;
  readonly inputNodes: (Node | undefined)[];
  /** Leaf inputs that collect `.grad` (parameters). */
  readonly inputLeaves: (Tensor | undefined)[];
  readonly inputWantsGrad: boolean[];
  private saved: Tensor[];

  constructor(
    readonly op: string,
    /** The dtype of the output, which its backward receives its gradient in. */
    readonly outputDtype: Tensor["dtype"],
    inputs: readonly (Tensor | undefined)[],
    saved: readonly Tensor[],
    private readonly backwardFn: BackwardFn,
  ) {
    this.inputNodes = inputs.map((t) => (t?.node instanceof Node ? t.node : undefined));
    for (const n of this.inputNodes) n?.retain();
    this.inputLeaves = inputs.map((t) => (t?.requiresGrad && !t.node ? t : undefined));
    this.inputWantsGrad = inputs.map((t) => t?.requiresGrad === true);
    this.saved = saved.map((t) => {
      t.assertAlive();
      return new Tensor(t.storage.retain(), t.shape, t.dtype).keep();
    });
  }

  retain(): void {
    this.refs++;
  }

  release(): void {
    if (--this.refs > 0) return;
    this.free();
    for (const n of this.inputNodes) n?.release();
  }

  /** Drop the saved tensors (after backward, or when unreachable). */
  free(): void {
    if (this.freed) return;
    this.freed = true;
    for (const t of this.saved) t.dispose();
    this.saved = [];
  }

  runBackward(gradOutput: Tensor): (Tensor | null | undefined)[] {
    if (this.freed) throw new GraphFreedError(this.op);
    return this.backwardFn(gradOutput, this.saved);
  }
}

/**
 * Record `output` as produced by `op` from `inputs` (when any needs a gradient). `saved` are the tensors
 * `backward` will receive; `backward` returns one gradient per input (null where not needed), each of
 * the input's shape.
 */
export function record(
  op: string,
  output: Tensor,
  inputs: readonly (Tensor | undefined)[],
  saved: readonly Tensor[],
  backward: BackwardFn,
): Tensor {
  if (!needsGrad(inputs)) return output;
  output.requiresGrad = true;
  output.node = new Node(op, output.dtype, inputs, saved, backward);
  return output;
}

/** Nodes reachable from `root`, each after all nodes that consume its output (reverse topological order). */
function reverseTopological(root: Node): Node[] {
  const order: Node[] = [];
  const visited = new Set<Node>();
  const stack: [Node, number][] = [[root, 0]];
  visited.add(root);
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    const [node, next] = top;
    if (next < node.inputNodes.length) {
      top[1]++;
      const child = node.inputNodes[next];
      if (child && !visited.has(child)) {
        visited.add(child);
        stack.push([child, 0]);
      }
    } else {
      stack.pop();
      order.push(node);
    }
  }
  return order.reverse();
}

/** Adds `b` into `a` (a new tensor), ones like t, and t cast to a float dtype; set by ops/ to avoid an import cycle. */
let addTensors: ((a: Tensor, b: Tensor) => Tensor) | undefined;
let onesLike: ((t: Tensor) => Tensor) | undefined;
let castTensor: ((t: Tensor, dtype: "f32" | "f16") => Tensor) | undefined;
export function setAutogradHelpers(
  add: (a: Tensor, b: Tensor) => Tensor,
  ones: (t: Tensor) => Tensor,
  cast: (t: Tensor, dtype: "f32" | "f16") => Tensor,
): void {
  addTensors = add;
  onesLike = ones;
  castTensor = cast;
}

/**
 * Back-propagate from `root` (a scalar loss, or any tensor with `gradient` of its shape). Leaf tensors
 * with requiresGrad get `.grad` added to (gradient accumulation across micro-batches). The graph is
 * freed afterwards.
 */
export function backward(root: Tensor, gradient?: Tensor): void {
  root.assertAlive();
  if (!(root.node instanceof Node)) {
    throw new Error(`backward() on ${root.describe()}, which was not computed from anything requiring grad`);
  }
  if (!gradient && root.size !== 1) {
    throw new Error(`backward() without a gradient needs a one-element tensor, got ${root.describe()}`);
  }
  const add = addTensors!;
  const nodes = reverseTopological(root.node);
  const grads = new Map<Node, Tensor>();
  noGrad(() =>
    scope(() => {
      grads.set(root.node as Node, gradient ? aliasOf(gradient) : onesLike!(root).keep());
      for (const node of nodes) {
        const arrived = grads.get(node);
        if (!arrived) continue;
        grads.delete(node);
        // Every backward gets its gradient in its output's dtype (a caller's gradient may be f32 for an
        // f16 output): the kernels read their buffers as that dtype.
        const gradOutput = inDtype(arrived, node.outputDtype);
        // A scope per node: what its backward makes besides the gradients it returns goes at once.
        const inputGrads = scope(() => node.runBackward(gradOutput));
        // Nothing later in this walk reads this node's saved tensors: free them now, not after the walk,
        // so activations leave memory layer by layer as the gradient moves towards the inputs.
        node.free();
        // A backward may pass its output gradient through, or return one tensor for two inputs
        // (x + x): every use after the first gets its own alias so ownership stays simple.
        const used = new Set<Tensor>();
        inputGrads.forEach((returned, i) => {
          if (!returned || !node.inputWantsGrad[i]) return;
          const g = (used.has(returned) ? aliasOf(returned) : returned).keep();
          used.add(returned);
          const target = node.inputNodes[i];
          if (target) {
            const existing = grads.get(target);
            grads.set(target, existing ? accumulate(add, existing, g) : g);
          } else {
            const leaf = node.inputLeaves[i]!;
            leaf.grad = leaf.grad ? accumulate(add, leaf.grad, g) : g;
          }
        });
        for (const g of inputGrads) if (g && !used.has(g)) g.dispose();
        if (!used.has(gradOutput)) gradOutput.dispose();
      }
    }),
  );
  for (const g of grads.values()) g.dispose();
  for (const node of nodes) node.free();
}

/** `g` itself when it has `dtype`, else a cast of it (g is disposed). */
function inDtype(g: Tensor, dtype: Tensor["dtype"]): Tensor {
  if (g.dtype === dtype || g.dtype === "i32" || dtype === "i32") return g;
  const converted = castTensor!(g, dtype).keep();
  g.dispose();
  return converted;
}

function accumulate(add: (a: Tensor, b: Tensor) => Tensor, a: Tensor, b: Tensor): Tensor {
  const sum = add(a, b).keep();
  a.dispose();
  b.dispose();
  return sum;
}

function aliasOf(t: Tensor): Tensor {
  t.assertAlive();
  return new Tensor(t.storage.retain(), t.shape, t.dtype).keep();
}

/** Run `fn` with recording on, even inside `noGrad` (recomputation during `backward`). */
function withGrad<T>(fn: () => T): T {
  const previous = gradEnabled;
  gradEnabled = true;
  try {
    return fn();
  } finally {
    gradEnabled = previous;
  }
}

/** A tensor on `t`'s storage with no node: the start of a graph of its own. */
function detached(t: Tensor, requiresGrad: boolean): Tensor {
  t.assertAlive();
  return new Tensor(t.storage.retain(), t.shape, t.dtype, requiresGrad);
}

/**
 * Leaf tensors (parameters) that the graph from `root` sends gradients to, besides `standIns`. Throws when
 * the graph reaches a node older than `firstSerial`: `fn` read a tensor computed with grad outside it.
 */
function leavesReached(root: Node, standIns: readonly Tensor[], firstSerial: number): Tensor[] {
  const leaves = new Set<Tensor>();
  for (const node of reverseTopological(root)) {
    if (node.serial < firstSerial) {
      throw new Error(
        `checkpoint(): the function reads the output of a "${node.op}" recorded outside it; ` +
          "pass that tensor in the inputs so its gradient can flow",
      );
    }
    node.inputLeaves.forEach((leaf, i) => {
      if (leaf && node.inputWantsGrad[i] && !standIns.includes(leaf)) leaves.add(leaf);
    });
  }
  return [...leaves];
}

/**
 * Activation recomputation (gradient checkpointing): `fn(inputs)` runs now, but of everything it computes
 * only its output stays in memory, and the tape gets one node that saves just `inputs`. When `backward`
 * reaches that node it runs `fn` again with recording on and back-propagates through the fresh graph —
 * one extra forward of `fn` for the memory of its intermediates. `fn` must compute the same thing both
 * times (no randomness of its own); it may read parameters (leaf tensors) from its closure, whose
 * gradients are accumulated as usual, but every tensor computed with gradients outside it must come in
 * through `inputs`. Without grad recording this is just `fn(inputs)`.
 */
export function checkpoint(fn: (inputs: Tensor[]) => Tensor, inputs: readonly Tensor[]): Tensor {
  if (!gradEnabled) return fn([...inputs]);
  const wantsGrad = inputs.map((t) => t.requiresGrad);
  // Record this first run too: its graph names the parameters that need gradients. The graph is
  // dropped at once, and with it every intermediate; only the output's values are kept.
  const firstSerial = nextNodeSerial;
  const { output, leaves, differentiable } = scope(() => {
    const standIns = inputs.map((t, i) => detached(t, wantsGrad[i]!));
    const result = fn(standIns);
    if (!(result instanceof Tensor)) throw new TypeError("checkpoint(): the function must return one tensor");
    if (!(result.node instanceof Node))
      return { output: result, leaves: [] as Tensor[], differentiable: false };
    const reached = leavesReached(result.node, standIns, firstSerial);
    return { output: detached(result, false), leaves: reached, differentiable: true };
  });
  if (!differentiable) return output;
  return record("checkpoint", output, [...inputs, ...leaves], inputs, (gradOutput, saved) => {
    // The recomputed graph's backward adds into the parameters' `.grad`; park what they hold so that
    // this node's share comes back as its result and the outer backward accumulates it like any other.
    const parked = leaves.map((leaf) => leaf.grad);
    for (const leaf of leaves) leaf.grad = undefined;
    try {
      const inputGrads = withGrad(() =>
        scope(() => {
          const standIns = saved.map((t, i) => detached(t, wantsGrad[i]!));
          // Its own scope: the recomputed graph alone holds the intermediates, and frees them as it goes.
          const recomputed = scope(() => fn(standIns));
          if (recomputed.node instanceof Node) backward(recomputed, gradOutput);
          return standIns.map((s) => {
            const g = s.grad;
            s.grad = undefined; // the stand-in is disposed with the scope, its gradient is handed on
            return g ?? null;
          });
        }),
      );
      return [...inputGrads, ...leaves.map((leaf) => leaf.grad ?? null)];
    } catch (error) {
      for (const leaf of leaves) leaf.grad?.dispose();
      throw error;
    } finally {
      leaves.forEach((leaf, i) => {
        leaf.grad = parked[i];
      });
    }
  });
}
