/**
 * Fused projections for cached decoding steps. A decoder layer's q, k and v projections read the same
 * input, as do its gate and up projections; with their weights stacked into one matrix each, a step runs
 * two products where it ran five (and each activation is read once per product, not once per module).
 * Every output element is the same dot product over the same inputs as before, so on kernels that sum in
 * the same order whatever the width the results are the same bits.
 *
 * With LoRA adapters the stacked weights are the merged ones, W + (alpha/r)·B·A, and the adapted o and
 * down projections get merged copies too: a step then runs no adapter products at all (14 fewer dispatches
 * a layer with all seven modules adapted). Merged weights round differently from the separate update, so
 * such a step's logits differ from the unmerged forward's in the last bits.
 *
 * The stacked weights are copies: they belong to the weights (and adapters) they were made from and must
 * be rebuilt after those change (generate() builds them per call and frees them at its end).
 */
import { concat, noGrad, type Tensor } from "@ragen/tensor-webgpu";
import type { LoraAdapters } from "./lora.js";

/** One layer's stacked weights. */
export interface PackedLayer {
  /** The q, k and v projections' rows, in that order: numHeads·headDim + 2·numKvHeads·headDim rows of hidden. */
  qkvWeight: Tensor;
  /** Their biases side by side; undefined where the layer has none. */
  qkvBias: Tensor | undefined;
  /** The gate projection's rows, then the up projection's: 2·intermediate rows of hidden. */
  gateUpWeight: Tensor;
  /** The o projection's merged weight where an adapter changes it (else the model's own is used). */
  oWeight: Tensor | undefined;
  /** The down projection's merged weight where an adapter changes it. */
  downWeight: Tensor | undefined;
}

export class PackedProjections {
  private constructor(
    readonly layers: readonly PackedLayer[],
    /** Whether LoRA adapters are merged in: only runs that apply them may use these weights. */
    readonly withAdapters: boolean,
  ) {}

  /**
   * Stack the weights of `numLayers` Qwen2 decoder layers, read through `param` (by Hugging Face name),
   * merged with `adapters` when given. Biases are stacked when the q, k and v projections all have one;
   * `bias(name)` gives undefined for none.
   */
  static build(
    numLayers: number,
    param: (name: string) => Tensor,
    bias: (name: string) => Tensor | undefined,
    adapters?: LoraAdapters,
  ): PackedProjections {
    const layers: PackedLayer[] = [];
    // Everything made so far, freed if a later layer fails.
    const made: Tensor[] = [];
    const keep = (t: Tensor) => {
      made.push(t.keep());
      return t;
    };
    const merged = (module: string) => adapters?.mergedWeight(module, param(`${module}.weight`));
    /** One matrix of the modules' (merged) weights' rows. */
    const stack = (modules: string[]) => {
      const mergedWeights = modules.map(merged);
      try {
        return keep(concat(mergedWeights.map((w, i) => w ?? param(`${modules[i]}.weight`))));
      } finally {
        for (const w of mergedWeights) w?.dispose();
      }
    };
    const mergedCopy = (module: string) => {
      const weight = merged(module);
      return weight && keep(weight);
    };
    try {
      noGrad(() => {
        for (let i = 0; i < numLayers; i++) {
          const attention = `model.layers.${i}.self_attn`;
          const mlp = `model.layers.${i}.mlp`;
          const qkv = ["q_proj", "k_proj", "v_proj"].map((m) => `${attention}.${m}`);
          const biases = qkv.map((m) => bias(`${m}.bias`));
          if (biases.some((b) => b === undefined) && biases.some((b) => b !== undefined))
            throw new Error(`${attention}: only some of the q, k and v projections have a bias`);
          layers.push({
            qkvWeight: stack(qkv),
            qkvBias: biases[0] ? keep(concat(biases as Tensor[])) : undefined,
            gateUpWeight: stack([`${mlp}.gate_proj`, `${mlp}.up_proj`]),
            oWeight: mergedCopy(`${attention}.o_proj`),
            downWeight: mergedCopy(`${mlp}.down_proj`),
          });
        }
      });
    } catch (error) {
      for (const t of made) t.dispose();
      throw error;
    }
    return new PackedProjections(layers, adapters !== undefined);
  }

  dispose(): void {
    for (const layer of this.layers) {
      for (const t of [layer.qkvWeight, layer.qkvBias, layer.gateUpWeight, layer.oWeight, layer.downWeight])
        t?.dispose();
    }
  }
}
