/**
 * A policy served by SGLang's native `POST /generate`, token in, token out.
 *
 * The SGLang fields this relies on (io_struct.GenerateReqInput and the tokenizer manager's meta_info):
 * - request `input_ids: number[]`, `sampling_params` {max_new_tokens, temperature, top_p, top_k (-1:
 *   off), min_p, stop_token_ids}, `return_logprob: true`, `logprob_start_len: -1` (output tokens only),
 *   `lora_path`: the name an adapter was loaded under (`/load_lora_adapter`), per request;
 * - response `meta_info.output_token_logprobs`: one `[logprob, token_id, text | null]` per sampled token
 *   (the text only with return_text_in_logprobs), and `meta_info.finish_reason`
 *   (`{type: "stop", matched: <id>}` or `{type: "length", length: n}`); `output_ids`, where the server
 *   sends it, is checked against the ids of the log-probs.
 *
 * Log-probs: SGLang reports the sampled token's log-prob under the temperature-scaled distribution, as
 * this project's samplers do, unless the server runs with SGLANG_RETURN_ORIGINAL_LOGPROB=1 (then before
 * temperature): leave that unset. No seed is sent (SGLang seeds per server, `--random-seed`).
 */
import type { PolicyOutput, PolicyPrompt, PolicySampling } from "../policy.js";
import {
  malformed,
  type RemotePolicyOptions,
  type RemoteRequest,
  RemoteTokenPolicy,
} from "./remote-policy.js";

export type SglangGeneratePolicyOptions = RemotePolicyOptions;

export class SglangGeneratePolicy extends RemoteTokenPolicy {
  protected request(prompt: PolicyPrompt, sampling: PolicySampling): RemoteRequest {
    const { topP, topK, minP } = this.cuts(sampling);
    return {
      path: "/generate",
      body: {
        input_ids: Array.from(prompt.tokens),
        sampling_params: {
          max_new_tokens: sampling.maxNewTokens,
          temperature: sampling.temperature,
          top_p: topP,
          top_k: topK,
          min_p: minP,
          stop_token_ids: [...this.stopTokenIds],
        },
        return_logprob: true,
        logprob_start_len: -1,
        ...(this.adapter === undefined ? {} : { lora_path: this.adapter }),
      },
    };
  }

  protected parse(reply: unknown, url: string): PolicyOutput {
    const body = reply as {
      output_ids?: unknown;
      meta_info?: { output_token_logprobs?: unknown; finish_reason?: unknown };
    } | null;
    const entries = body?.meta_info?.output_token_logprobs;
    if (!Array.isArray(entries)) throw malformed(url, "no meta_info.output_token_logprobs");
    const ids: number[] = [];
    const logProbs: number[] = [];
    for (const entry of entries) {
      const [logProb, id] = Array.isArray(entry) ? entry : [];
      if (!Number.isInteger(id) || (id as number) < 0)
        throw malformed(
          url,
          `an output_token_logprobs entry that is not [logprob, token_id, text]: ${JSON.stringify(entry)}`,
        );
      ids.push(id as number);
      logProbs.push(typeof logProb === "number" ? logProb : Number.NaN);
    }
    const outputIds = body?.output_ids;
    if (
      Array.isArray(outputIds) &&
      (outputIds.length !== ids.length || outputIds.some((id, i) => id !== ids[i]))
    )
      throw malformed(url, "output_ids that disagree with meta_info.output_token_logprobs");
    const finish = body?.meta_info?.finish_reason as { type?: unknown; matched?: unknown } | null | undefined;
    return this.withStop(ids, logProbs, finish?.type === "stop" ? finish.matched : undefined);
  }
}
