import { ProgressBar, type ProgressStream } from "@ragen/logging";

/** A progress bar on `stream`, or one that draws nothing when there is no stream (a browser, a test). */
export function progressBar(stream: ProgressStream | undefined, label: string, total: number): ProgressBar {
  return new ProgressBar({ label, total, stream: stream ?? { write: () => true } });
}
