import { describe, expect, it } from "vitest";
import type { KernelResult } from "../../../packages/tensor-webgpu/bench/run-cases.js";
import { comparisonRows, type ModelSummary, type PeerResults } from "../src/report.js";

const label = "qwen0.5b T=512 14/2x64 b=1";
const kernel = (name: string, gflops: number): KernelResult => ({
  family: "attention",
  name,
  msPerIteration: 1,
  msRange: [1, 1],
  dispatchesPerIteration: 1,
  gflops,
});
const peer: PeerResults = {
  device: "cuda",
  matmul: [],
  attention: [
    { label, pass: "fwd", ms: 1, tflops: 12 },
    { label, pass: "fwd+bwd", ms: 1, tflops: 10 },
  ],
  model: [],
};

describe("the comparison table's attention rows", () => {
  it("compare both forms with the same SDPA figure, when the matmul form ran", () => {
    const kernels = [
      kernel(`attention fwd ${label}`, 2400),
      kernel(`attention fwd ${label} [matmul form]`, 6000),
      kernel(`attention fwd+bwd ${label}`, 1000),
      kernel(`attention fwd+bwd ${label} [matmul form]`, 4000),
    ];
    const rows = comparisonRows(kernels, undefined, peer, [], [label]);
    expect(rows.map((r) => [r.case, r.peerMode, r.ratio?.toFixed(3)])).toEqual([
      [`attention fwd ${label}`, "SDPA f32", "0.200"],
      [`attention fwd ${label} [matmul form]`, "SDPA f32", "0.500"],
      [`attention fwd+bwd ${label}`, "SDPA f32", "0.100"],
      [`attention fwd+bwd ${label} [matmul form]`, "SDPA f32", "0.400"],
    ]);
  });

  it("compare attention on halves with SDPA in bf16, and f32 with f32 whichever comes first", () => {
    const withBf16: PeerResults = {
      ...peer,
      attention: [
        { label, pass: "fwd", dtype: "bf16", ms: 1, tflops: 40 },
        { label, pass: "fwd+bwd", dtype: "bf16", ms: 1, tflops: 20 },
        ...peer.attention.map((r) => ({ ...r, dtype: "f32" })),
      ],
    };
    const kernels = [
      kernel(`attention fwd ${label}`, 2400),
      kernel(`attention fwd ${label} [f16]`, 4000),
      kernel(`attention fwd+bwd ${label}`, 1000),
      kernel(`attention fwd+bwd ${label} [f16]`, 2000),
    ];
    const rows = comparisonRows(kernels, undefined, withBf16, [], [label]);
    expect(rows.map((r) => [r.case, r.peerMode, r.ratio?.toFixed(3)])).toEqual([
      [`attention fwd ${label}`, "SDPA f32", "0.200"],
      [`attention fwd ${label} [f16]`, "SDPA bf16", "0.100"],
      [`attention fwd+bwd ${label}`, "SDPA f32", "0.100"],
      [`attention fwd+bwd ${label} [f16]`, "SDPA bf16", "0.100"],
    ]);
  });

  it("leave the matmul form out where it did not run", () => {
    const rows = comparisonRows([kernel(`attention fwd+bwd ${label}`, 1000)], undefined, peer, [], [label]);
    expect(rows.map((r) => r.case)).toEqual([`attention fwd ${label}`, `attention fwd+bwd ${label}`]);
  });
});

describe("the comparison table's model rows", () => {
  const model: ModelSummary = {
    size: "qwen0.5b",
    dtype: "f16",
    batch: 4,
    seq: 512,
    decodeBatch: 16,
    newTokens: 32,
    trainTokensPerSecond: [5000],
    decodeTokensPerSecond: [400],
    peakBytes: 0,
  };
  const rowsWith = (decodeMode: string | undefined) =>
    comparisonRows(
      [],
      model,
      {
        ...peer,
        model: [
          { dtype: "f32", threads: 1, train: 10000, decode: 1000, peakBytes: 0 },
          { dtype: "bf16", threads: 1, train: 20000, decode: 800, decodeMode, peakBytes: 0 },
        ],
      },
      [],
      [],
    );

  it("name how the peer's fastest bf16 decode ran: on a bf16 copy of the weights, or under autocast", () => {
    const decodeRows = (mode: string | undefined) =>
      rowsWith(mode)
        .filter((r) => r.case.includes("decode"))
        .map((r) => [r.peerMode, r.ratio?.toFixed(3)]);
    expect(decodeRows("bf16 weights")).toEqual([
      ["eager f32, KV cache", "0.400"],
      ["eager, bf16 weights, KV cache", "0.500"],
    ]);
    // Older reports have no decodeMode: their peer decoded under autocast.
    for (const mode of ["autocast", undefined])
      expect(decodeRows(mode)[1]).toEqual(["eager, bf16 autocast, KV cache", "0.500"]);
    // Training stays under autocast whatever the decode ran on.
    const train = rowsWith("bf16 weights").filter((r) => r.case.includes("forward+backward"));
    expect(train.map((r) => r.peerMode)).toEqual(["eager f32", "eager, bf16 autocast"]);
  });
});
