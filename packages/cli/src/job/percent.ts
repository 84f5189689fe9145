/** "42.2%", or "-" where there is no figure: how the run's and the evaluation's tables print a rate. */
export function percent(x: number): string {
  return Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : "-";
}
