/** The console tables of success rates that a run and an evaluation print. */

/** "42.2%", or "-" where there is no figure. */
export function percent(x: number): string {
  return Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : "-";
}

/** Columns padded to their widest cell, a dashed rule under the header. */
export function plainTable(header: readonly string[], rows: readonly string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ");
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}
