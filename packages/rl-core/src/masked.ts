import { div, maximum, mul, sum, type Tensor } from "@ragen/tensor-webgpu";

/**
 * The mean of `values` over the positions where the f32 `mask` is 1, as one scalar: every masked token
 * weighs the same (token-mean). An all-zero mask counts as one token, so it gives 0 rather than NaN.
 */
export function maskedMean(values: Tensor, mask: Tensor): Tensor {
  return div(sum(mul(values, mask)), maximum(sum(mask), 1));
}
