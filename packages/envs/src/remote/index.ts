export { AgentGymClient, type AgentGymClientOptions } from "./agentgym-client.js";
export {
  connectEnv,
  ENV_SERVER_PROTOCOLS,
  type EnvServerAddress,
  type EnvServerProtocol,
} from "./connect.js";
export {
  type HttpOptions,
  REMOTE_ENV_DEFAULTS,
  RemoteEnvError,
  type RemoteEnvErrorKind,
  readBodyWithin,
} from "./http.js";
export { OpenEnvClient, type OpenEnvClientOptions, type RemoteEnvDescription } from "./openenv-client.js";
export { toStepInfo } from "./reply.js";
