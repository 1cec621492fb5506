// Where the codex-parity binary is: $CODEX_PARITY_BIN, else the platform package that npm
// installed as an optional dependency (`@codex-parity/linux-x64` is an alias of
// `codex-parity@VERSION-linux-x64`, the same binary the wheel and the release archives carry).
"use strict";

const fs = require("node:fs");
const path = require("node:path");

/** The platform packages, by `${process.platform}-${process.arch}`. */
const PLATFORM_PACKAGES = {
  "linux-x64": "@codex-parity/linux-x64",
  "linux-arm64": "@codex-parity/linux-arm64",
};

/** Returns the path of the codex-parity binary, or throws an Error that says what to do. */
function resolveBinary() {
  const override = process.env.CODEX_PARITY_BIN;
  if (override) {
    try {
      fs.accessSync(override, fs.constants.X_OK);
    } catch {
      throw new Error(
        `$CODEX_PARITY_BIN is ${JSON.stringify(override)}, which is not an executable file: ` +
          "unset it to use the installed codex-parity, or point it at one",
      );
    }
    return override;
  }
  const key = `${process.platform}-${process.arch}`;
  const pkg = PLATFORM_PACKAGES[key];
  if (!pkg) {
    throw new Error(
      `codex-parity has no build for ${key} ` +
        `(it runs on ${Object.keys(PLATFORM_PACKAGES).join(", ")}, ` +
        "where codex's own Linux builds run); set $CODEX_PARITY_BIN to a binary you built",
    );
  }
  let manifest;
  try {
    manifest = require.resolve(`${pkg}/package.json`);
  } catch {
    throw new Error(
      `the platform package ${pkg} is not installed (npm installs it as an optional ` +
        `dependency of codex-parity). Reinstall without --omit=optional / --no-optional, or ` +
        "set $CODEX_PARITY_BIN to a codex-parity binary",
    );
  }
  return path.join(path.dirname(manifest), "bin", "codex-parity");
}

module.exports = { resolveBinary, PLATFORM_PACKAGES };
