import type { AsyncEnv } from "../types.js";
import { AgentGymClient, type AgentGymClientOptions } from "./agentgym-client.js";
import { OpenEnvClient, type OpenEnvClientOptions } from "./openenv-client.js";

/** The HTTP conventions a client speaks. */
export const ENV_SERVER_PROTOCOLS = ["openenv", "agentgym"] as const;
export type EnvServerProtocol = (typeof ENV_SERVER_PROTOCOLS)[number];

/** Where an env's episodes run: a server's root URL and the convention it speaks. */
export interface EnvServerAddress {
  url: string;
  protocol: EnvServerProtocol;
}

/**
 * A client for the env server at `address` (a new session or server-side env per client). `options`
 * adds what the server cannot say (the env's name, config, instructions and actions for prompts) and
 * the timeouts and retries.
 */
export function connectEnv(
  address: EnvServerAddress,
  options: Omit<OpenEnvClientOptions & AgentGymClientOptions, "url"> = {},
): AsyncEnv {
  switch (address.protocol) {
    case "openenv":
      return new OpenEnvClient({ ...options, url: address.url });
    case "agentgym":
      return new AgentGymClient({ ...options, url: address.url });
    default:
      throw new Error(
        `Unknown env server protocol ${JSON.stringify((address as { protocol: unknown }).protocol)}; expected ${ENV_SERVER_PROTOCOLS.join(" or ")}`,
      );
  }
}
