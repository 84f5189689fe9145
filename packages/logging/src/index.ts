export {
  describeDrop,
  successStandardError,
  type ValidationDrop,
  validationCurves,
  validationDrops,
} from "./collapse.js";
export {
  DEFAULT_SUMMARY_KEYS,
  formatMetricValue,
  formatStepSummary,
  type Metrics,
  type MetricsRow,
  metricsRowToJson,
  parseMetricsJsonl,
  parseMetricsLine,
  RESERVED_KEYS,
  selectSummaryKeys,
  validateStep,
} from "./metrics.js";
export { ProgressBar, type ProgressBarOptions, type ProgressStream } from "./progress.js";
export {
  type Contradiction,
  type EchoGroup,
  extremes,
  findContradictions,
  findEchoGroups,
  findInvalidFormats,
  groupSimilarities,
  jaccard,
  seedsAcrossSteps,
} from "./report/case-studies.js";
export { escapeHtml } from "./report/html.js";
export { lineChart, niceTicks, type Series } from "./report/line-chart.js";
export { buildReport, CHARTS, type ReportOptions } from "./report.js";
export {
  formatPercent,
  type MarkdownTableOptions,
  markdownTable,
  type TextTableOptions,
  textTable,
} from "./tables.js";
export {
  isTrajectoryRecord,
  parseTrajectoriesJsonl,
  type TrajectoryRecord,
  type TurnRecord,
} from "./trajectory.js";
export { type WandbOptions, WandbSink, type WandbState } from "./wandb.js";
