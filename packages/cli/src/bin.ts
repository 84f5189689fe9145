#!/usr/bin/env node
// The `ragen` command.
import { runRagen } from "./commands/main.js";

process.exitCode = await runRagen(process.argv.slice(2));
