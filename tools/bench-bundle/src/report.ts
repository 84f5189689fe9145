/** The portable benchmark's markdown: this engine beside PyTorch per case, then every kernel measured. */
import type { RejectedKernel } from "@ragen/tensor-webgpu";
import { type KernelResult, median } from "../../../packages/tensor-webgpu/bench/run-cases.js";

export interface PeerResults {
  device: string;
  gpu?: string;
  torch?: string;
  matmul: { label: string; mode: string; ms: number; tflops: number; threads?: number }[];
  /** `dtype`: "f32", or "bf16" (the peer of attention on halves); absent in older reports: f32. */
  attention: { label: string; pass: string; dtype?: string; ms: number; tflops: number; threads?: number }[];
  /**
   * `decodeMode`: how the peer's fastest decode ran ("autocast", or for bf16 "bf16 weights": a bf16 copy
   * without autocast); absent in older reports: autocast.
   */
  model: {
    dtype: string;
    threads: number;
    train: number;
    decode: number;
    decodeMode?: string;
    peakBytes: number;
  }[];
}

/** Every kernel that could run one PyTorch-compared matmul shape, fastest first, and those left out (--tune). */
export interface TunedMatmulResult {
  label: string;
  dtype: "f32" | "f16";
  candidates: { kernel: string; ms: number; tflops: number }[];
  rejected: RejectedKernel[];
}

export interface ModelSummary {
  size: string;
  /** The weights' element type (f16: mixed precision; absent in older reports: f32). */
  dtype?: "f32" | "f16";
  batch: number;
  seq: number;
  decodeBatch: number;
  newTokens: number;
  trainTokensPerSecond: number[];
  decodeTokensPerSecond: number[];
  peakBytes: number;
  /** The same with the kernels tuned to the model's problems (--tune). */
  tuned?: { trainTokensPerSecond: number[]; decodeTokensPerSecond: number[] };
  /** Decoding with separate projections, and with LoRA adapters merged and as separate products. */
  projections?: {
    separate: DecodeFigures;
    lora?: { rank: number; merged: DecodeFigures; separate: DecodeFigures };
  };
}

interface DecodeFigures {
  tokensPerSecond: number;
  dispatchesPerStep: number;
}

export interface StarPOSummary {
  options: { groups: number; groupSize: number; promptLength: number; newTokens: number };
  /** The models' weights (absent in older reports: f32). */
  dtype?: "f32" | "f16";
  seconds: Record<string, number>;
  generatedTokens: number;
  trainedTrajectories: number;
  peakBytes: number;
}

export interface ComparisonRow {
  case: string;
  engine: string;
  peer: string;
  peerMode: string;
  /** engine / peer: above 1 the engine is faster. */
  ratio: number | undefined;
}

const fmt = (value: number, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : "-");
/** A rate in TFLOP/s, or in GFLOP/s below one TFLOP/s (CPUs, small kernels). */
export const rate = (tflops: number) =>
  tflops >= 1 ? `${fmt(tflops, 2)} TFLOP/s` : `${fmt(tflops * 1000, 1)} GFLOP/s`;

export function comparisonRows(
  kernels: readonly KernelResult[],
  model: ModelSummary | undefined,
  peer: PeerResults | undefined,
  matmulLabels: readonly string[],
  attentionLabels: readonly string[],
  tunedMatmuls: readonly TunedMatmulResult[] = [],
): ComparisonRow[] {
  const rows: ComparisonRow[] = [];
  const engine = (name: string) => kernels.find((k) => k.name === name && k.gflops !== undefined);
  const add = (name: string, tflops: number | undefined, peerTflops: number | undefined, mode: string) => {
    if (tflops === undefined && peerTflops === undefined) return;
    rows.push({
      case: name,
      engine: tflops === undefined ? "-" : rate(tflops),
      peer: peerTflops === undefined ? "-" : rate(peerTflops),
      peerMode: mode,
      ratio: tflops !== undefined && peerTflops !== undefined ? tflops / peerTflops : undefined,
    });
  };
  for (const label of matmulLabels) {
    const f32 = engine(`${label} [auto]`);
    const f16 = engine(`${label} [auto f16]`);
    const p = (mode: string) => peer?.matmul.find((r) => r.label === label && r.mode === mode)?.tflops;
    const t = (k: KernelResult | undefined) => (k?.gflops !== undefined ? k.gflops / 1000 : undefined);
    add(`matmul ${label} f32`, t(f32), p("f32"), "f32, TF32 off");
    if (peer?.device === "cuda") add(`matmul ${label} f32`, t(f32), p("tf32"), "f32, TF32 on");
    if (f16 && peer?.device === "cuda") {
      add(`matmul ${label} f16`, t(f16), p("bf16"), "bf16");
      add(`matmul ${label} f16`, t(f16), p("f16"), "f16");
    }
    for (const tuned of tunedMatmuls.filter((r) => r.label === label)) {
      const best = tuned.candidates[0];
      if (!best) continue;
      const name = `matmul ${label} ${tuned.dtype}, fastest kernel (${best.kernel})`;
      if (tuned.dtype === "f32") add(name, best.tflops, p("f32"), "f32, TF32 off");
      else if (peer?.device === "cuda") add(name, best.tflops, p("bf16"), "bf16");
    }
  }
  for (const label of attentionLabels) {
    // Both forms: the tiled kernels ("auto" without tuning) and the matmul form, forced; and on halves,
    // beside SDPA in bf16.
    for (const [pass, form] of ["fwd", "fwd+bwd"].flatMap((p) => [
      [p, ""],
      [p, " [matmul form]"],
      [p, " [f16]"],
    ])) {
      const k = engine(`attention ${pass} ${label}${form}`);
      if (form && !k) continue;
      const dtype = form === " [f16]" ? "bf16" : "f32";
      const p = peer?.attention.find(
        (r) => r.label === label && r.pass === pass && (r.dtype ?? "f32") === dtype,
      );
      add(
        `attention ${pass} ${label}${form}`,
        k?.gflops !== undefined ? k.gflops / 1000 : undefined,
        p?.tflops,
        `SDPA ${dtype}`,
      );
    }
  }
  if (model) {
    const train = median(model.trainTokensPerSecond);
    const decode = median(model.decodeTokensPerSecond);
    const modes = [...new Set(peer?.model.map((r) => r.dtype) ?? [])];
    const best = (dtype: string, key: "train" | "decode") =>
      Math.max(...(peer?.model.filter((r) => r.dtype === dtype).map((r) => r[key]) ?? []));
    const threads = (dtype: string, key: "train" | "decode") => {
      const rowsOf = peer?.model.filter((r) => r.dtype === dtype) ?? [];
      const top = rowsOf.find((r) => r[key] === best(dtype, key));
      return peer?.device === "cpu" && top ? `, ${top.threads} thread${top.threads > 1 ? "s" : ""}` : "";
    };
    const weights = model.dtype === "f16" ? ", f16 weights" : "";
    const label = `${model.size} forward+backward ${model.batch}x${model.seq}${weights}`;
    const decodeLabel = `${model.size} decode batch ${model.decodeBatch}, ${model.newTokens} tokens${weights}`;
    const sides = [{ suffix: "", train, decode }];
    if (model.tuned)
      sides.push({
        suffix: ", tuned kernels",
        train: median(model.tuned.trainTokensPerSecond),
        decode: median(model.tuned.decodeTokensPerSecond),
      });
    if (modes.length === 0) {
      for (const side of sides) {
        const none = { peer: "-", peerMode: "-", ratio: undefined };
        rows.push({ case: `${label}${side.suffix}`, engine: `${fmt(side.train)} tokens/s`, ...none });
        rows.push({ case: `${decodeLabel}${side.suffix}`, engine: `${fmt(side.decode)} tokens/s`, ...none });
      }
    }
    for (const dtype of modes) {
      const mode = dtype === "bf16" ? "eager, bf16 autocast" : "eager f32";
      const pt = best(dtype, "train");
      const pd = best(dtype, "decode");
      const decodeRow = peer?.model.find((r) => r.dtype === dtype && r.decode === pd);
      const decodeMode = decodeRow?.decodeMode === "bf16 weights" ? "eager, bf16 weights" : mode;
      for (const side of sides) {
        rows.push({
          case: `${label}${side.suffix}`,
          engine: `${fmt(side.train)} tokens/s`,
          peer: `${fmt(pt)} tokens/s`,
          peerMode: `${mode}${threads(dtype, "train")}`,
          ratio: side.train / pt,
        });
        rows.push({
          case: `${decodeLabel}${side.suffix}`,
          engine: `${fmt(side.decode)} tokens/s`,
          peer: `${fmt(pd)} tokens/s`,
          peerMode: `${decodeMode}, KV cache${threads(dtype, "decode")}`,
          ratio: side.decode / pd,
        });
      }
    }
    const projections = model.projections;
    const engineOnly = (what: string, d: DecodeFigures) =>
      rows.push({
        case: `${decodeLabel}, ${what} (${d.dispatchesPerStep.toFixed(0)} dispatches a step)`,
        engine: `${fmt(d.tokensPerSecond)} tokens/s`,
        peer: "-",
        peerMode: "-",
        ratio: undefined,
      });
    if (projections) {
      engineOnly("separate projections", projections.separate);
      const lora = projections.lora;
      if (lora) {
        engineOnly(`LoRA r=${lora.rank} merged into stacked weights`, lora.merged);
        engineOnly(`LoRA r=${lora.rank} as separate products`, lora.separate);
      }
    }
  }
  return rows;
}

export function renderMarkdown(
  report: {
    date: string;
    adapter: { vendor: string; architecture: string; device: string; description: string };
    /** False in the reports written along the way, before the run finished. */
    complete?: boolean;
    peer?: PeerResults;
    kernels: readonly KernelResult[];
    model?: ModelSummary;
    starpo?: StarPOSummary;
    /** The same step on matmul kernels tuned to the shapes of the first (--tune). */
    starpoTuned?: StarPOSummary;
    /** Every matmul kernel on each PyTorch-compared shape (--tune). */
    tunedMatmuls?: readonly TunedMatmulResult[];
  },
  rows: readonly ComparisonRow[],
): string {
  const a = report.adapter;
  const lines = [
    `# RAGEN.ts benchmark, ${report.date.slice(0, 10)}`,
    "",
    `- adapter: ${[a.vendor, a.architecture, a.device, a.description].filter(Boolean).join(" / ")}`,
    `- PyTorch: ${report.peer ? `${report.peer.torch ?? "?"} on ${report.peer.gpu ?? report.peer.device}` : "not run"}`,
  ];
  if (report.complete === false) lines.push("- partial: written before the run finished");
  if (report.model)
    lines.push(
      `- model step peak memory (buffer pool): ${(report.model.peakBytes / 2 ** 30).toFixed(2)} GiB`,
    );
  lines.push("", "| case | this engine | PyTorch | PyTorch mode | ratio |", "|---|---|---|---|---|");
  for (const r of rows)
    lines.push(
      `| ${r.case} | ${r.engine} | ${r.peer} | ${r.peerMode} | ${r.ratio === undefined ? "-" : `${r.ratio.toFixed(2)}x`} |`,
    );
  if (report.starpo) {
    const { options: o, seconds, generatedTokens, trainedTrajectories, peakBytes } = report.starpo;
    const tuned = report.starpoTuned;
    lines.push(
      "",
      `## One StarPO step (${o.groups} groups x ${o.groupSize}, ${o.newTokens} new tokens after ${o.promptLength}${report.starpo.dtype === "f16" ? ", f16 weights" : ""})`,
      "",
      `${generatedTokens} tokens generated, ${trainedTrajectories} trajectories trained after the filter, peak ${(peakBytes / 2 ** 30).toFixed(2)} GiB.`,
      "",
      ...(tuned
        ? [
            "| phase | seconds | seconds, tuned kernels |",
            "|---|---|---|",
            ...Object.entries(seconds).map(
              ([phase, s]) =>
                `| ${phase} | ${s.toFixed(2)} | ${fmt(tuned.seconds[phase] ?? Number.NaN, 2)} |`,
            ),
          ]
        : [
            "| phase | seconds |",
            "|---|---|",
            ...Object.entries(seconds).map(([phase, s]) => `| ${phase} | ${s.toFixed(2)} |`),
          ]),
    );
  }
  const rejected = (report.tunedMatmuls ?? []).flatMap((t) =>
    t.rejected.map((r) => `| ${t.label} ${t.dtype} | ${r.kernel} | ${r.reason.replaceAll("|", "\\|")} |`),
  );
  if (rejected.length > 0)
    lines.push(
      "",
      "## Kernels tuning left out",
      "",
      "| shape | kernel | why |",
      "|---|---|---|",
      ...rejected,
    );
  lines.push("", "## Every kernel case", "", "| case | ms | rate | dispatches |", "|---|---|---|---|");
  for (const k of report.kernels) {
    const rate = k.skipped
      ? k.skipped
      : k.gflops !== undefined
        ? `${fmt(k.gflops)} GFLOP/s`
        : k.gbps !== undefined
          ? `${fmt(k.gbps)} GB/s`
          : "";
    lines.push(
      `| ${k.family}: ${k.name} | ${fmt(k.msPerIteration, 3)} | ${rate} | ${k.dispatchesPerIteration} |`,
    );
  }
  return `${lines.join("\n")}\n`;
}
