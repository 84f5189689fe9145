/**
 * Where a run in a storage starts: after its last checkpoint, or from the beginning. Shared by
 * `runTraining` and the examples' own training loops, so every loop keeps the same promise: logged rows
 * are dropped only when the run that follows will log them again.
 */
import type { TrainingSettings } from "../settings/fields.js";
import type { RunStorage, StoredCheckpoint } from "./storage.js";

/**
 * The step of the first checkpoint a run saves after `step` (the last step when it saves only then). A
 * step's row is logged just before its checkpoint is saved, so a kill in between leaves rows up to this.
 */
export function nextCheckpointStep(settings: TrainingSettings, step: number): number {
  const every = settings.checkpointEvery;
  return every > 0 ? Math.min((Math.floor(step / every) + 1) * every, settings.steps) : settings.steps;
}

/**
 * The checkpoint to continue from, or undefined to start over. Throws when starting over would lose
 * what a run left: rows with `resume=false`, rows past the next checkpoint after the last one found
 * (a later checkpoint was deleted or damaged), or a checkpoint of another model. Rows up to that next
 * checkpoint (a kill before it was saved) are redone by the resumed run, so they may go.
 */
export function findResumePoint(
  storage: RunStorage,
  settings: TrainingSettings,
  say: (line: string) => void,
): StoredCheckpoint | undefined {
  const lastLogged = storage.lastLoggedStep();
  if (!settings.resume && lastLogged !== undefined)
    throw new Error(
      `${storage.location} already holds a run; pass resume=true to continue it or outDir=<new folder>`,
    );
  const checkpoint = settings.resume ? storage.findCheckpoint() : undefined;
  if (checkpoint && checkpoint.state.model !== settings.model)
    throw new Error(
      `${storage.location} holds a run of model "${checkpoint.state.model}", not "${settings.model}"; pass outDir=<new folder>`,
    );
  if (lastLogged === undefined) return checkpoint;
  const saved = checkpoint?.state.step;
  const due = nextCheckpointStep(settings, saved ?? 0);
  if (lastLogged > due)
    throw new Error(
      `${storage.location} holds metrics up to step ${lastLogged} but ${saved === undefined ? "no usable checkpoint" : `its last usable checkpoint is of step ${saved}`} (the next was due at step ${due}), so resuming would drop them; pass resume=false with outDir=<new folder> to start over`,
    );
  if (saved === undefined)
    say(
      `${storage.location}: no checkpoint yet (the first is due at step ${due}); starting over, the rows logged up to step ${lastLogged} are redone`,
    );
  return checkpoint;
}
