//! The `codex-parity-sidecar` binary; everything lives in [`codex_parity_sidecar::cli`].

fn main() {
    std::process::exit(codex_parity_sidecar::cli::main_with_args(
        std::env::args_os(),
    ));
}
