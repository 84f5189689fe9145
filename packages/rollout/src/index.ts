export { Conversation, type ConversationTurn, type TokenSequence } from "./conversation.js";
export {
  EnvManager,
  type EnvManagerConfig,
  EnvManagerConfigError,
  type EnvSlot,
  type EnvTagGroups,
  type RolloutMode,
  TRAIN_SEED_BASE,
  type TurnOutcome,
  VALIDATION_SEED,
} from "./env-manager.js";
export { LocalModelPolicy, type LocalModelPolicyOptions } from "./local-model-policy.js";
export {
  DEFAULT_MAX_RESPONSE_BYTES,
  OpenAIChatPolicy,
  type OpenAIChatPolicyOptions,
  OpenAIPolicyError,
  type OpenAIUsage,
} from "./openai-chat-policy.js";
export { deservesFormatPenalty, type ParsedResponse, type ParseOptions, parseResponse } from "./parse.js";
export {
  type Policy,
  type PolicyOutput,
  type PolicyPrompt,
  type PolicySampling,
  promptSeed,
} from "./policy.js";
export {
  ACTION_SEPARATOR,
  buildChatMessages,
  formatReward,
  instructionText,
  type PromptFormat,
  type PromptTurn,
  responsePrefix,
  SYSTEM_PROMPT,
  turnText,
} from "./prompt.js";
export {
  type AdapterPlacement,
  AdapterPublisher,
  type AdapterPublisherOptions,
  type AdapterServerKind,
  adapterId,
} from "./remote/adapter-publisher.js";
export { AdapterPublishError, RemotePolicyError, UnknownAdapterError } from "./remote/errors.js";
export { type RemotePolicyOptions, type RemoteRequest, RemoteTokenPolicy } from "./remote/remote-policy.js";
export {
  type ReplicaLease,
  ReplicaPool,
  type ReplicaPoolOptions,
  type ReplicaStatus,
} from "./remote/replica-pool.js";
export { SglangGeneratePolicy, type SglangGeneratePolicyOptions } from "./remote/sglang-generate-policy.js";
export {
  VllmCompletionsPolicy,
  type VllmCompletionsPolicyOptions,
} from "./remote/vllm-completions-policy.js";
export {
  batchMetrics,
  type ContextOverflow,
  ContextOverflowError,
  type FinishReason,
  type LostEpisode,
  ROLLOUT_DEFAULTS,
  RolloutError,
  type RolloutOptions,
  runRollout,
  type Trajectory,
  type TrajectoryBatch,
  type TurnRecord,
  trainingRows,
} from "./rollout.js";
export {
  placeChatRewards,
  type RewardPlacement,
  splitTrainingSequences,
  type TrainingSequence,
} from "./training-sequences.js";
