/**
 * A run whose loss stops being a number stops: the optimiser skips each such step (its gradients are not
 * finite), so the run would go on changing nothing while it logs NaN.
 */

/** Steps in a row whose loss is NaN or infinite before the run stops (the optimiser skips each one). */
export const MAX_NON_FINITE_LOSS_STEPS = 3;

/** The loss metrics of an update that are not finite numbers. */
export function nonFiniteLosses(metrics: Record<string, number>): string[] {
  return Object.entries(metrics)
    .filter(([name, value]) => /(^|\/)[a-z_]*loss$/.test(name) && !Number.isFinite(value))
    .map(([name]) => name);
}

/**
 * Counts the steps in a row whose update's losses are not finite, and throws, naming the step and the
 * losses, on the MAX_NON_FINITE_LOSS_STEPS-th. A run on f16 weights is also told of f16's range: loss
 * scaling catches gradients that overflow f16, not a forward whose activations do.
 */
export class NonFiniteLossGuard {
  private steps = 0;

  constructor(private readonly precision: "f32" | "f16" = "f32") {}

  /** Notes one step's update metrics; throws when the losses have not been finite for too long. */
  check(step: number, updateMetrics: Record<string, number>): void {
    const bad = nonFiniteLosses(updateMetrics);
    this.steps = bad.length > 0 ? this.steps + 1 : 0;
    if (this.steps < MAX_NON_FINITE_LOSS_STEPS) return;
    const halfRange =
      this.precision === "f16"
        ? "; on f16 weights an activation past f16's range (65504) does this too: precision=f32 avoids it"
        : "";
    throw new Error(
      `step ${step}: ${bad.map((name) => `${name} = ${updateMetrics[name]}`).join(", ")} — the loss has not been finite for ${this.steps} steps in a row; lower the learning rate or resume from the last checkpoint${halfRange}`,
    );
  }
}
