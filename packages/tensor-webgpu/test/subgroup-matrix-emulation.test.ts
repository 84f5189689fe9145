import { describe, expect, it } from "vitest";
import { GpuContext } from "../src/gpu/context.js";
import type { SubgroupMatrixConfig } from "../src/gpu/device.js";
import {
  emulateSubgroupMatrices,
  SubgroupMatrixEmulationError,
} from "../src/gpu/subgroup-matrix-emulation.js";
import { packF16Ref } from "../src/reference/layout.js";
import { expectClose, halves, randomArray, testContext } from "./helpers.js";

// NVIDIA's f16 shapes (M x N x K): square and oblong fragments, so a swapped row and column count shows.
const SHAPES = [
  { M: 16, N: 16, K: 16 },
  { M: 16, N: 8, K: 16 },
  { M: 16, N: 8, K: 8 },
];
const configs: SubgroupMatrixConfig[] = SHAPES.map((s) => ({
  componentType: "f16",
  resultType: "f32",
  ...s,
}));

// On an adapter with real subgroup matrices the same kernel runs on them: a check of the semantics the
// emulation copies.
const real = (await testContext()).info.features.subgroupMatrixConfigs;
let emulated: Promise<GpuContext> | undefined;
const matrixContext = (): Promise<GpuContext> => {
  if (real.length > 0) return testContext();
  emulated ??= GpuContext.create({ emulateSubgroupMatrices: configs });
  return emulated;
};

/**
 * The layouts under test. A: M x 2K at offset 3, row-major with row stride 2K + 5. B: 2K x N stored
 * column-major (element (k, j) at 7 + j·(2K + 3) + k). C: the M x N sum of two fragment products, stored
 * row-major at 2 (stride N + 4) and column-major at 1000 (stride M + 1).
 */
function kernel({ M, N, K }: (typeof SHAPES)[number], lanes: number): string {
  const left = `subgroup_matrix_left<f16, ${K}, ${M}>`;
  const right = `subgroup_matrix_right<f16, ${N}, ${K}>`;
  const result = `subgroup_matrix_result<f32, ${N}, ${M}>`;
  return /* wgsl */ `enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read> b: array<f16>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(${lanes})
fn main() {
  var acc = ${result}();
  for (var step = 0u; step < 2u; step++) {
    let l = subgroupMatrixLoad<${left}>(&a, 3u + step * ${K}u, false, ${2 * K + 5}u);
    let r = subgroupMatrixLoad<${right}>(&b, 7u + step * ${K}u, true, ${2 * K + 3}u);
    acc = subgroupMatrixMultiplyAccumulate(l, r, acc);
  }
  subgroupMatrixStore(&out, 2u, acc, false, ${N + 4}u);
  subgroupMatrixStore(&out, 1000u, acc, true, ${M + 1}u);
}`;
}

const upload = (ctx: GpuContext, values: Float32Array) =>
  ctx.upload(packF16Ref({ x: values, out: new Uint32Array(Math.ceil(values.length / 2)), n: values.length }));

describe("subgroup matrices emulated with subgroup operations", () => {
  it.each(SHAPES.map((s) => [`${s.M}x${s.N}x${s.K}`, s] as const))(
    "%s: loads (row- and column-major, offsets, strides), two multiply-adds, both stores",
    async (_, shape) => {
      const ctx = await matrixContext();
      if (
        !ctx.info.features.subgroupMatrixConfigs.some(
          (c) => c.M === shape.M && c.N === shape.N && c.K === shape.K,
        )
      )
        return; // a card without this shape
      const { M, N, K } = shape;
      const a = halves(randomArray(3 + M * (2 * K + 5), 1));
      const b = halves(randomArray(7 + N * (2 * K + 3), 2));
      const outLength = 1000 + N * (M + 1);
      const out = ctx.upload(new Float32Array(outLength).fill(-7));
      const pipeline = ctx.pipeline("emulation test", kernel(shape, ctx.info.subgroupSizes.max));
      ctx.dispatch(pipeline, [upload(ctx, a), upload(ctx, b), out], undefined, [1]);
      const actual = new Float32Array(await ctx.read(out, outLength * 4));

      const expected = new Float32Array(outLength).fill(-7);
      for (let i = 0; i < M; i++) {
        for (let j = 0; j < N; j++) {
          let sum = 0;
          for (let k = 0; k < 2 * K; k++) sum += a[3 + i * (2 * K + 5) + k]! * b[7 + j * (2 * K + 3) + k]!;
          expected[2 + i * (N + 4) + j] = sum;
          expected[1000 + j * (M + 1) + i] = sum;
        }
      }
      expectClose(actual, expected, 1e-5, 1e-5);
    },
  );
});

describe("the rewrite", () => {
  const shape = SHAPES[0]!;
  const source = kernel(shape, 8);

  it("leaves code without subgroup matrices as it is", () => {
    const plain = "@compute @workgroup_size(1) fn main() {}";
    expect(emulateSubgroupMatrices(plain, 8)).toBe(plain);
  });

  it("removes the extension and every matrix builtin, and gives main the lane", () => {
    const code = emulateSubgroupMatrices(source, 8);
    expect(code).not.toMatch(/chromium_experimental_subgroup_matrix|subgroupMatrix|subgroup_matrix_/);
    expect(code).toMatch(/fn main\(@builtin\(subgroup_invocation_id\) sgmLaneId: u32, \)/);
    // Each lane holds 256 / 8 elements of a 16 x 16 matrix.
    expect(code).toContain("struct SgmResult_f32_16x16 { v: array<f32, 32> }");
  });

  it("loads through a buffer view by repeating the view's binding in the load's helper", () => {
    const binding = "let tile = bufferView<array<f16, 4096>>(&stages, 0);";
    const viewed = source
      .replace("fn main() {", `var<workgroup> stages: buffer<8192>;\nfn main() {\n  ${binding}`)
      .replace("(&a, 3u", "(tile, 3u");
    const code = emulateSubgroupMatrices(viewed, 8);
    const helper = code.slice(code.indexOf("fn sgmLoad_SgmLeft_f16_16x16_tile("));
    expect(helper.slice(0, helper.indexOf("}\n"))).toContain(binding);
    expect(code).toMatch(/sgmLoad_SgmLeft_f16_16x16_tile\(\s*3u/);
  });

  it("keeps a lane parameter main already has", () => {
    const withLane = source.replace("fn main()", "fn main(@builtin(subgroup_invocation_id) lane: u32)");
    expect(emulateSubgroupMatrices(withLane, 8)).toContain("sgmLane = lane;");
  });

  it.each([
    [
      "a multiply without accumulator",
      source.replace(
        "acc = subgroupMatrixMultiplyAccumulate(l, r, acc);",
        "acc = subgroupMatrixMultiply<f32>(l, r);",
      ),
      /subgroupMatrixMultiply is not emulated/,
    ],
    ["a load through a struct member", source.replace("(&a, 3u", "(&(s.a), 3u"), /a load from "s.a"/],
    [
      "a load through a pointer that is not a buffer view",
      source.replace("(&a, 3u", "(a, 3u"),
      /a load from "a", which is neither &array nor a buffer view/,
    ],
    [
      "a load from a function variable",
      source.replace("(&a, 3u", "(&local, 3u").replace("var acc", "var local: array<f16, 4>;\n  var acc"),
      /"local" is not a module-scope array/,
    ],
    [
      "two result types for one store",
      source.replace("fn main()", "fn f() { let x = subgroup_matrix_result<f16, 16, 16>(); }\nfn main()"),
      /exactly one result matrix type in the kernel, found 2/,
    ],
    [
      "a matrix that does not spread over the lanes",
      source.replaceAll("16", "2"),
      /does not spread evenly over 8 lanes/,
    ],
    ["a kernel without main", source.replace("fn main()", "fn entry()"), /no entry point named main/],
  ])("refuses %s, naming it", (_, code, message) => {
    expect(() => emulateSubgroupMatrices(code, 8)).toThrow(SubgroupMatrixEmulationError);
    expect(() => emulateSubgroupMatrices(code, 8)).toThrow(message);
  });

  it("is used only where the adapter has no subgroup matrices of its own", async () => {
    const ctx = await matrixContext();
    expect(ctx.info.features.subgroupMatrixEmulated).toBe(real.length === 0);
    expect((await testContext()).info.features.subgroupMatrixEmulated).toBe(false);
  });
});
