#!/usr/bin/env bash
# Builds one release target's artifacts from this checkout, the same way in the release
# workflow (.github/workflows/release.yml) and in CI (.ci/packaging):
#   OUT/wheels/codex_parity-V-py3-none-TAGS.whl   the wheel (maturin, bindings = "bin")
#   OUT/archives/codex-parity-V-TARGET.tar.gz     the binary, README, and a .sha256 beside it
#   OUT/npm/codex-parity-V-linux-ARCH.tgz         the npm platform package
# from ONE cargo build (maturin's; the archive and the npm package take the wheel's binary).
#
#   release/build.sh TARGET OUT      TARGET: x86_64-unknown-linux-musl, aarch64-unknown-linux-musl,
#                                    or `host` (this machine's target, e.g. where musl is missing)
# PROFILE=dev builds the debug profile instead of release (CI's quicker rehearsal).
set -euo pipefail
cd "$(dirname "$0")/.."

target=${1:?usage: release/build.sh TARGET OUT}
out=${2:?usage: release/build.sh TARGET OUT}
profile=${PROFILE:-release}
maturin=${MATURIN:-maturin}

version=$(release/version.sh)
args=(build --locked --profile "$profile" --out "$out/wheels")
case "$target" in
  x86_64-unknown-linux-musl | aarch64-unknown-linux-musl)
    # Static: one wheel for glibc (manylinux2014) and musl (Alpine) systems alike.
    args+=(--target "$target" --compatibility manylinux2014 musllinux_1_2)
    triple=$target
    ;;
  host)
    triple=$(rustc -vV | awk '/^host:/{print $2}')
    ;;
  *) echo "release/build.sh: unknown target $target" >&2; exit 2 ;;
esac
case "$triple" in
  x86_64-*) arch=x64 ;;
  aarch64-*) arch=arm64 ;;
  *) echo "release/build.sh: no npm platform package for $triple" >&2; exit 2 ;;
esac

rm -rf "$out/wheels"
"$maturin" "${args[@]}"
wheels=("$out/wheels/codex_parity-$version-"*.whl)
if [ "${#wheels[@]}" != 1 ]; then
  echo "release/build.sh: expected one wheel, got: ${wheels[*]}" >&2
  exit 1
fi

# The binary, taken out of the wheel: the archive and the npm package ship the same bytes.
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
python3 - "${wheels[0]}" "$stage/codex-parity" <<'PY'
import sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    [name] = [n for n in z.namelist() if n.endswith(".data/scripts/codex-parity")]
    with open(dest, "wb") as f:
        f.write(z.read(name))
PY
chmod 755 "$stage/codex-parity"

name="codex-parity-$version-$triple"
mkdir -p "$stage/$name" "$out/archives"
cp "$stage/codex-parity" README.md "$stage/$name/"
tar -C "$stage" -czf "$out/archives/$name.tar.gz" --owner=0 --group=0 "$name"
(cd "$out/archives" && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")

node npm/pack.js --binary "$stage/codex-parity" --arch "$arch" --out "$out/npm"
echo "release/build.sh: $triple ($profile): ${wheels[0]}, $out/archives/$name.tar.gz," \
  "$out/npm/codex-parity-$version-linux-$arch.tgz"
