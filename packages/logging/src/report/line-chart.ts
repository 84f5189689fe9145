import { escapeHtml } from "./html.js";

export interface Series {
  /** Legend text, usually the metric name. */
  label: string;
  points: { x: number; y: number }[];
  /** A shaded band around the line (mean ± standard error, say), drawn under it in the line's colour. */
  band?: { x: number; low: number; high: number }[];
}

export const PALETTE = [
  "#1f77b4",
  "#d62728",
  "#2ca02c",
  "#ff7f0e",
  "#9467bd",
  "#8c564b",
  "#e377c2",
  "#17becf",
];

/** About `count` round tick values covering [min, max] (1, 2, 5 times a power of ten). */
export function niceTicks(min: number, max: number, count = 5): number[] {
  // A span within rounding of its values (a mean one ulp from its max) has no step that moves a tick.
  if (!(max > min) || isFlat(min, max)) return [min];
  const raw = (max - min) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power;
  const ticks: number[] = [];
  for (let i = Math.ceil(min / step); i * step <= max + step * 1e-9 && ticks.length <= 2 * count + 2; i++)
    ticks.push(Number((i * step).toPrecision(12)));
  return ticks;
}

/** Whether [min, max] is narrower than the precision the values are printed with. */
function isFlat(min: number, max: number): boolean {
  return max - min <= 1e-12 * Math.max(Math.abs(min), Math.abs(max));
}

/**
 * An inline SVG line chart with axes, ticks, grid and a legend. Non-finite values break the line
 * instead of dragging it to zero.
 */
export function lineChart(
  title: string,
  series: Series[],
  options: { width?: number; height?: number } = {},
): string {
  const width = options.width ?? 520;
  const height = options.height ?? 260;
  const margin = { left: 56, right: 12, top: 28, bottom: 40 + 16 * Math.ceil(series.length / 2) };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const bandPoints = series.flatMap((s) =>
    (s.band ?? []).flatMap((b) => [
      { x: b.x, y: b.low },
      { x: b.x, y: b.high },
    ]),
  );
  const finite = [...series.flatMap((s) => s.points), ...bandPoints].filter((p) => Number.isFinite(p.y));
  const xs = finite.map((p) => p.x);
  const ys = finite.map((p) => p.y);
  let [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (!finite.length) [x0, x1, y0, y1] = [0, 1, 0, 1];
  if (x0 === x1) [x0, x1] = [x0 - 1, x1 + 1];
  if (isFlat(y0, y1)) [y0, y1] = [y0 - 0.5, y1 + 0.5];
  const pad = (y1 - y0) * 0.05;
  [y0, y1] = [y0 - pad, y1 + pad];
  const sx = (x: number) => margin.left + ((x - x0) / (x1 - x0)) * plotW;
  const sy = (y: number) => margin.top + plotH - ((y - y0) / (y1 - y0)) * plotH;

  const parts: string[] = [];
  parts.push(
    `<text class="chart-title" x="${width / 2}" y="16" text-anchor="middle">${escapeHtml(title)}</text>`,
  );
  const yTicks = niceTicks(y0, y1);
  parts.push('<g class="axis y-axis">');
  for (const t of yTicks) {
    const y = sy(t).toFixed(1);
    parts.push(`<line class="grid" x1="${margin.left}" x2="${margin.left + plotW}" y1="${y}" y2="${y}"/>`);
    parts.push(
      `<text x="${margin.left - 6}" y="${y}" text-anchor="end" dominant-baseline="middle">${String(Number(t.toPrecision(6)))}</text>`,
    );
  }
  parts.push("</g>", '<g class="axis x-axis">');
  for (const t of niceTicks(x0, x1).filter(Number.isInteger)) {
    const x = sx(t).toFixed(1);
    parts.push(
      `<line class="tick" x1="${x}" x2="${x}" y1="${margin.top + plotH}" y2="${margin.top + plotH + 4}"/>`,
    );
    parts.push(`<text x="${x}" y="${margin.top + plotH + 16}" text-anchor="middle">${t}</text>`);
  }
  parts.push(
    `<text x="${margin.left + plotW / 2}" y="${margin.top + plotH + 32}" text-anchor="middle">step</text>`,
    `<line class="frame" x1="${margin.left}" x2="${margin.left}" y1="${margin.top}" y2="${margin.top + plotH}"/>`,
    `<line class="frame" x1="${margin.left}" x2="${margin.left + plotW}" y1="${margin.top + plotH}" y2="${margin.top + plotH}"/>`,
    "</g>",
  );
  series.forEach((s, i) => {
    const color = PALETTE[i % PALETTE.length];
    // Split at gaps so NaN steps show as holes.
    const segments: string[][] = [[]];
    for (const p of s.points) {
      if (Number.isFinite(p.y)) segments.at(-1)!.push(`${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`);
      else if (segments.at(-1)!.length) segments.push([]);
    }
    parts.push(
      `<g class="series" data-series="${escapeHtml(s.label)}"><title>${escapeHtml(s.label)}</title>`,
    );
    const band = (s.band ?? []).filter((b) => Number.isFinite(b.low) && Number.isFinite(b.high));
    if (band.length > 1) {
      const outline = [
        ...band.map((b) => `${sx(b.x).toFixed(1)},${sy(b.high).toFixed(1)}`),
        ...band.reverse().map((b) => `${sx(b.x).toFixed(1)},${sy(b.low).toFixed(1)}`),
      ];
      parts.push(`<polygon class="band" fill="${color}" fill-opacity="0.15" points="${outline.join(" ")}"/>`);
    }
    for (const seg of segments.filter((g) => g.length)) {
      if (seg.length === 1)
        parts.push(
          `<circle cx="${seg[0]!.split(",")[0]}" cy="${seg[0]!.split(",")[1]}" r="2.5" fill="${color}"/>`,
        );
      else
        parts.push(`<polyline fill="none" stroke="${color}" stroke-width="1.8" points="${seg.join(" ")}"/>`);
    }
    parts.push("</g>");
    const lx = margin.left + (i % 2) * (plotW / 2);
    const ly = margin.top + plotH + 48 + 16 * Math.floor(i / 2);
    parts.push(
      `<g class="legend-item"><rect x="${lx}" y="${ly - 9}" width="14" height="4" fill="${color}"/>` +
        `<text x="${lx + 20}" y="${ly - 4}" dominant-baseline="middle">${escapeHtml(s.label)}</text></g>`,
    );
  });
  return `<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${escapeHtml(title)}">${parts.join("")}</svg>`;
}
