// The npm package from its installed tarballs: `codex-parity/sidecar` against plain HTTP and
// the real `codex exec`, leftovers failing `close()`, and the `codex-parity` bin's exit
// statuses. Run by .ci/packaging with `node --test` in a project where the tarballs are
// installed (this file is copied there, so that `codex-parity` resolves to them).
"use strict";

const test = require("node:test");
const assert = require("node:assert");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { spawnSync } = require("node:child_process");
const {
  startSidecar,
  installCodex,
  assistantReply,
  SidecarError,
  MOCK_API_KEY,
} = require("codex-parity/sidecar");

const BIN = path.join(__dirname, "node_modules", ".bin", "codex-parity");

async function post(sidecar, body) {
  const reply = await fetch(`${sidecar.baseUrl}/responses`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: reply.status, text: await reply.text() };
}

test("a scripted response is served and the request captured", async () => {
  const sidecar = await startSidecar();
  try {
    assert.strictEqual(await sidecar.enqueue(assistantReply("hi", "resp-1")), 1);
    const reply = await post(sidecar, { model: "m", input: "ping" });
    assert.strictEqual(reply.status, 200);
    assert.match(reply.text, /event: response.completed/);
    const [request] = await sidecar.requests({ min: 1, timeoutMs: 5000 });
    assert.deepStrictEqual(request.body, { model: "m", input: "ping" });
    assert.strictEqual(request.outcome, "scripted");
    assert.deepStrictEqual(await sidecar.status(), {
      pending: 0,
      served: 1,
      unscripted: 0,
      captured: 1,
    });
  } finally {
    const result = await sidecar.close();
    assert.strictEqual(result.exitCode, 0);
  }
});

test("a response never served makes close() reject, naming it", async () => {
  const sidecar = await startSidecar({ responses: [assistantReply("unused")] });
  await assert.rejects(sidecar.close(), (e) => {
    assert.ok(e instanceof SidecarError);
    assert.strictEqual(e.result.exitCode, 3);
    assert.match(e.message, /1 leftover\(s\):\n {2}- never served: scripted response #0/);
    return true;
  });
});

test("a request nothing answered makes close() reject, naming it", async () => {
  const sidecar = await startSidecar();
  assert.strictEqual((await post(sidecar, {})).status, 500);
  await assert.rejects(sidecar.close(), /unscripted request: POST \/v1\/responses/);
  const lenient = await startSidecar({ lenient: true });
  await post(lenient, {});
  assert.strictEqual((await lenient.close()).exitCode, 0);
});

test("a bad script is refused with the sidecar's message", async () => {
  const sidecar = await startSidecar();
  await assert.rejects(sidecar.enqueue({ events: [], stall_after: 3 }), /enqueue: response 0/);
  await sidecar.close();
});

test("the real codex exec is served by the sidecar", async () => {
  const codex = installCodex();
  const sidecar = await startSidecar({ responses: [assistantReply("Hello from the sidecar")] });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "codex-parity-node-test-"));
  try {
    for (const d of ["codex-home", "home", "tmp", "work"]) fs.mkdirSync(path.join(tmp, d));
    fs.writeFileSync(path.join(tmp, "codex-home", "config.toml"), sidecar.codexConfig());
    const closed = "http://127.0.0.1:9";
    const run = spawnSync(
      codex,
      ["exec", "--json", "--disable", "plugins", "--skip-git-repo-check", "say hello"],
      {
        cwd: path.join(tmp, "work"),
        encoding: "utf8",
        timeout: 120_000,
        stdio: ["ignore", "pipe", "pipe"],
        env: {
          PATH: process.env.PATH,
          HOME: path.join(tmp, "home"),
          TMPDIR: path.join(tmp, "tmp"),
          CODEX_HOME: path.join(tmp, "codex-home"),
          CODEX_PARITY_MOCK_API_KEY: MOCK_API_KEY,
          HTTPS_PROXY: closed,
          HTTP_PROXY: closed,
          ALL_PROXY: closed,
          NO_PROXY: "127.0.0.1,localhost",
        },
      },
    );
    assert.strictEqual(run.status, 0, run.stderr);
    const texts = run.stdout
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((e) => e.type === "item.completed" && e.item?.type === "agent_message")
      .map((e) => e.item.text);
    assert.deepStrictEqual(texts, ["Hello from the sidecar"]);
    const [request] = await sidecar.requests({ min: 1, timeoutMs: 5000 });
    assert.strictEqual(request.headers.authorization, `Bearer ${MOCK_API_KEY}`);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
    await sidecar.close();
  }
});

test("the bin passes the binary's exit status on, and says what is wrong", () => {
  const bad = spawnSync(BIN, ["no-such-command"], { encoding: "utf8" });
  assert.strictEqual(bad.status, 2, bad.stderr);
  const missing = spawnSync(BIN, ["--version"], {
    encoding: "utf8",
    env: { ...process.env, CODEX_PARITY_BIN: path.join(os.tmpdir(), "no-such-codex-parity") },
  });
  assert.strictEqual(missing.status, 2);
  assert.match(missing.stderr, /CODEX_PARITY_BIN is .*not an executable file/);
});
