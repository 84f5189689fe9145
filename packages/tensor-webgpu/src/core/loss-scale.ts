/**
 * Dynamic loss scaling (as PyTorch's GradScaler): f16 gradients below about 6e-8 flush to zero, so the
 * loss is multiplied by a scale before the backward and the optimizer divides it out of the update. A
 * step whose gradients overflowed is skipped and the scale shrinks; after a run of finite steps it grows.
 */

/**
 * The scale's state on the device and its rule: `state` is f32 [scale, finite steps in a row]. A step
 * whose gradients are not finite multiplies the scale by backoffFactor; `growthInterval` finite steps in
 * a row multiply it by growthFactor. The scale stays within [LOSS_SCALE_MIN, LOSS_SCALE_MAX].
 */
export interface LossScaleUpdate<B> {
  state: B;
  growthFactor: number;
  backoffFactor: number;
  growthInterval: number;
}

/** The bounds of a dynamic loss scale: far outside any useful scale, but never 0 or Inf in f32. */
export const LOSS_SCALE_MIN = 2 ** -64;
export const LOSS_SCALE_MAX = 2 ** 64;

/** The rule's factors and interval, checked before a kernel takes them as they are. */
export function checkLossScaleRule(rule: Omit<LossScaleUpdate<unknown>, "state">): void {
  if (!(rule.growthFactor >= 1) || !Number.isFinite(rule.growthFactor))
    throw new RangeError(`loss scaling: growthFactor must be a finite number >= 1, got ${rule.growthFactor}`);
  if (!(rule.backoffFactor > 0 && rule.backoffFactor < 1))
    throw new RangeError(`loss scaling: backoffFactor must be in (0, 1), got ${rule.backoffFactor}`);
  if (!Number.isInteger(rule.growthInterval) || rule.growthInterval < 1 || rule.growthInterval > 2 ** 24)
    throw new RangeError(
      `loss scaling: growthInterval must be an integer from 1 to 2^24, got ${rule.growthInterval}`,
    );
}
