/**
 * Waiting on the GPU without spinning the JS thread.
 *
 * While any WebGPU promise is pending, Dawn's Node binding polls for events on the main thread at 100%
 * of a core. On a software adapter (lavapipe) that core is one the GPU's own worker threads needed:
 * measured here, plain `await` made kernels 1.5-1.7x slower. So in Node we block the thread with
 * Atomics.wait in short slices (the GPU keeps working on its own threads) and give the event loop
 * one turn between slices, which is enough for the binding to notice completion. Browsers do not
 * spin and may not block their main thread, so there we simply await.
 */

const canBlock =
  typeof SharedArrayBuffer !== "undefined" &&
  typeof Atomics !== "undefined" &&
  typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === "string";

const sleeper = canBlock ? new Int32Array(new SharedArrayBuffer(4)) : undefined;

/** A macrotask turn: lets Dawn's binding process its events once. */
const nextTurn = (): Promise<void> =>
  new Promise((resolve) => {
    if (typeof setImmediate === "function") setImmediate(resolve);
    else setTimeout(resolve, 0);
  });

/** Block the JS thread for `ms` milliseconds (Node only; a no-op elsewhere). */
export function blockFor(ms: number): void {
  if (sleeper && ms > 0) Atomics.wait(sleeper, 0, 0, ms);
}

export interface WaitOptions {
  /** First sleep slice in ms; slices grow with the wait, capped at `maxSliceMs`. */
  minSliceMs?: number;
  maxSliceMs?: number;
  /**
   * Told when the thread starts waiting and when the wait ends. The wait starts at the first event-loop
   * turn after the call, not at the call: until the caller yields, the thread runs the caller's own work
   * (a decoding loop records its next step while this step's tokens come back), which is no wait.
   */
  clock?: { start(): void; stop(): void };
}

/**
 * Await a GPU promise (mapAsync, onSubmittedWorkDone) the way that costs the GPU nothing: sleep in
 * slices of about a tenth of the time waited so far (so the overshoot stays near 10%), with one event-loop
 * turn between slices.
 */
export async function waitForGpu<T>(promise: Promise<T>, options: WaitOptions = {}): Promise<T> {
  const { clock } = options;
  if (!sleeper) {
    if (!clock) return promise;
    await nextTurn();
    clock.start();
    try {
      return await promise;
    } finally {
      clock.stop();
    }
  }
  let settled = false;
  let value: T | undefined;
  let failure: unknown;
  let failed = false;
  promise.then(
    (v) => {
      settled = true;
      value = v;
    },
    (e) => {
      settled = true;
      failed = true;
      failure = e;
    },
  );
  const minSlice = options.minSliceMs ?? 0.05;
  const maxSlice = options.maxSliceMs ?? 2;
  // Slices grow from the call, so a read awaited after the caller's own work starts with longer
  // sleeps: fewer wake-ups, each of which takes a core from lavapipe's GPU threads (measured on 2 cores:
  // growing from the start of the wait decoded 4% slower, median of 6 alternating pairs).
  const start = performance.now();
  await nextTurn();
  clock?.start();
  try {
    while (!settled) {
      const waited = performance.now() - start;
      blockFor(Math.min(maxSlice, Math.max(minSlice, waited / 10)));
      await nextTurn();
    }
  } finally {
    clock?.stop();
  }
  if (failed) throw failure;
  return value as T;
}
