import type { AsyncEnv, Env, StepResult } from "./types.js";

/**
 * An in-process env behind the AsyncEnv interface: what a faithful env server's client looks like, for
 * code written against remote envs (and tests of it) that should also run on a local env.
 */
export class InProcessAsyncEnv<Config = unknown> implements AsyncEnv<Config> {
  constructor(readonly env: Env<Config>) {}
  get name(): string {
    return this.env.name;
  }
  get config(): Readonly<Config> {
    return this.env.config;
  }
  get actions(): readonly string[] | null {
    return this.env.actions;
  }
  get instructions(): string {
    return this.env.instructions;
  }
  get done(): boolean {
    return this.env.done;
  }
  async reset(seed: number): Promise<string> {
    return this.env.reset(seed);
  }
  async step(action: string): Promise<StepResult> {
    return this.env.step(action);
  }
  async render(): Promise<string> {
    return this.env.render();
  }
}
