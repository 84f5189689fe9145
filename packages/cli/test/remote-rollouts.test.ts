/**
 * Training on remote rollouts against this project's own model behind vLLM's API (startPolicyServer).
 * With rollout.maxStaleness=0 a run's metrics are the local engine's on the same seeds, and a resumed
 * run's are the unbroken one's (generation restarts from the checkpoint's version). With k = 1 the next
 * batch is sampled while the learner updates, every version is published to the server and the stale
 * ones unloaded, and the learner's behaviour log-probs under the sampling version match the server's.
 *
 * The synchronous runs serve the model from this process: the learner only waits while the server
 * samples. The asynchronous one cannot: the tensor library's autograd switch and scope stack belong to
 * the process, so a server sampling in it while the learner trains would take the learner's tape
 * apart. It runs `ragen serve-policy` as a child process (as a vLLM replica is one), behind a proxy
 * here that records what the server was asked.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseMetricsJsonl, parseTrajectoriesJsonl } from "@ragen/logging";
import { webGpuBackend } from "@ragen/tensor-webgpu";
import { adapterNameFor, type LoadedPolicy, SMOKE_RUN_SETTINGS, type TrainingSummary } from "@ragen/trainer";
import { ADAPTERS_DIR, loadPolicy, resolveRunSettings, trainInFolder } from "@ragen/trainer/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnvServer } from "../src/commands/serve-env.js";
import { type PolicyServer, startPolicyServer } from "../src/policy-server.js";
import { quiet } from "./support/quiet.js";

const bin = fileURLToPath(new URL("../dist/bin.js", import.meta.url));
const root = mkdtempSync(join(tmpdir(), "ragen-remote-rollouts-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** One env: FrozenLake, short answers, rank-4 adapters. */
const ONE_ENV = [
  ...SMOKE_RUN_SETTINGS,
  "model=embedded",
  "envs=FrozenLakeGridCoord",
  "train.envGroups=1",
  "train.groupSize=1",
  "validation.groupsPerEnv=1",
  "validation.every=1",
  "rollout.maxNewTokens=24",
  "starpo.uncertaintyFilter=false",
  "lora.rank=4",
  "lora.alpha=8",
  // A rate at which one update visibly moves the adapter (B starts at 0), so a batch sampled with the
  // wrong version would show in the metrics and in the log-prob mismatch.
  "starpo.actorLr=5e-3",
  "starpo.lrWarmupSteps=0",
  "checkpointEvery=1",
];

/**
 * Several prompts a turn. vLLM's API seeds each request (the turn's seed + its index), and so does the
 * local sampler with rollout.seedPerPrompt, so the two engines sample the same tokens.
 */
const SYNC_RUN = [...ONE_ENV, "train.envGroups=2", "train.groupSize=2", "validation.groupsPerEnv=2"];

const train = (overrides: string[]): Promise<TrainingSummary> =>
  quiet(async () => trainInFolder(await resolveRunSettings({ cwd: root, overrides })));

const rowsOf = (dir: string) => parseMetricsJsonl(readFileSync(join(dir, "metrics.jsonl"), "utf8"));
const trainRecordsOf = (dir: string) =>
  parseTrajectoriesJsonl(readFileSync(join(dir, "trajectories.jsonl"), "utf8")).filter(
    (t) => t.split === "train",
  );

/** Metrics that measure time or memory, and the remote engine's own. */
const compared = (key: string) =>
  !key.startsWith("timing_s/") &&
  !key.startsWith("rollout/") &&
  !["perf/time_per_step", "perf/throughput", "perf/max_memory"].includes(key);

describe("remote rollouts against this project's model served as vLLM", () => {
  let served: LoadedPolicy;
  let server: PolicyServer;
  const localDir = join(root, "local");
  const remoteDir = join(root, "remote-sync");
  const sync = (outDir: string, steps: number) =>
    train([
      ...SYNC_RUN,
      `steps=${steps}`,
      `outDir=${outDir}`,
      "rollout.engine=vllm",
      `rollout.servers=${server.url}`,
      "rollout.maxStaleness=0",
    ]);

  beforeAll(async () => {
    served = await loadPolicy("embedded", await webGpuBackend());
    server = await startPolicyServer({
      model: served.model,
      tokenizer: served.tokenizer,
      modelName: "embedded",
      port: 0,
      maxModelLength: served.config.maxPositionEmbeddings,
    });
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    served?.model.dispose();
  });

  it("with maxStaleness 0 give the local engine's metrics on the same seeds, several prompts a turn", async () => {
    await train([...SYNC_RUN, "rollout.seedPerPrompt=true", "steps=2", `outDir=${localDir}`]);
    await sync(remoteDir, 2);
    // k = 0 keeps no stale version: the server holds the newest adapter alone, and so does the folder.
    const name = adapterNameFor(remoteDir);
    expect(server.adapters()).toEqual([`${name}@2`]);
    expect(readdirSync(join(remoteDir, ADAPTERS_DIR))).toEqual([`${name}@2`]);

    const local = rowsOf(localDir);
    const remote = rowsOf(remoteDir);
    expect(remote.map((row) => row.step)).toEqual([0, 1, 2]);
    for (const [i, row] of local.entries()) {
      const keys = Object.keys(row.metrics).filter(compared);
      // Step 0 holds the validation before training; the others the rollout's and the update's too.
      expect(keys.length).toBeGreaterThan(row.step === 0 ? 5 : 30);
      for (const key of keys) {
        const [mine, theirs] = [remote[i]!.metrics[key]!, row.metrics[key]!];
        expect(Math.abs(mine - theirs), `step ${row.step} ${key}: ${mine} vs ${theirs}`).toBeLessThanOrEqual(
          1e-4 * Math.max(1, Math.abs(theirs)),
        );
      }
    }
    // The same episodes, token for token as far as the records show them.
    const strip = (records: ReturnType<typeof trainRecordsOf>) =>
      records.map(({ policyVersion: _v, ...record }) => record);
    expect(strip(trainRecordsOf(remoteDir))).toEqual(strip(trainRecordsOf(localDir)));
    // Each batch was sampled with the previous step's adapter, and the engines agree on its log-probs.
    for (const row of remote.slice(1)) {
      expect(row.metrics["rollout/adapter_version"]).toBe(row.step - 1);
      expect(row.metrics["rollout/stale_dropped"]).toBe(0);
      expect(row.metrics["rollout/logprob_mismatch_max"]).toBeLessThan(1e-3);
    }
    expect(trainRecordsOf(remoteDir).map((t) => [t.step, t.policyVersion])).toEqual([
      ...Array(4).fill([1, 0]),
      ...Array(4).fill([2, 1]),
    ]);
  }, 240_000);

  it("resume from the checkpoint's version: a run stopped after step 1 goes on as the unbroken one", async () => {
    const resumedDir = join(root, "remote-resumed");
    const name = adapterNameFor(resumedDir);
    await sync(resumedDir, 1);
    expect(server.adapters()).toContain(`${name}@1`);
    await sync(resumedDir, 2);
    // The first attempt's version 1 was unloaded and published again from the checkpoint; k = 0 then
    // unloaded it for version 2.
    expect(server.adapters().filter((adapter) => adapter.startsWith(name))).toEqual([`${name}@2`]);
    const resumed = rowsOf(resumedDir);
    expect(resumed.map((row) => row.step)).toEqual([0, 1, 2]);
    const unbroken = rowsOf(remoteDir)[2]!.metrics;
    for (const key of Object.keys(unbroken).filter(compared))
      expect(resumed[2]!.metrics[key], key).toBeCloseTo(unbroken[key]!, 5);
    expect(trainRecordsOf(resumedDir).filter((t) => t.step === 2)).toEqual(
      trainRecordsOf(remoteDir).filter((t) => t.step === 2),
    );
  }, 180_000);

  it("with maxStaleness 1 and the env on an env server, sample the next batch during the update, publish every version and drop nothing; resumed runs replay it", async () => {
    const child = spawn(process.execPath, [bin, "serve-policy", "model=embedded", "port=0"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    const proxy = await recordingProxy(await servedUrl(child));
    const envServer = await startEnvServer({ env: "FrozenLakeGridCoord", port: 0 });
    const envProxy = await recordingProxy(envServer.url);
    const outDir = join(root, "remote-async");
    const resumedDir = join(root, "remote-async-resumed");
    const asyncRun = (dir: string, steps: number) =>
      train([
        ...ONE_ENV,
        "train.groupSize=2",
        "validation.every=3",
        `steps=${steps}`,
        `outDir=${dir}`,
        "rollout.engine=vllm",
        `rollout.servers=${proxy.url}`,
        "rollout.maxStaleness=1",
        `envServers=FrozenLakeGridCoord=${envProxy.url}`,
      ]);
    let unbrokenRequests: number;
    try {
      const summary = await asyncRun(outDir, 3);
      expect(summary.steps).toBe(3);
      unbrokenRequests = proxy.requests.length;
      // Every episode, training and validation, started on the env server (with 24-token answers the
      // model seldom names an action, so steps are few), and its sessions were closed.
      expect(envProxy.requests.filter((r) => r.path === "/reset").length).toBeGreaterThanOrEqual(
        3 * 2 + 2 * 1,
      );
      expect(envServer.sessions).toBe(0);
      // Stopped after step 1 and resumed, then after step 2 and resumed again: the first resume samples
      // batch 2 with version 0 (the base model), the second batch 3 with version 1 from its kept folder,
      // as the unbroken run did, so both replay it.
      for (const steps of [1, 2, 3]) await asyncRun(resumedDir, steps);
    } finally {
      await proxy.close();
      await envProxy.close();
      await envServer.close();
      child.kill("SIGTERM");
    }

    const resumed = rowsOf(resumedDir);
    const unbroken = rowsOf(outDir);
    expect(resumed.map((row) => row.step)).toEqual([0, 1, 2, 3]);
    for (const [i, row] of unbroken.entries())
      for (const key of Object.keys(row.metrics).filter(compared))
        expect(resumed[i]!.metrics[key], `step ${row.step} ${key}`).toBeCloseTo(row.metrics[key]!, 5);
    for (const row of resumed.slice(1))
      expect(row.metrics["rollout/adapter_version"]).toBe(Math.max(0, row.step - 2));
    expect(trainRecordsOf(resumedDir)).toEqual(trainRecordsOf(outDir));

    const name = adapterNameFor(outDir);
    const admin = proxy.requests
      .slice(0, unbrokenRequests!)
      .filter((r) => r.path !== "/v1/completions" && r.path !== "/health");
    // The start looks for an earlier attempt's versions; then each update's version is loaded and
    // checked in the listing, and with k = 1 the version before the previous one is unloaded.
    expect(admin.map((r) => `${r.method} ${r.path} ${r.body?.lora_name ?? ""}`.trim())).toEqual([
      "GET /v1/models",
      `POST /v1/load_lora_adapter ${name}@1`,
      "GET /v1/models",
      `POST /v1/load_lora_adapter ${name}@2`,
      "GET /v1/models",
      `POST /v1/load_lora_adapter ${name}@3`,
      "GET /v1/models",
      `POST /v1/unload_lora_adapter ${name}@1`,
    ]);
    const loads = admin.filter((r) => r.path === "/v1/load_lora_adapter");
    expect(loads.map((r) => r.body.lora_path)).toEqual(
      [1, 2, 3].map((v) => join(outDir, ADAPTERS_DIR, `${name}@${v}`)),
    );
    // Folders of versions no queued batch can need are gone.
    expect(readdirSync(join(outDir, ADAPTERS_DIR)).sort()).toEqual([`${name}@2`, `${name}@3`]);
    // The requests named more than one model over the run: the base, then adapter versions.
    const completions = proxy.requests.filter((r) => r.path === "/v1/completions");
    expect(new Set(completions.map((r) => r.body.model)).size).toBeGreaterThan(1);

    const rows = rowsOf(outDir).slice(1);
    const versions = rows.map((row) => row.metrics["rollout/adapter_version"]!);
    // Batch 2 was sampled while update 1 ran, with version 0; every batch lags exactly one version.
    for (const [i, row] of rows.entries()) {
      expect(versions[i]).toBe(Math.max(0, row.step - 2));
      expect(row.metrics["rollout/stale_dropped"]).toBe(0);
      expect(row.metrics["rollout/versions_in_flight"]).toBeGreaterThanOrEqual(1);
      // Recomputed under the version that sampled it, the learner agrees with the server.
      expect(row.metrics["rollout/logprob_mismatch_max"]).toBeLessThan(1e-3);
      expect(row.metrics["rollout/importance_weight_mean"]).toBeCloseTo(1, 3);
    }
    for (const record of trainRecordsOf(outDir)) expect(record.policyVersion).toBe(versions[record.step - 1]);
    expect(existsSync(join(outDir, "checkpoint", "adapter_model.safetensors"))).toBe(true);
    // A safety net, not a timing: two processes on a software GPU share the cores with other tests.
  }, 420_000);
});

/** The URL `ragen serve-policy` prints once it listens. */
function servedUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const url = / at (http:\/\/\S+) /.exec(out)?.[1];
      if (url) resolve(url);
    });
    child.stderr!.on("data", (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.on("exit", (code) => reject(new Error(`ragen serve-policy exited with ${code}: ${err}`)));
  });
}

interface Recorded {
  method: string;
  path: string;
  // biome-ignore lint/suspicious/noExplicitAny: request bodies are checked field by field
  body: any;
}

/** An HTTP proxy to `target` that records each request before forwarding it. */
async function recordingProxy(
  target: string,
): Promise<{ url: string; requests: Recorded[]; close(): Promise<void> }> {
  const requests: Recorded[] = [];
  const forward = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    requests.push({
      method: req.method ?? "",
      path: req.url ?? "",
      body: text ? JSON.parse(text) : undefined,
    });
    try {
      const reply = await fetch(`${target}${req.url}`, {
        method: req.method,
        ...(text ? { body: text, headers: { "content-type": "application/json" } } : {}),
      });
      const body = Buffer.from(await reply.arrayBuffer());
      res.writeHead(reply.status, { "content-type": reply.headers.get("content-type") ?? "text/plain" });
      res.end(body);
    } catch (error) {
      res.writeHead(502).end(String(error));
    }
  };
  const server: Server = createServer((req, res) => void forward(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
