import type { AsyncEnv, StepInfo, StepResult } from "../types.js";
import { type HttpOptions, type JsonRequest, RemoteEnvError, requestJson } from "./http.js";
import type { RemoteEnvDescription } from "./openenv-client.js";
import { badReply, isRecord, type ReplySource, readDone, readReward, stepResult } from "./reply.js";

export interface AgentGymClientOptions extends HttpOptions, RemoteEnvDescription {
  /** The body and query field naming the env instance: "id" (textcraft, babyai, sciworld; default) or "env_idx" (webshop). */
  indexField?: string;
  /** The reset body's field that picks the task, sent the seed: "data_idx" (default) or "session_id" (webshop). */
  seedField?: string;
  /** The body of `POST /create` (textcraft takes `commands` and `goal`); default {}. */
  createBody?: Record<string, unknown>;
}

/**
 * An env behind an AgentGym env server (WooooDyy/AgentGym's agentenv-* FastAPI servers), one server-side
 * env per client. The fields followed, as agentenv-textcraft and agentenv-babyai name them (webshop's
 * `env_idx`, `session_id` and `state` through the options and fallbacks):
 * - `POST /create` -> `{"id": N, ...}` or a bare N;
 * - `POST /reset` `{"id": N, "data_idx": seed}` -> `{"observation": "...", ...}` (webshop: `["...", null]`);
 * - `POST /step` `{"id": N, "action": "..."}` -> `{"observation": "...", "reward": r, "done": d, "info"?: {...}}`
 *   (webshop names the observation `state`);
 * - `GET /observation?id=N` -> the observation, as a string or `{"observation": "..."}`;
 * - `POST /close` `{"id": N}`.
 * These servers answer 200 with `{"error": "..."}` when something fails; that is a RemoteEnvError of
 * kind "server". They keep no request ids, so a step retried after a timeout may be played twice.
 */
export class AgentGymClient implements AsyncEnv<object, StepInfo> {
  readonly name: string;
  readonly config: Readonly<object>;
  readonly instructions: string;
  readonly actions: readonly string[] | null;
  private isDone = false;
  private index: number | string | undefined;

  constructor(private readonly options: AgentGymClientOptions) {
    this.name = options.name ?? "remote";
    this.config = options.config ?? {};
    this.instructions = options.instructions ?? "";
    this.actions = options.actions ?? null;
  }

  get done(): boolean {
    return this.isDone;
  }

  /** The server's index of this env, once created. */
  get envIndex(): number | string | undefined {
    return this.index;
  }

  async reset(seed: number): Promise<string> {
    const index = await this.created();
    const reply = await this.call({
      method: "POST",
      path: "/reset",
      body: { [this.indexField]: index, [this.options.seedField ?? "data_idx"]: seed },
    });
    const source = this.source("POST", "/reset");
    let observation: unknown;
    if (Array.isArray(reply)) observation = reply[0];
    else if (isRecord(reply)) observation = reply.observation ?? reply.state;
    else observation = reply;
    if (typeof observation !== "string") throw badReply(source, 'no "observation" string');
    this.isDone = isRecord(reply) ? readDone(source, reply.done, "done") : false;
    return observation;
  }

  async step(action: string): Promise<StepResult<StepInfo>> {
    const index = await this.created();
    const reply = await this.call({
      method: "POST",
      path: "/step",
      body: { [this.indexField]: index, action },
    });
    const source = this.source("POST", "/step");
    if (!isRecord(reply)) throw badReply(source, "reply is not a JSON object");
    const observation = reply.observation ?? reply.state;
    if (typeof observation !== "string") throw badReply(source, 'no "observation" (or "state") string');
    const reward = readReward(source, reply.reward, "reward");
    const done = readDone(source, reply.done, "done");
    this.isDone = done;
    return stepResult(observation, reward, done, reply.info);
  }

  /** `GET /observation`: the env's current observation. */
  async render(): Promise<string> {
    const index = await this.created();
    const reply = await this.call({
      method: "GET",
      path: "/observation",
      query: { [this.indexField]: index },
    });
    const text = isRecord(reply) ? reply.observation : reply;
    if (typeof text !== "string") throw badReply(this.source("GET", "/observation"), "no observation string");
    return text;
  }

  /** `POST /close`: frees the server's env; a later reset creates a new one. */
  async close(): Promise<void> {
    if (this.index === undefined) return;
    const index = this.index;
    this.index = undefined;
    await this.call({ method: "POST", path: "/close", body: { [this.indexField]: index } });
  }

  private get indexField(): string {
    return this.options.indexField ?? "id";
  }

  private creating: Promise<number | string> | undefined;

  /** The server's env index, created on first use. */
  private created(): Promise<number | string> {
    if (this.index !== undefined) return Promise.resolve(this.index);
    this.creating ??= this.create().finally(() => {
      this.creating = undefined;
    });
    return this.creating;
  }

  private async create(): Promise<number | string> {
    const reply = await this.call({ method: "POST", path: "/create", body: this.options.createBody ?? {} });
    const index = isRecord(reply) ? (reply[this.indexField] ?? reply.id ?? reply.env_idx) : reply;
    if (typeof index !== "number" && typeof index !== "string")
      throw badReply(this.source("POST", "/create"), `no env index (a number, or "${this.indexField}")`);
    this.index = index;
    return index;
  }

  /** The reply's JSON, with AgentGym's in-band `{"error": ...}` turned into a RemoteEnvError. */
  private async call(request: JsonRequest): Promise<unknown> {
    const reply = await requestJson(this.options, request);
    if (isRecord(reply) && reply.error !== undefined && reply.error !== null) {
      const { url, endpoint } = badReply(this.source(request.method, request.path), "");
      const message = typeof reply.error === "string" ? reply.error : JSON.stringify(reply.error);
      throw new RemoteEnvError(
        `${endpoint} ${url}: the server reports: ${message}`,
        "server",
        url,
        endpoint,
        200,
      );
    }
    return reply;
  }

  private source(method: "GET" | "POST", path: string): ReplySource {
    return { root: this.options.url, method, path };
  }
}
