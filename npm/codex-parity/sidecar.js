// The sidecar (a mock OpenAI Responses API) for Node test runners: `startSidecar()` starts
// `codex-parity sidecar` and speaks its JSONL control protocol (docs/sidecar-protocol.md of
// codex-parity). Close it at the end of the test: `close()` rejects when something was left
// over (a response never served, a request nothing answered, a gate never released).
//
//   const { startSidecar, assistantReply } = require("codex-parity/sidecar");
//   const sidecar = await startSidecar();
//   t.after(() => sidecar.close());
//   await sidecar.enqueue(assistantReply("Hello!"));
//   // … point codex at sidecar.baseUrl (sidecar.codexConfig() is a config.toml for it)
//   const [request] = await sidecar.requests({ min: 1, timeoutMs: 5000 });
"use strict";

const { spawn, execFileSync } = require("node:child_process");
const readline = require("node:readline");
const { resolveBinary } = require("./bin/resolve.js");

/** The API key codex sends the mock, from `CODEX_PARITY_MOCK_API_KEY` (any key works). */
const MOCK_API_KEY = "sk-codex-parity-mock";
const LEFTOVER = /: (never served: .*|unscripted request: .*|gate never released: .*)$/;

class SidecarError extends Error {}

class Sidecar {
  constructor(child, ready, lines, stderr, timeoutMs) {
    this.baseUrl = ready.base_url;
    this.serverUrl = ready.server_url;
    this.protocol = ready.protocol ?? 1;
    this.pid = child.pid;
    this._child = child;
    this._lines = lines;
    this._stderr = stderr;
    this._timeoutMs = timeoutMs;
    this._chain = Promise.resolve();
    this._result = null;
  }

  /** What the sidecar wrote on stderr so far. */
  stderr() {
    return this._stderr.join("\n");
  }

  /** Sends one command (`{op, ...fields}`), resolves to its reply; an error reply rejects. */
  command(op, fields = {}, waitMs = 0) {
    const run = async () => {
      if (this._result) throw new SidecarError(`the sidecar is closed; cannot send ${op}`);
      this._child.stdin.write(JSON.stringify({ op, ...fields }) + "\n");
      const reply = await this._lines.next(this._timeoutMs + waitMs, `an answer to ${op}`);
      if (reply.type === "error") throw new SidecarError(`${op}: ${reply.message}`);
      return reply;
    };
    const result = this._chain.then(run, run);
    this._chain = result.catch(() => {});
    return result;
  }

  /** Queues scripted responses (all or nothing); resolves to how many are queued. */
  async enqueue(...responses) {
    return (await this.command("enqueue", { responses })).pending;
  }

  /** The model requests captured (`all`: every request), waiting up to `timeoutMs` for
   * at least `min` of them. */
  async requests({ min = 0, timeoutMs = 0, since, all } = {}) {
    const fields = { min, timeout_ms: timeoutMs };
    if (since !== undefined) fields.since = since;
    if (all) fields.all = true;
    return (await this.command("requests", fields, timeoutMs)).requests;
  }

  /** `{pending, served, unscripted, captured}`. */
  async status() {
    const { pending, served, unscripted, captured } = await this.command("status");
    return { pending, served, unscripted, captured };
  }

  /** Empties the script, the capture, connection scripts and gates. */
  async reset() {
    await this.command("reset");
  }

  /** A codex `config.toml` whose model provider is this sidecar (no retries, analytics
   * off); codex reads the key from `CODEX_PARITY_MOCK_API_KEY`. */
  codexConfig() {
    return [
      'model = "mock-model"',
      'model_provider = "codex-parity"',
      "",
      "[analytics]",
      "enabled = false",
      "",
      "[model_providers.codex-parity]",
      'name = "codex-parity sidecar"',
      `base_url = ${JSON.stringify(this.baseUrl)}`,
      'wire_api = "responses"',
      'env_key = "CODEX_PARITY_MOCK_API_KEY"',
      "request_max_retries = 0",
      "stream_max_retries = 0",
      "",
    ].join("\n");
  }

  /** Shuts the sidecar down. Resolves to `{exitCode, pending, unscripted, leftovers,
   * stderr}`; rejects (with that as `error.result`) when it exited non-zero, i.e. with
   * leftovers, unless `{ allowLeftovers: true }`. */
  async close({ allowLeftovers = false } = {}) {
    if (!this._result) {
      let reply = {};
      try {
        reply = await this.command("shutdown");
      } catch {
        // Already gone: its exit status says how.
      }
      this._child.stdin.end();
      const exitCode = await this._exited(10_000);
      const stderr = this.stderr();
      const leftovers = stderr
        .split("\n")
        .map((line) => LEFTOVER.exec(line))
        .filter(Boolean)
        .map((m) => m[1]);
      this._result = {
        exitCode,
        pending: reply.pending ?? 0,
        unscripted: reply.unscripted ?? 0,
        leftovers,
        stderr,
      };
    }
    const result = this._result;
    if (result.exitCode !== 0 && !allowLeftovers) {
      const what = result.leftovers.length
        ? `${result.leftovers.length} leftover(s):\n` +
          result.leftovers.map((l) => `  - ${l}`).join("\n")
        : `exit status ${result.exitCode}; stderr:\n${result.stderr}`;
      const error = new SidecarError(`codex-parity sidecar: ${what}`);
      error.result = result;
      throw error;
    }
    return result;
  }

  _exited(timeoutMs) {
    const child = this._child;
    return new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) {
        resolve(child.exitCode ?? 128);
        return;
      }
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      child.once("exit", (code) => {
        clearTimeout(timer);
        resolve(code ?? 128);
      });
    });
  }
}

/** Lines of the sidecar's stdout, parsed, taken one at a time with a deadline. */
function lineQueue(stream, child) {
  const waiting = [];
  const buffered = [];
  let ended = false;
  readline.createInterface({ input: stream }).on("line", (line) => {
    if (!line.trim()) return;
    const value = JSON.parse(line);
    const next = waiting.shift();
    if (next) next.resolve(value);
    else buffered.push(value);
  });
  stream.on("end", () => {
    ended = true;
    for (const w of waiting.splice(0))
      w.reject(new SidecarError(`the sidecar exited before ${w.what}`));
  });
  return {
    next(timeoutMs, what) {
      if (buffered.length) return Promise.resolve(buffered.shift());
      if (ended) return Promise.reject(new SidecarError(`the sidecar exited before ${what}`));
      return new Promise((resolve, reject) => {
        const entry = { what };
        const timer = setTimeout(() => {
          waiting.splice(waiting.indexOf(entry), 1);
          reject(new SidecarError(`the sidecar sent no ${what} within ${timeoutMs} ms`));
        }, timeoutMs);
        entry.resolve = (v) => (clearTimeout(timer), resolve(v));
        entry.reject = (e) => (clearTimeout(timer), reject(e));
        waiting.push(entry);
      });
    },
  };
}

/**
 * Starts `codex-parity sidecar`. Options: `config` (a config file), `responses` (queued at
 * once), `lenient` (leftovers exit 0), `bin` (the codex-parity binary; default
 * $CODEX_PARITY_BIN, else the platform package's), `timeoutMs` (for the ready line and each
 * reply; default 30000).
 */
async function startSidecar({
  config,
  responses = [],
  lenient = false,
  bin,
  timeoutMs = 30_000,
} = {}) {
  const args = ["sidecar"];
  if (config) args.push("--config", config);
  if (lenient) args.push("--lenient");
  const child = spawn(bin ?? resolveBinary(), args, { stdio: ["pipe", "pipe", "pipe"] });
  // A write to a sidecar that died fails its command (its exit says why), not the process.
  child.stdin.on("error", () => {});
  const stderr = [];
  readline.createInterface({ input: child.stderr }).on("line", (l) => stderr.push(l));
  const spawned = new Promise((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", reject);
  });
  await spawned;
  const lines = lineQueue(child.stdout, child);
  let ready;
  try {
    ready = await lines.next(timeoutMs, "its ready line");
  } catch (e) {
    child.kill("SIGKILL");
    throw new SidecarError(`${e.message}; stderr:\n${stderr.join("\n")}`);
  }
  const sidecar = new Sidecar(child, ready, lines, stderr, timeoutMs);
  if (responses.length) await sidecar.enqueue(...responses);
  return sidecar;
}

/** Installs codex `version` (default: the pinned one) into codex-parity's cache unless it is
 * there; returns the path of its binary. */
function installCodex(version, { bin } = {}) {
  const args = ["install", ...(version ? [version] : [])];
  const out = execFileSync(bin ?? resolveBinary(), args, {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines = out.split("\n").filter((l) => l.trim());
  return lines[lines.length - 1].split(" ").slice(1).join(" ");
}

/** A scripted reply of one assistant message. */
function assistantReply(text, respId = `resp-${Math.random().toString(36).slice(2, 10)}`) {
  const message = {
    type: "message",
    role: "assistant",
    id: `msg-${respId}`,
    content: [{ type: "output_text", text }],
  };
  return [
    { type: "response.created", response: { id: respId } },
    { type: "response.output_item.done", item: message },
    {
      type: "response.completed",
      response: {
        id: respId,
        usage: {
          input_tokens: 0,
          input_tokens_details: null,
          output_tokens: 0,
          output_tokens_details: null,
          total_tokens: 0,
        },
      },
    },
  ];
}

module.exports = {
  startSidecar,
  installCodex,
  assistantReply,
  Sidecar,
  SidecarError,
  MOCK_API_KEY,
};
