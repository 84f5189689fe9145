/**
 * Does an asynchronous remote run learn as well as a local one? Trains the same LoRA job twice on the
 * same seeds — sampled in process (rollout.engine=local), and on `ragen serve-policy` behind vLLM's API
 * with the next batch sampled during each update (rollout.engine=vllm, rollout.maxStaleness=1) — and
 * prints both validation curves, the remote run's staleness and log-prob mismatch, and the wall time of
 * each. The server is this project's own model, started as a child process as a vLLM replica would be.
 *
 *   pnpm --filter @ragen/cli bench:remote-vs-local [-- work=/tmp/remote-vs-local key=value ...]
 *
 * Extra key=values go to both runs (e.g. steps=40 lora.rank=16 model=<folder>); `staleness=0` compares
 * the synchronous remote run instead. With `seeds=0,1,2` each side is a seed sweep (resumable: a rerun
 * skips the finished seeds) and the comparison is of the means ± standard error across seeds; without
 * it the work folder is cleared first. The default is the Quest job on the embedded model with rank-8
 * adapters: a CPU with lavapipe runs it, slowly.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseMetricsJsonl } from "@ragen/logging";
import type { SweepSummary } from "@ragen/trainer";

const bin = fileURLToPath(new URL("../dist/bin.js", import.meta.url));
const args = process.argv.slice(2);
const option = (name: string) => args.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1);
const work = option("work") ?? "/tmp/remote-vs-local";
const staleness = option("staleness") ?? "1";
const extra = args.filter((a) => !a.startsWith("work=") && !a.startsWith("staleness="));
const sweeping = extra.some((a) => a.startsWith("seeds="));
const model = extra.find((a) => a.startsWith("model="))?.slice(6) ?? "embedded";

// The profile's checkpoints stay on: a sweep cut off mid-seed resumes that seed, and both loops resume
// exactly (remote ones at any k too).
const common = ["lora.rank=8", "lora.alpha=16"];

/** Runs `node bin.js ...argv` with its output shown; resolves with the seconds it took. */
function run(argv: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(process.execPath, [bin, ...argv], { stdio: "inherit" });
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0
        ? resolve((performance.now() - start) / 1000)
        : reject(new Error(`ragen ${argv[0]} exited with ${code}`)),
    );
  });
}

/** Starts `ragen serve-policy` and resolves with the child and the URL it printed. */
function serve(): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, "serve-policy", `model=${model}`, "port=0"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const url = / at (http:\/\/\S+) /.exec(out)?.[1];
      if (url) resolve({ child, url });
    });
    child.on("exit", (code) => reject(new Error(`ragen serve-policy exited with ${code}`)));
  });
}

/** A run's folders: the run itself, or each seed's of a sweep. */
function runFolders(dir: string): string[] {
  if (!sweeping) return [dir];
  return readdirSync(dir)
    .filter((name) => /^seed-\d+$/.test(name) && existsSync(join(dir, name, "metrics.jsonl")))
    .map((name) => join(dir, name));
}

/** step -> the validation metrics of that step, and the remote metrics of each training step. */
function curves(dir: string) {
  const rows = parseMetricsJsonl(readFileSync(join(dir, "metrics.jsonl"), "utf8"));
  const validation = rows
    .filter((row) => Object.keys(row.metrics).some((key) => key.startsWith("val-env/")))
    .map((row) => ({
      step: row.step,
      success: Object.fromEntries(
        Object.entries(row.metrics)
          .filter(([key]) => /^val-env\/[^/]+\/success$/.test(key))
          .map(([key, value]) => [key.split("/")[1]!, value]),
      ),
    }));
  return { rows, validation };
}

if (!sweeping) rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
const localDir = join(work, "local");
const remoteDir = join(work, `remote-k${staleness}`);

const seedsArgument = extra.find((a) => a.startsWith("seeds="));
const perSeed = [...common, ...extra.filter((a) => a !== seedsArgument)];
// A sweep runs seed by seed, local then remote, so a cut-off comparison still pairs every seed it has;
// the last call of each side (every seed, all finished) writes its sweep summary.
const rounds = seedsArgument
  ? [
      ...seedsArgument
        .slice(6)
        .split(",")
        .map((seed) => [`seeds=${seed}`]),
      [seedsArgument],
    ]
  : [[]];
let localSeconds = 0;
let remoteSeconds = 0;
const { child, url } = await serve();
try {
  for (const round of rounds) {
    console.log(`\nlocal engine ${round.join(" ")} -> ${localDir}`);
    // Seeded per prompt as the server seeds each request: the two runs start from the same samples, and
    // what differs after is what asynchrony does.
    localSeconds += await run([
      "train",
      ...perSeed,
      ...round,
      `outDir=${localDir}`,
      "rollout.seedPerPrompt=true",
    ]);
    console.log(
      `\nremote engine on ${url}, rollout.maxStaleness=${staleness} ${round.join(" ")} -> ${remoteDir}`,
    );
    remoteSeconds += await run([
      "train",
      ...perSeed,
      ...round,
      `outDir=${remoteDir}`,
      "rollout.engine=vllm",
      `rollout.servers=${url}`,
      `rollout.maxStaleness=${staleness}`,
    ]);
  }
} finally {
  child.kill("SIGTERM");
}

const lines: string[] = [];
const say = (line = "") => {
  console.log(line);
  lines.push(line);
};
const pct = (value: number | undefined) => (value === undefined ? "" : `${(100 * value).toFixed(1)}%`);

for (const folder of runFolders(localDir)) {
  const seed = folder === localDir ? "" : ` (${folder.split("/").at(-1)})`;
  const local = curves(folder);
  const remoteFolder = join(remoteDir, folder.slice(localDir.length));
  if (!existsSync(join(remoteFolder, "metrics.jsonl"))) continue;
  const remote = curves(remoteFolder);
  const envs = Object.keys(local.validation[0]?.success ?? {});
  say(`\nvalidation success${seed}, local | remote k = ${staleness}`);
  say(["step", ...envs.flatMap((env) => [`${env} local`, `${env} remote`])].join("\t"));
  for (const point of local.validation) {
    const other = remote.validation.find((p) => p.step === point.step);
    say(
      [point.step, ...envs.flatMap((env) => [pct(point.success[env]), pct(other?.success[env])])].join("\t"),
    );
  }
  const trained = remote.rows.filter((row) => row.step > 0);
  const mean = (key: string) =>
    trained.reduce((sum, row) => sum + (row.metrics[key] ?? 0), 0) / Math.max(trained.length, 1);
  say(
    `remote${seed}: staleness ${mean("rollout/staleness").toFixed(2)} versions on average, ` +
      `${trained.reduce((n, row) => n + (row.metrics["rollout/stale_dropped"] ?? 0), 0)} trajectories dropped, ` +
      `log-prob mismatch ${mean("rollout/logprob_mismatch_mean").toExponential(2)} mean / ` +
      `${Math.max(...trained.map((row) => row.metrics["rollout/logprob_mismatch_max"] ?? 0)).toExponential(2)} max, ` +
      `importance weight ${mean("rollout/importance_weight_mean").toFixed(4)} mean`,
  );
}

if (sweeping) {
  const read = (dir: string) => JSON.parse(readFileSync(join(dir, "sweep.json"), "utf8")) as SweepSummary;
  const [local, remote] = [read(localDir), read(remoteDir)];
  const band = (m: { mean: number; standardError: number }) =>
    `${pct(m.mean)} ± ${Number.isNaN(m.standardError) ? "?" : pct(m.standardError)}`;
  say(`\nacross seeds ${local.seeds.join(", ")} (mean ± standard error of the seeds)`);
  say(
    `| env | local start → end | remote k = ${staleness} start → end | seeds above start (local, remote) |`,
  );
  say("|---|---|---|---|");
  for (const env of local.envs) {
    const other = remote.envs.find((e) => e.envTag === env.envTag);
    if (!other) continue;
    say(
      `| ${env.envTag} | ${band(env.start)} → ${band(env.end)} | ${band(other.start)} → ${band(other.end)} | ` +
        `${env.improved} of ${env.finished}, ${other.improved} of ${other.finished} |`,
    );
  }
}
say(`\nwall time: local ${localSeconds.toFixed(0)} s, remote ${remoteSeconds.toFixed(0)} s`);
writeFileSync(join(work, "comparison.md"), `${lines.join("\n")}\n`);
