import type { AsyncEnv, StepInfo, StepResult } from "../types.js";
import { type HttpOptions, type JsonRequest, RemoteEnvError, requestJson } from "./http.js";
import { badReply, isRecord, type ReplySource, readDone, readReward, stepResult } from "./reply.js";

/** What a remote env says about itself where its server cannot (names for prompts and records). */
export interface RemoteEnvDescription {
  /** Default "remote". */
  name?: string;
  /** Default {}. */
  config?: object;
  /** Default: what the server's reset sends (`observation.instructions`), else "". */
  instructions?: string;
  /** Default: what the server's reset sends (`observation.actions`), else null (free-form). */
  actions?: readonly string[] | null;
}

export interface OpenEnvClientOptions extends HttpOptions, RemoteEnvDescription {
  /** The action object's field that holds the action text (default "message", as TextArena's action). */
  actionField?: string;
  /**
   * The observation object's field read as the observation text (default: the first string among
   * "text", "prompt", "observation" and "message").
   */
  observationField?: string;
}

const OBSERVATION_FIELDS = ["text", "prompt", "observation", "message"];

/**
 * An env behind a server of the OpenEnv HTTP shape (meta-pytorch/OpenEnv's `HTTPEnvServer`), fields as
 * its `ResetRequest`, `StepRequest`, `ResetResponse`/`StepResponse` and `HealthResponse` name them:
 * - `POST /reset` `{"seed": N}` -> `{"observation": {...}, "reward": null, "done": false}`;
 * - `POST /step` `{"action": {"message": "Left"}, "request_id": "3"}` -> `{"observation": {...}, "reward": 0, "done": false}`;
 * - `GET /state` -> `{"episode_id": ..., "step_count": N, ...}`; `GET /health` -> `{"status": "healthy"}`.
 * The observation object's text is `observationField` (TextArena's is "prompt"); the step's info is
 * `observation.info` (TextArena's place for it), else `observation.metadata`, else the reply's `info`.
 *
 * Sessions: OpenEnv's HTTP routes keep no session (one env, or one per request). `ragen serve-env`
 * keeps one env per session: the first reset's reply carries `session_id`, which this client sends
 * back as `session_id` in every later body (and as the query parameter of `GET /state`); the request
 * models' extra fields are allowed, so a plain OpenEnv server ignores it. `request_id` numbers this
 * client's steps, so a step retried after a lost reply is answered again, not played twice.
 */
export class OpenEnvClient implements AsyncEnv<object, StepInfo> {
  readonly name: string;
  readonly config: Readonly<object>;
  private ownInstructions: string | undefined;
  private ownActions: readonly string[] | null | undefined;
  private isDone = false;
  private lastObservation = "";
  private session: string | undefined;
  private stepCounter = 0;

  constructor(private readonly options: OpenEnvClientOptions) {
    this.name = options.name ?? "remote";
    this.config = options.config ?? {};
    this.ownInstructions = options.instructions;
    this.ownActions = options.actions;
  }

  get instructions(): string {
    return this.ownInstructions ?? "";
  }

  get actions(): readonly string[] | null {
    return this.ownActions ?? null;
  }

  get done(): boolean {
    return this.isDone;
  }

  /** The server's session id, once a reset has opened one (undefined for servers without sessions). */
  get sessionId(): string | undefined {
    return this.session;
  }

  async reset(seed: number): Promise<string> {
    const reset = () =>
      this.call({
        method: "POST",
        path: "/reset",
        body: { seed, ...(this.session === undefined ? {} : { session_id: this.session }) },
      });
    let reply: Record<string, unknown>;
    try {
      reply = await reset();
    } catch (error) {
      // A server that restarted or expired the session: a reset starts afresh anyway, so open a new one.
      if (!(this.session !== undefined && error instanceof RemoteEnvError && error.status === 404))
        throw error;
      this.session = undefined;
      reply = await reset();
    }
    const source = this.source("POST", "/reset");
    if (typeof reply.session_id === "string" && reply.session_id !== "") this.session = reply.session_id;
    const observation = reply.observation;
    if (isRecord(observation)) {
      if (this.ownInstructions === undefined && typeof observation.instructions === "string")
        this.ownInstructions = observation.instructions;
      if (
        this.ownActions === undefined &&
        Array.isArray(observation.actions) &&
        observation.actions.every((a) => typeof a === "string")
      )
        this.ownActions = observation.actions as string[];
    }
    this.lastObservation = this.observationText(source, observation);
    this.isDone = readDone(source, reply.done, "done");
    return this.lastObservation;
  }

  async step(action: string): Promise<StepResult<StepInfo>> {
    const reply = await this.call({
      method: "POST",
      path: "/step",
      body: {
        action: { [this.options.actionField ?? "message"]: action },
        request_id: String(++this.stepCounter),
        ...(this.session === undefined ? {} : { session_id: this.session }),
      },
    });
    const source = this.source("POST", "/step");
    const observation = reply.observation;
    const text = this.observationText(source, observation);
    const reward = readReward(source, reply.reward, "reward");
    const done = readDone(source, reply.done, "done");
    const info = isRecord(observation)
      ? (observation.info ?? observation.metadata ?? reply.info)
      : reply.info;
    this.lastObservation = text;
    this.isDone = done;
    return stepResult(text, reward, done, info);
  }

  /** The state's `render` text where the server sends one (`ragen serve-env` does), else the last observation. */
  async render(): Promise<string> {
    const state = await this.state();
    return typeof state.render === "string" ? state.render : this.lastObservation;
  }

  /** `GET /state`: the server's state object as it sent it. */
  async state(): Promise<Record<string, unknown>> {
    return this.call({
      method: "GET",
      path: "/state",
      ...(this.session === undefined ? {} : { query: { session_id: this.session } }),
    });
  }

  /** `GET /health`: resolves to the status the server reports ("healthy"). */
  async health(): Promise<string> {
    const reply = await this.call({ method: "GET", path: "/health" });
    if (typeof reply.status !== "string") throw badReply(this.source("GET", "/health"), 'no "status"');
    return reply.status;
  }

  /**
   * Ends the session (`POST /close`, a `ragen serve-env` route). Servers without sessions have nothing
   * to end, so a 404 or 405 there is not an error.
   */
  async close(): Promise<void> {
    if (this.session === undefined) return;
    const session = this.session;
    this.session = undefined;
    try {
      await this.call({ method: "POST", path: "/close", body: { session_id: session } });
    } catch (error) {
      if (!(error instanceof RemoteEnvError && (error.status === 404 || error.status === 405))) throw error;
    }
  }

  private async call(request: JsonRequest): Promise<Record<string, unknown>> {
    const reply = await requestJson(this.options, request);
    if (!isRecord(reply))
      throw badReply(this.source(request.method, request.path), "reply is not a JSON object");
    return reply;
  }

  private source(method: "GET" | "POST", path: string): ReplySource {
    return { root: this.options.url, method, path };
  }

  private observationText(source: ReplySource, observation: unknown): string {
    if (typeof observation === "string") return observation;
    if (!isRecord(observation)) throw badReply(source, 'no "observation" object');
    const fields = this.options.observationField ? [this.options.observationField] : OBSERVATION_FIELDS;
    for (const field of fields) if (typeof observation[field] === "string") return observation[field];
    throw badReply(source, `"observation" has no string field ${fields.map((f) => `"${f}"`).join(" or ")}`);
  }
}
