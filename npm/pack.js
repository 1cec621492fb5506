#!/usr/bin/env node
// Packs the npm packages of one release: the platform package `codex-parity@V-linux-ARCH`
// (the binary) and, with --wrapper, the wrapper `codex-parity@V` whose optional dependencies
// alias the platform versions (the way @openai/codex ships). V is the Cargo workspace's
// version (release/version.sh). No install script anywhere.
//
//   node npm/pack.js --binary target/x86_64-unknown-linux-musl/release/codex-parity \
//       --arch x64 --wrapper --out dist/npm
"use strict";

const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { execFileSync } = require("node:child_process");

const ROOT = path.resolve(__dirname, "..");
const ARCHES = ["x64", "arm64"];

function usage(message) {
  console.error(
    `pack.js: ${message}\n` +
      "usage: node npm/pack.js --out DIR [--binary PATH --arch x64|arm64]... [--wrapper]",
  );
  process.exit(2);
}

function parseArgs(argv) {
  const args = { platforms: [], wrapper: false, out: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => argv[++i] ?? usage(`${a} needs a value`);
    if (a === "--binary") args.platforms.push({ binary: value() });
    else if (a === "--arch") {
      const last =
        args.platforms[args.platforms.length - 1] ?? usage("--arch comes after --binary");
      last.arch = value();
    } else if (a === "--wrapper") args.wrapper = true;
    else if (a === "--out") args.out = value();
    else usage(`unknown argument ${a}`);
  }
  if (!args.out) usage("--out DIR is required");
  for (const p of args.platforms) {
    if (!ARCHES.includes(p.arch))
      usage(`--arch must be one of ${ARCHES.join(", ")} (got ${p.arch})`);
    if (!fs.existsSync(p.binary)) usage(`--binary ${p.binary}: no such file`);
  }
  if (!args.wrapper && !args.platforms.length)
    usage("nothing to pack: give --binary/--arch or --wrapper");
  return args;
}

/** The workspace version (release/version.sh reads it from Cargo.toml). */
function workspaceVersion() {
  return execFileSync(path.join(ROOT, "release", "version.sh"), { encoding: "utf8" }).trim();
}

function pack(dir, out) {
  const name = execFileSync("npm", ["pack", "--silent", "--pack-destination", out], {
    cwd: dir,
    encoding: "utf8",
  }).trim();
  return path.join(out, name.split("\n").pop());
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const version = workspaceVersion();
  const wrapper = JSON.parse(
    fs.readFileSync(path.join(__dirname, "codex-parity", "package.json"), "utf8"),
  );
  const out = path.resolve(args.out);
  fs.mkdirSync(out, { recursive: true });
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), "codex-parity-npm-"));
  try {
    for (const { binary, arch } of args.platforms) {
      const dir = path.join(stage, `linux-${arch}`);
      fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
      fs.copyFileSync(binary, path.join(dir, "bin", "codex-parity"));
      fs.chmodSync(path.join(dir, "bin", "codex-parity"), 0o755);
      const manifest = {
        name: wrapper.name,
        version: `${version}-linux-${arch}`,
        description:
          `The codex-parity binary for Linux ${arch} (static); ` +
          "installed by the codex-parity package",
        license: wrapper.license,
        repository: wrapper.repository,
        os: ["linux"],
        cpu: [arch],
        files: ["bin/codex-parity"],
      };
      fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify(manifest, null, 2) + "\n");
      console.log(pack(dir, out));
    }
    if (args.wrapper) {
      const dir = path.join(stage, "wrapper");
      fs.cpSync(path.join(__dirname, "codex-parity"), dir, { recursive: true });
      const manifest = { ...wrapper, version, optionalDependencies: {} };
      for (const arch of ARCHES) {
        manifest.optionalDependencies[`@codex-parity/linux-${arch}`] =
          `npm:${wrapper.name}@${version}-linux-${arch}`;
      }
      fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify(manifest, null, 2) + "\n");
      console.log(pack(dir, out));
    }
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

main();
