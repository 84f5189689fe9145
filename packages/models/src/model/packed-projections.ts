/**
 * Fused projections for cached decoding steps. A decoder layer's q, k and v projections read the same
 * input, as do its gate and up projections; with their weights stacked into one matrix each, a step runs
 * two products where it ran five (and each activation is read once per product, not once per module).
 * Every output element is the same dot product over the same inputs as before, so on kernels that sum in
 * the same order whatever the width the results are the same bits.
 *
 * The stacked weights are copies: they belong to the weights they were made from and must be rebuilt
 * after those change (generate() builds them per call and frees them at its end).
 */
import { concat, noGrad, type Tensor } from "@ragen/tensor-webgpu";

/** One layer's stacked weights. */
export interface PackedLayer {
  /** The q, k and v projections' rows, in that order: numHeads·headDim + 2·numKvHeads·headDim rows of hidden. */
  qkvWeight: Tensor;
  /** Their biases side by side; undefined where the layer has none. */
  qkvBias: Tensor | undefined;
  /** The gate projection's rows, then the up projection's: 2·intermediate rows of hidden. */
  gateUpWeight: Tensor;
}

export class PackedProjections {
  private constructor(readonly layers: readonly PackedLayer[]) {}

  /**
   * Stack the weights of `numLayers` Qwen2 decoder layers, read through `param` (by Hugging Face name).
   * Biases are stacked when the q, k and v projections all have one; `bias(name)` gives undefined for none.
   */
  static build(
    numLayers: number,
    param: (name: string) => Tensor,
    bias: (name: string) => Tensor | undefined,
  ): PackedProjections {
    const layers: PackedLayer[] = [];
    try {
      noGrad(() => {
        for (let i = 0; i < numLayers; i++) {
          const attention = `model.layers.${i}.self_attn`;
          const mlp = `model.layers.${i}.mlp`;
          const modules = ["q_proj", "k_proj", "v_proj"].map((m) => `${attention}.${m}`);
          const biases = modules.map((m) => bias(`${m}.bias`));
          if (biases.some((b) => b === undefined) && biases.some((b) => b !== undefined))
            throw new Error(`${attention}: only some of the q, k and v projections have a bias`);
          layers.push({
            qkvWeight: concat(modules.map((m) => param(`${m}.weight`))).keep(),
            qkvBias: biases[0] ? concat(biases as Tensor[]).keep() : undefined,
            gateUpWeight: concat([param(`${mlp}.gate_proj.weight`), param(`${mlp}.up_proj.weight`)]).keep(),
          });
        }
      });
    } catch (error) {
      new PackedProjections(layers).dispose();
      throw error;
    }
    return new PackedProjections(layers);
  }

  dispose(): void {
    for (const layer of this.layers) {
      layer.qkvWeight.dispose();
      layer.qkvBias?.dispose();
      layer.gateUpWeight.dispose();
    }
  }
}
