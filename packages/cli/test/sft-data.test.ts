import { createEnv, type FrozenLakeEnv, Rng, SokobanEnv } from "@ragen/envs";
import { parseResponse } from "@ragen/rollout";
import { describe, expect, it } from "vitest";
import { guideAction, guidePlan, movesTowardsGoal, thoughtOrder } from "../src/sft/guide.js";
import {
  generateReadingDrills,
  generateSftConversations,
  sftCorpus,
  sftFormat,
} from "../src/sft/sft-data.js";
import { thoughtFor } from "../src/sft/thoughts.js";

const seeds = Array.from({ length: 200 }, (_, i) => i);

describe("SFT warm-start data", () => {
  it("writes RAGEN-format chats whose answers parse to the actions played", () => {
    const [chat] = generateSftConversations({ envTag: "FrozenLake", seeds: [3], oracleProbability: 0.5 });
    const roles = chat!.messages.map((m) => m.role);
    expect(roles[0]).toBe("system");
    expect(roles.slice(1).every((r, i) => r === (i % 2 === 0 ? "user" : "assistant"))).toBe(true);
    expect(chat!.messages[1]!.content).toContain("Turn 1:\nState:\n");
    for (const message of chat!.messages.filter((m) => m.role === "assistant")) {
      const parsed = parseResponse(message.content, {
        actions: ["Left", "Down", "Right", "Up"],
        maxActionsPerTurn: 1,
      });
      expect(parsed.formatOk).toBe(true);
      expect(parsed.actions).toHaveLength(1);
      expect(parsed.think.toLowerCase()).toContain(parsed.actions[0]!.toLowerCase());
    }
  });

  it("mixes oracle and random actions in the asked proportion, so the warm start is mediocre", () => {
    const chats = generateSftConversations({ envTag: "FrozenLake", seeds, oracleProbability: 0.6 });
    const flags = chats.flatMap((c) => c.fromOracle);
    const share = flags.filter(Boolean).length / flags.length;
    expect(Math.abs(share - 0.6)).toBeLessThan(5 * Math.sqrt((0.6 * 0.4) / flags.length));
    // Success needs more seeds to tell apart: the mix of the shipped recipe against the guide alone.
    const many = Array.from({ length: 1000 }, (_, i) => i);
    const mixed = generateSftConversations({ envTag: "FrozenLake", seeds: many, oracleProbability: 0.3 });
    const success = mixed.filter((c) => c.success).length / mixed.length;
    const oracleOnly = generateSftConversations({ envTag: "FrozenLake", seeds: many, oracleProbability: 1 });
    const oracleSuccess = oracleOnly.filter((c) => c.success).length / oracleOnly.length;
    expect(success).toBeLessThan(oracleSuccess);
  });

  it("covers Bandit with one pull per chat", () => {
    const chats = generateSftConversations({
      envTag: "Bandit",
      seeds: seeds.slice(0, 50),
      oracleProbability: 0.5,
    });
    expect(chats.every((c) => c.fromOracle.length === 1)).toBe(true);
    const last = chats[0]!.messages.at(-1)!;
    expect(last.role).toBe("assistant");
    expect(last.content).toMatch(/<answer>(Phoenix|Dragon)<\/answer>$/);
  });

  it("is deterministic and yields a training corpus", () => {
    const a = generateSftConversations({ envTag: "FrozenLake", seeds: [1, 2], oracleProbability: 0.5 });
    const b = generateSftConversations({ envTag: "FrozenLake", seeds: [1, 2], oracleProbability: 0.5 });
    expect(a).toEqual(b);
    expect(sftCorpus(a).length).toBe(a.reduce((n, c) => n + c.messages.length, 0));
  });

  it("reads the FrozenLake grid out loud: the player's and the goal's cells, counted from 1", () => {
    for (const chat of generateSftConversations({
      envTag: "FrozenLake",
      seeds: seeds.slice(0, 30),
      oracleProbability: 0.5,
    })) {
      for (const turn of chat.turns) {
        const rows = turn.observation.split("\n");
        const cellOf = (symbols: RegExp) => {
          const row = rows.findIndex((line) => symbols.test(line));
          return [row + 1, rows[row]!.search(symbols) + 1];
        };
        const match = /I am at row (\d), column (\d); the goal is at row (\d), column (\d)/.exec(
          turn.response!,
        );
        expect(match, turn.response).not.toBeNull();
        expect(match!.slice(1, 3).map(Number)).toEqual(cellOf(/P/));
        expect(match!.slice(3, 5).map(Number)).toEqual(cellOf(/G/));
      }
    }
  });

  it("copies the coordinates of player and goal where the observation lists them", () => {
    for (const chat of generateSftConversations({
      envTag: "FrozenLakeGridCoord",
      seeds: seeds.slice(0, 30),
      oracleProbability: 0.5,
    })) {
      chat.turns.forEach((turn, i) => {
        const listed = (name: string) => new RegExp(`${name}: (\\(\\d, \\d\\))`).exec(turn.observation)![1];
        expect(turn.response).toContain(`I am at ${listed("Player")}; the goal is at ${listed("Goal")}, `);
        // The promotable template exactly on the guide's turns.
        expect(turn.response!.includes("brings me closer to the goal"), turn.response).toBe(
          chat.fromOracle[i],
        );
      });
    }
  });

  it("guides FrozenLake towards the goal: every guided move brings the player closer, and it pays", () => {
    const env = createEnv<FrozenLakeEnv>("FrozenLake");
    const rng = new Rng(1, "guide");
    const distance = () => {
      const size = env.map!.size;
      const goal = env.map!.goal;
      return (
        Math.abs(Math.floor(goal / size) - env.position!.row) + Math.abs((goal % size) - env.position!.col)
      );
    };
    for (const seed of seeds.slice(0, 50)) {
      env.reset(seed);
      const before = distance();
      const move = guideAction(env, rng);
      const moves: Record<string, [number, number]> = {
        Left: [0, -1],
        Down: [1, 0],
        Right: [0, 1],
        Up: [-1, 0],
      };
      const [dr, dc] = moves[move]!;
      const goal = env.map!.goal;
      const size = env.map!.size;
      const after =
        Math.abs(Math.floor(goal / size) - (env.position!.row + dr)) +
        Math.abs((goal % size) - (env.position!.col + dc));
      expect(after).toBe(before - 1);
    }
    const guided = generateSftConversations({ envTag: "FrozenLake", seeds, oracleProbability: 1 });
    const random = generateSftConversations({ envTag: "FrozenLake", seeds, oracleProbability: 0 });
    const rate = (chats: typeof guided) => chats.filter((c) => c.success).length / chats.length;
    expect(rate(guided)).toBeGreaterThan(rate(random));
  });

  it("plans several FrozenLake moves blind: each brings the player closer from where the last one leads", () => {
    const env = createEnv<FrozenLakeEnv>("FrozenLakeGridCoord");
    const rng = new Rng(2, "plan");
    const steps: Record<string, [number, number]> = {
      Left: [0, -1],
      Down: [1, 0],
      Right: [0, 1],
      Up: [-1, 0],
    };
    let shortened = 0;
    for (const seed of seeds.slice(0, 80)) {
      env.reset(seed);
      const size = env.map!.size;
      const goal = { row: Math.floor(env.map!.goal / size), col: env.map!.goal % size };
      let { row, col } = env.position!;
      const plan = guidePlan(env, rng, 3);
      expect(plan.length).toBeGreaterThan(0);
      for (const move of plan) {
        const before = Math.abs(goal.row - row) + Math.abs(goal.col - col);
        row += steps[move]![0];
        col += steps[move]![1];
        expect(Math.abs(goal.row - row) + Math.abs(goal.col - col)).toBe(before - 1);
      }
      // A plan shorter than asked ends on the goal.
      if (plan.length < 3) {
        shortened++;
        expect([row, col]).toEqual([goal.row, goal.col]);
      }
    }
    expect(shortened).toBeGreaterThan(0);
    expect(guidePlan(createEnv("Bandit"), rng, 3)).toHaveLength(1);
  });

  it("writes several FrozenLake moves a turn when asked: one answer, the thought naming them all", () => {
    const options = { envTag: "FrozenLakeGridCoord", seeds: seeds.slice(0, 30), oracleProbability: 0.5 };
    const chats = generateSftConversations({ ...options, actionsPerTurn: 2 });
    expect(chats[0]!.instructions).toContain("You can make up to 2 actions");
    let pairs = 0;
    for (const chat of chats) {
      let left = 10;
      for (const turn of chat.turns) {
        expect(turn.actionsLeft).toBe(left);
        const parsed = parseResponse(`<think>${turn.response!}`, {
          actions: ["Left", "Down", "Right", "Up"],
          maxActionsPerTurn: 2,
        });
        expect(parsed.formatOk).toBe(true);
        if (parsed.actions.length === 2) pairs++;
        const named = parsed.actions.map((a) => a.toLowerCase()).join(", then ");
        expect(parsed.think).toContain(named);
        left -= parsed.actions.length;
      }
    }
    expect(pairs).toBeGreaterThan(chats.length / 2);
    // Bandit keeps one action a turn; one action a turn is the data it always was.
    const bandit = generateSftConversations({
      envTag: "Bandit",
      seeds: [1, 2],
      oracleProbability: 0.5,
      actionsPerTurn: 2,
    });
    expect(bandit.every((c) => !c.turns[0]!.response!.includes("||"))).toBe(true);
    expect(generateSftConversations({ ...options, actionsPerTurn: 1 })).toEqual(
      generateSftConversations(options),
    );
    expect(() => generateSftConversations({ ...options, actionsPerTurn: 3, format: sftFormat(2) })).toThrow(
      /3 actions per turn, but the prompt allows 2/,
    );
  });

  it("plans the closer moves in the order the thought names them, so the answer copies its words", () => {
    const env = createEnv<FrozenLakeEnv>("FrozenLakeGridCoord");
    const rng = new Rng(5, "plan");
    let twoWay = 0;
    for (const seed of seeds) {
      env.reset(seed);
      const closer = thoughtOrder(movesTowardsGoal(env));
      if (closer.length !== 2) continue;
      twoWay++;
      // "down and left of me": Down, then Left, then Down again while both still bring it closer.
      expect(guidePlan(env, rng, 2)).toEqual(closer);
      const thought = thoughtFor(env, closer, true);
      expect(thought).toContain(`${closer.map((m) => m.toLowerCase()).join(" and ")} of me`);
      expect(thought).toContain(
        `Moving ${closer.map((m) => m.toLowerCase()).join(", then ")} brings me closer`,
      );
    }
    expect(twoWay).toBeGreaterThan(50);
    expect(thoughtOrder(["Left", "Up", "Right", "Down"])).toEqual(["Down", "Up", "Right", "Left"]);
  });

  it("words the untargeted FrozenLake template apart from the rules, which a small model echoes", () => {
    const env = createEnv<FrozenLakeEnv>("FrozenLakeGridCoord");
    for (const seed of seeds.slice(0, 20)) {
      env.reset(seed);
      const thought = thoughtFor(env, ["Up"], false);
      const template = thought.slice(thought.indexOf(" of me. ") + " of me. ".length);
      const opening = template.split(" ").slice(0, 3).join(" ").replace(/[,.]$/, "");
      expect(opening.length).toBeGreaterThan(5);
      expect(env.instructions.toLowerCase()).not.toContain(opening.toLowerCase());
    }
  });

  it("words Bandit's thought with no word pair of FrozenLake's, so one env's updates do not leak into the other", () => {
    const pairs = (text: string) => {
      const words = text
        .toLowerCase()
        .split(/[^a-z]+/)
        .filter(Boolean);
      return new Set(words.slice(1).map((word, i) => `${words[i]} ${word}`));
    };
    const frozenLake = createEnv<FrozenLakeEnv>("FrozenLakeGridCoord");
    const frozenLakePairs = new Set<string>();
    for (const seed of seeds.slice(0, 20)) {
      frozenLake.reset(seed);
      for (const fromOracle of [true, false]) {
        for (const pair of pairs(thoughtFor(frozenLake, ["Up", "Left"], fromOracle)))
          frozenLakePairs.add(pair);
      }
    }
    // The wording the FrozenLake drills of earlier warm starts used, which a model built on them keeps.
    for (const pair of pairs("The ice is slippery, so I try up.")) frozenLakePairs.add(pair);
    const bandit = createEnv("Bandit");
    bandit.reset(0);
    const shared = [...pairs(thoughtFor(bandit, "Dragon"))].filter((pair) => frozenLakePairs.has(pair));
    expect(shared).toEqual([]);
  });

  it("lets random turns try fewer moves than the guide's plans (a hesitant template)", () => {
    const options = {
      envTag: "FrozenLakeGridCoord",
      seeds: seeds.slice(0, 100),
      oracleProbability: 0.5,
      actionsPerTurn: 2,
      oracleChoice: "chat" as const,
    };
    const chats = generateSftConversations({ ...options, randomActionsPerTurn: 1 });
    const format = { actions: ["Left", "Down", "Right", "Up"], maxActionsPerTurn: 2 };
    const counts = { guided: new Set<number>(), random: new Set<number>() };
    for (const chat of chats)
      chat.turns.forEach((turn, i) => {
        const { actions } = parseResponse(`<think>${turn.response!}`, format);
        counts[chat.fromOracle[i] ? "guided" : "random"].add(actions.length);
      });
    expect([...counts.random]).toEqual([1]);
    // A guided plan is shorter than two moves only where it ends on the goal (or the budget).
    expect(counts.guided.has(2)).toBe(true);
    expect(chats[0]!.instructions).toContain("You can make up to 2 actions");
    expect(generateSftConversations({ ...options, randomActionsPerTurn: 2 })).toEqual(
      generateSftConversations(options),
    );
    expect(() => generateSftConversations({ ...options, randomActionsPerTurn: 3 })).toThrow(
      /randomActionsPerTurn must be a whole number from 1 to actionsPerTurn \(2\), got 3/,
    );
  });

  it("draws oracle-or-random once per chat when asked, every turn then following the first", () => {
    const options = { envTag: "FrozenLakeGridCoord", seeds: seeds.slice(0, 200), oracleProbability: 0.3 };
    const perChat = generateSftConversations({ ...options, oracleChoice: "chat" });
    const multiTurn = perChat.filter((c) => c.turns.length > 1);
    expect(multiTurn.length).toBeGreaterThan(50);
    for (const chat of perChat) expect(new Set(chat.fromOracle).size).toBe(1);
    const share = perChat.filter((c) => c.fromOracle[0]).length / perChat.length;
    expect(share).toBeGreaterThan(0.2);
    expect(share).toBeLessThan(0.4);
    // Each chat's thoughts keep to one template.
    for (const chat of multiTurn) {
      const guided = chat.turns.map((t) => t.response!.includes("brings me closer"));
      expect(guided).toEqual(chat.fromOracle);
    }
    // Per turn, the default, mixes the templates within chats and is the data it always was.
    const perTurn = generateSftConversations(options);
    expect(perTurn.some((c) => new Set(c.fromOracle).size === 2)).toBe(true);
    expect(generateSftConversations({ ...options, oracleChoice: "turn" })).toEqual(perTurn);
  });

  it("reads Sokoban's player, box and target cells, and spells out the guide's reasoning", () => {
    const env = createEnv("SimpleSokoban");
    const rows = env.reset(7).split("\n");
    const cellOf = (symbol: string) => {
      const row = rows.findIndex((line) => line.includes(symbol));
      return `row ${row + 1}, column ${rows[row]!.indexOf(symbol) + 1}`;
    };
    const reading = `I am at ${cellOf("P")}; a box at ${cellOf("X")}; a target at ${cellOf("O")}.`;
    const planned = guideAction(env, new Rng(0, "test"));
    expect(thoughtFor(env, planned, true)).toMatch(
      new RegExp(
        `^${reading.replace(/[.()]/g, "\\$&")} The box must go (up|down|left|right), so I push it from row \\d, column \\d(; I am there, so I push|, [a-z ]+ of me(?: past the box)?, so I (?:move|step)) ${planned.toLowerCase()}\\.$`,
      ),
    );
    expect(thoughtFor(env, "Left", false)).toBe(`${reading} I try left.`);
  });

  it("keeps a guided thought apart from a guess on Sokoban rooms with several boxes", () => {
    const env = createEnv("LargerSokoban");
    env.reset(3);
    const planned = guideAction(env, new Rng(0, "test"));
    expect(thoughtFor(env, planned, true)).toMatch(
      new RegExp(`\\. Moving ${planned.toLowerCase()} is on my way to push the boxes onto the targets\\.$`),
    );
    expect(thoughtFor(env, planned, false)).toMatch(/\. I try [a-z]+\.$/);
  });

  it("names the Sokoban guide's push cell and the way there in its thought", () => {
    const env = SokobanEnv.fromText("######\n#____#\n#_X_P#\n#____#\n#_O__#\n######");
    expect(thoughtFor(env, "Up", true)).toBe(
      "I am at row 3, column 5; a box at row 3, column 3; a target at row 5, column 3. The box must go down, " +
        "so I push it from row 2, column 3, up and left of me, so I move up.",
    );
    const behind = SokobanEnv.fromText("######\n#____#\n#_P__#\n#_X__#\n#_O__#\n######");
    expect(thoughtFor(behind, "Down", true)).toMatch(
      /The box must go down, so I push it from row 3, column 3; I am there, so I push down\.$/,
    );
  });

  it("explains WebShop actions by what the guide does them for", () => {
    const env = createEnv("WebShop");
    env.reset(3);
    const search = guideAction(env, new Rng(0, "test"));
    expect(search).toMatch(/^search\[/);
    expect(thoughtFor(env, search, true)).toBe("I search for the product the instruction describes.");
    expect(thoughtFor(env, "click[b09i76qer4]", true)).toBe(
      "The first result matches my search best, so I open it.",
    );
    expect(thoughtFor(env, "click[buy now]", true)).toMatch(/so I buy it/);
    expect(thoughtFor(env, "click[x-large]", true)).toBe("The instruction asks for x-large, so I select it.");
    expect(thoughtFor(env, "click[next >]", false)).toBe("I try click[next >].");
  });

  it("writes reading drills: one turn, no rules text, a fraction of a chat's length", () => {
    const drills = generateReadingDrills({
      envTag: "FrozenLake",
      seeds: seeds.slice(0, 20),
      oracleProbability: 0.3,
    });
    const chats = generateSftConversations({
      envTag: "FrozenLake",
      seeds: seeds.slice(0, 20),
      oracleProbability: 0.3,
    });
    const length = (list: typeof drills) => sftCorpus(list).join("").length;
    expect(drills.every((d) => d.turns.length === 1 && d.instructions === "")).toBe(true);
    expect(drills[0]!.messages[1]!.content).not.toContain("FrozenLake puzzle");
    expect(drills[0]!.messages[1]!.content).toContain("Turn 1:\nState:\n");
    expect(drills.map((d) => d.turns[0])).toEqual(chats.map((c) => c.turns[0]));
    expect(length(drills)).toBeLessThan(length(chats) / 3);
  });

  it("writes drills of several turns: the chats' turns without the rules text", () => {
    const options = { envTag: "FrozenLakeGridCoord", seeds: seeds.slice(0, 20), oracleProbability: 0.3 };
    const drills = generateReadingDrills({ ...options, maxTurns: 3 });
    const chats = generateSftConversations({ ...options, maxTurns: 3 });
    expect(drills.map((d) => d.turns)).toEqual(chats.map((c) => c.turns));
    expect(drills.some((d) => d.turns.length === 3)).toBe(true);
    const lastUser = drills.find((d) => d.turns.length === 3)!.messages.at(-2)!;
    expect(lastUser.content).toContain("Turn 3:\nState:\n");
    expect(
      drills.every((d) => d.instructions === "" && !d.messages[1]!.content.includes("FrozenLake puzzle")),
    ).toBe(true);
  });

  it("cuts drills from any point of a chat with start: random", () => {
    const options = { envTag: "WebShopCompact", seeds: seeds.slice(0, 40), oracleProbability: 1 };
    const chats = generateSftConversations(options);
    const drills = generateReadingDrills({ ...options, start: "random" });
    expect(drills.every((d) => d.turns.length === 1 && d.instructions === "")).toBe(true);
    for (const [i, drill] of drills.entries()) expect(chats[i]!.turns).toContainEqual(drill.turns[0]);
    // Drills of the product page (an option or buy now to choose) and of the results page, not only searches.
    const answers = drills.map((d) => d.turns[0]!.response ?? "");
    expect(new Set(answers.map((a) => /<answer>(\w+)\[/.exec(a)?.[1]))).toEqual(new Set(["search", "click"]));
    expect(answers.some((a) => a.includes("click[buy now]"))).toBe(true);
    expect(answers.some((a) => /click\[b0[a-z0-9]{8}\]/.test(a))).toBe(true);
    expect(drills[0]!.messages[1]!.content).toContain("Turn 1:\nState:\n");
  });
});
