/** Tables of strings, for a terminal and for markdown files, so every command lays them out alike. */

type Rows = readonly (readonly string[])[];

/** Each column's width: its widest cell, header included. */
function columnWidths(header: readonly string[], rows: Rows): number[] {
  return header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? "").length)));
}

export interface MarkdownTableOptions {
  /** Pad every column to its widest cell, so the source also reads as a table in a terminal. */
  aligned?: boolean;
}

/** A markdown (GitHub) table; a `|` inside a cell is escaped so it cannot split the cell. */
export function markdownTable(
  header: readonly string[],
  rows: Rows,
  { aligned = false }: MarkdownTableOptions = {},
): string {
  const escapePipes = (cells: readonly string[]) => cells.map((c) => c.replaceAll("|", "\\|"));
  const escapedHeader = escapePipes(header);
  const escapedRows = rows.map(escapePipes);
  const widths = aligned ? columnWidths(escapedHeader, escapedRows) : header.map(() => 0);
  const line = (cells: readonly string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  const rule = `| ${widths.map((w) => "-".repeat(Math.max(3, w))).join(" | ")} |`;
  return [line(escapedHeader), rule, ...escapedRows.map(line)].join("\n");
}

export interface TextTableOptions {
  /** Put in front of every line, e.g. "  " to set the table off under a heading. */
  indent?: string;
  /** A dashed rule under the header (the default). */
  rule?: boolean;
}

/**
 * A plain-text table: columns two spaces apart, each padded to its widest cell, a dashed rule under
 * the header. The last column is not padded, so no line ends in spaces.
 */
export function textTable(
  header: readonly string[],
  rows: Rows,
  { indent = "", rule = true }: TextTableOptions = {},
): string {
  const widths = columnWidths(header, rows);
  const line = (cells: readonly string[]) =>
    `${indent}${cells.map((c, i) => c.padEnd(widths[i]!)).join("  ")}`.trimEnd();
  const ruleLine = rule ? [line(widths.map((w) => "-".repeat(w)))] : [];
  return [line(header), ...ruleLine, ...rows.map(line)].join("\n");
}

/** A rate as a table cell: "42.2%", or "-" where there is no figure (NaN, e.g. no episodes). */
export function formatPercent(rate: number): string {
  return Number.isFinite(rate) ? `${(100 * rate).toFixed(1)}%` : "-";
}
