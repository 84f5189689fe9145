/**
 * SiLU and SwiGLU (Qwen2's MLP: down(silu(gate) * up)), element-wise, and their backward passes.
 *
 * Scheme: one invocation per vec4 (per element when n % 4 != 0), 64 per workgroup, spread over a 2D grid
 * for large n. sigmoid(x) = 1 / (1 + exp(-x)) saturates cleanly at both ends (exp overflows to +inf,
 * giving 0), so no clamping is needed. Outputs must not alias inputs. Arrays larger than one storage
 * binding are processed in batches (windows starting `shift` elements before the batch). The element-wise
 * kernels also run on f16 buffers (every buffer of a call one dtype): they widen at the loads, compute in
 * f32 and round at the stores.
 */
import { type GpuContext, grid } from "../gpu/context.js";
import { batches, batchWindows, maxBindingBytes } from "./binding-windows.js";
import { enableFor, type FloatStorage, loadF32, storageBytes, storeAs, vectorOf } from "./elementwise.js";
import { cachedBuilder } from "./wgsl/code-cache.js";

const LANES = 64;

const COMMON = (width: 1 | 4) => /* wgsl */ `
alias V = ${width === 4 ? "vec4<f32>" : "f32"};
struct Params { count: u32, shift: u32 }

fn sigmoid(x: V) -> V { return 1.0 / (1.0 + exp(-x)); }

// d silu / dx = s * (1 + x * (1 - s))
fn siluDerivative(x: V) -> V {
  let s = sigmoid(x);
  return s * (1.0 + x * (1.0 - s));
}`;

const ENTRY = /* wgsl */ `
@compute @workgroup_size(${LANES})
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let index = id.x + id.y * groups.x * ${LANES}u;
  if (index >= params.count) { return; }
  let i = params.shift + index;`;

/**
 * Declares read-only inputs, then outputs, then the params uniform, bound in that order. Each input is
 * loaded once into an f32 `let` of its name, and `body` assigns each output's f32 value to `<name>Value`.
 */
function buildShader(
  width: 1 | 4,
  inputs: string[],
  outputs: string[],
  body: string,
  storage: FloatStorage,
): string {
  const element = vectorOf(storage, width);
  const declarations = [
    ...inputs.map((name) => `var<storage, read> ${name}: array<${element}>;`),
    ...outputs.map((name) => `var<storage, read_write> ${name}: array<${element}>;`),
    "var<uniform> params: Params;",
  ].map((declaration, binding) => `@group(0) @binding(${binding}) ${declaration}`);
  const loads = inputs.map((name) => `let ${name}Value = ${loadF32(storage, width, `${name}[i]`)};`);
  const stores = outputs.map((name) => `${name}[i] = ${storeAs(storage, width, `${name}Value`)};`);
  return `${enableFor(storage)}${COMMON(width)}\n${declarations.join("\n")}\n${ENTRY}
  ${loads.join("\n  ")}
  ${body}
  ${stores.join("\n  ")}
}`;
}

const KERNELS = {
  silu: { inputs: ["x"], outputs: ["out"], body: "let outValue = xValue * sigmoid(xValue);" },
  siluBackward: {
    inputs: ["x", "dOut"],
    outputs: ["dX"],
    body: "let dXValue = dOutValue * siluDerivative(xValue);",
  },
  swiglu: {
    inputs: ["gate", "up"],
    outputs: ["out"],
    body: "let outValue = gateValue * sigmoid(gateValue) * upValue;",
  },
  swigluBackward: {
    inputs: ["gate", "up", "dOut"],
    outputs: ["dGate", "dUp"],
    body: `let s = sigmoid(gateValue);
  let dGateValue = dOutValue * upValue * s * (1.0 + gateValue * (1.0 - s));
  let dUpValue = dOutValue * gateValue * s;`,
  },
} as const;

function run(
  ctx: GpuContext,
  name: keyof typeof KERNELS,
  buffers: GPUBuffer[],
  n: number,
  storage: FloatStorage = "f32",
): void {
  if (n === 0) return;
  const { inputs, outputs, body } = KERNELS[name];
  const width: 1 | 4 = n % 4 === 0 ? 4 : 1;
  const elementBytes = storageBytes(storage);
  const label = storage === "f16" ? `${name} f16` : name;
  const pipeline = ctx.pipeline(label, shader(width, [...inputs], [...outputs], body, storage));
  for (const batch of batches(ctx, n, elementBytes, width)) {
    const { bindings, shift } = batchWindows(ctx, buffers, batch, elementBytes, width * elementBytes);
    const count = Math.ceil(batch.count / width);
    ctx.dispatch(pipeline, bindings, new Uint32Array([count, shift]), grid(Math.ceil(count / LANES)));
  }
}

/** out = x * sigmoid(x), n elements. */
export function silu(ctx: GpuContext, a: { x: GPUBuffer; out: GPUBuffer; n: number }): void {
  run(ctx, "silu", [a.x, a.out], a.n);
}

/** dX = dOut * silu'(x), silu'(x) = s (1 + x (1 - s)), s = sigmoid(x). */
export function siluBackward(
  ctx: GpuContext,
  a: { x: GPUBuffer; dOut: GPUBuffer; dX: GPUBuffer; n: number },
): void {
  run(ctx, "siluBackward", [a.x, a.dOut, a.dX], a.n);
}

/** out = silu(gate) * up, n elements, all stored as `dtype` (default f32). */
export function swiglu(
  ctx: GpuContext,
  a: { gate: GPUBuffer; up: GPUBuffer; out: GPUBuffer; n: number; dtype?: FloatStorage },
): void {
  run(ctx, "swiglu", [a.gate, a.up, a.out], a.n, a.dtype);
}

/**
 * swiglu of a fused gate/up projection's output: gateUp [rows, 2·width] holds each row's gate, then its
 * up; out [rows, width]. The same arithmetic per element as \`swiglu\` (vec4 when width % 4 == 0), halves
 * widened as they are read and rounded once on store. One invocation per output vector, so no split of
 * gateUp is needed.
 */
function buildSwigluPackedShader(width: 1 | 4, storage: FloatStorage): string {
  const element = storage === "f32" ? "V" : vectorOf(storage, width);
  return /* wgsl */ `${enableFor(storage)}${COMMON(width)}
@group(0) @binding(0) var<storage, read> gateUp: array<${element}>;
@group(0) @binding(1) var<storage, read_write> out: array<${element}>;
struct PackedParams { count: u32, rowVectors: u32 }
@group(0) @binding(2) var<uniform> params: PackedParams;

@compute @workgroup_size(${LANES})
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let i = id.x + id.y * groups.x * ${LANES}u;
  if (i >= params.count) { return; }
  let rowVectors = params.rowVectors;
  let gateIndex = i + (i / rowVectors) * rowVectors; // row r's gate starts at 2·r·rowVectors
  let g = ${loadF32(storage, width, "gateUp[gateIndex]")};
  out[i] = ${storeAs(storage, width, `g * sigmoid(g) * ${loadF32(storage, width, "gateUp[gateIndex + rowVectors]")}`)};
}`;
}

/**
 * out [rows, width] = silu(gate) * up for a packed gateUp [rows, 2·width] (gate then up in each row), both
 * stored as \`dtype\` (default f32). Returns false, recording nothing, when gateUp does not fit one storage
 * binding.
 */
export function swigluPacked(
  ctx: GpuContext,
  a: { gateUp: GPUBuffer; out: GPUBuffer; rows: number; width: number; dtype?: FloatStorage },
): boolean {
  const storage = a.dtype ?? "f32";
  const n = a.rows * a.width;
  if (n === 0) return true;
  if (2 * n * storageBytes(storage) > maxBindingBytes(ctx)) return false;
  const width: 1 | 4 = a.width % 4 === 0 ? 4 : 1;
  const count = n / width;
  ctx.dispatch(
    ctx.pipeline(
      storage === "f16" ? "swiglu packed f16" : "swiglu packed",
      swigluPackedShader(width, storage),
    ),
    [a.gateUp, a.out],
    new Uint32Array([count, a.width / width]),
    grid(Math.ceil(count / LANES)),
  );
  return true;
}

/** dGate = dOut * up * silu'(gate); dUp = dOut * silu(gate). Both written; all stored as `dtype`. */
export function swigluBackward(
  ctx: GpuContext,
  a: {
    gate: GPUBuffer;
    up: GPUBuffer;
    dOut: GPUBuffer;
    dGate: GPUBuffer;
    dUp: GPUBuffer;
    n: number;
    dtype?: FloatStorage;
  },
): void {
  run(ctx, "swigluBackward", [a.gate, a.up, a.dOut, a.dGate, a.dUp], a.n, a.dtype);
}

// The kernels' WGSL, built once per distinct parameters.
const shader = cachedBuilder(buildShader);
const swigluPackedShader = cachedBuilder(buildSwigluPackedShader);
