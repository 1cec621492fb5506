//! One test that every front-end turns the same settings into the same plan options: the
//! `run`, `bench --suite` and `bisect` arguments here, the environment the libtest harness
//! reads (`Options::from_vars`), and a `Session`, which takes the options themselves.

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::path::PathBuf;

    use clap::Parser;
    use codex_parity::harness::shard::Shard;
    use codex_parity::plan::Options;

    use crate::cli::{Cli, Command};

    fn parse(args: &[&str]) -> Command {
        let mut all = vec!["codex-parity"];
        all.extend(args);
        Cli::try_parse_from(all).expect("arguments parse").command
    }

    const SHARED: [&str; 6] = [
        "--scenarios",
        "dir",
        "--baselines",
        "mine.json",
        "--filter",
        "A1",
    ];

    /// What every front-end is told here: the files of `dir`, the baselines `mine.json`,
    /// the scenarios `A1` selects, strict, worlds kept.
    fn told() -> Options {
        Options {
            scenario_dirs: vec![PathBuf::from("dir")],
            baselines: vec![PathBuf::from("mine.json")],
            filter: Some("A1".into()),
            strict: true,
            keep: true,
            ..Options::default()
        }
    }

    #[test]
    fn run_bench_bisect_libtest_and_session_build_the_same_options() {
        let mut run = vec!["run", "--strict", "--keep", "--jobs", "3"];
        run.extend(SHARED);
        let Command::Run(args) = parse(&run) else {
            panic!("not run")
        };
        let from_run = args.options();
        assert_eq!(
            from_run,
            Options {
                jobs: Some(3),
                ..told()
            }
        );

        // bench --suite runs without --strict or --keep of its own: the same options but
        // those two.
        let mut bench = vec!["bench", "--suite", "--jobs", "3"];
        bench.extend(SHARED);
        let Command::Bench(args) = parse(&bench) else {
            panic!("not bench")
        };
        assert_eq!(
            args.options(),
            Options {
                strict: false,
                keep: false,
                ..from_run.clone()
            }
        );

        // bisect: one scenario (its own --filter picks it from the plan), kept worlds.
        let Command::Bisect(args) = parse(&[
            "bisect",
            "--filter",
            "A1",
            "--good",
            "0.131.0",
            "--bad",
            "0.171.0",
            "--keep",
            "--scenarios",
            "dir",
            "--baselines",
            "mine.json",
        ]) else {
            panic!("not bisect")
        };
        assert_eq!(
            args.options(),
            Options {
                filter: None,
                strict: false,
                with_opt_in: true,
                ..told()
            }
        );

        // The libtest harness: the same settings from its environment (libtest filters
        // and schedules the trials itself, so no filter or jobs).
        let env = |name: &str| -> Option<OsString> {
            match name {
                "CODEX_PARITY_SCENARIOS" => Some("dir".into()),
                "CODEX_PARITY_STRICT" => Some("1".into()),
                "CODEX_PARITY_KEEP" => Some("1".into()),
                _ => None,
            }
        };
        assert_eq!(
            Options::from_vars(env),
            Options {
                filter: None,
                baselines: Vec::new(),
                ..told()
            }
        );
        // `CODEX_PARITY_STRICT=0` is not strict, as `--strict` absent.
        let not_strict = |name: &str| (name == "CODEX_PARITY_STRICT").then(|| "0".into());
        assert!(!Options::from_vars(not_strict).strict);

        // --shard reaches the options as the shard itself.
        let Command::Run(args) = parse(&["run", "--shard", "2/3"]) else {
            panic!("not run")
        };
        assert_eq!(args.options().shard, Shard { index: 2, count: 3 });
    }

    #[test]
    fn perf_settings_parse_into_options_and_back_into_arguments() {
        let Command::Run(args) = parse(&[
            "run",
            "--filter",
            "P",
            "--perf-reference",
            "0.161.0",
            "--perf-reps",
            "5",
            "--perf-scale",
            "0.1",
        ]) else {
            panic!("not run")
        };
        let options = args.options();
        assert_eq!(
            options.perf,
            codex_parity::plan::PerfOptions {
                reference: Some("0.161.0".into()),
                repetitions: Some(5),
                scale_permille: Some(100),
            }
        );
        assert_eq!(
            args.matrix.perf.to_args(),
            [
                "--perf-reference",
                "0.161.0",
                "--perf-reps",
                "5",
                "--perf-scale",
                "0.1"
            ]
        );
        let settings = options.perf.settings(None);
        assert_eq!((settings.repetitions, settings.scale), (5, 0.1));
        for bad in ["0", "1000", "fast"] {
            let err = Cli::try_parse_from(["codex-parity", "run", "--perf-scale", bad]);
            assert!(err.is_err(), "{bad}");
        }
        assert!(Cli::try_parse_from(["codex-parity", "run", "--perf-reps", "0"]).is_err());
    }

    #[test]
    fn the_call_timeout_reaches_the_options_of_run_and_bench() {
        for command in ["run", "bench"] {
            let parsed = parse(&[command, "--call-timeout-secs", "7"]);
            let options = match parsed {
                Command::Run(args) => args.options(),
                Command::Bench(args) => args.options(),
                _ => panic!("not {command}"),
            };
            assert_eq!(
                options.call_timeout,
                Some(std::time::Duration::from_secs(7)),
                "{command}"
            );
        }
        assert_eq!(Options::default().call_timeout, None);
        let zero = ["codex-parity", "run", "--call-timeout-secs", "0"];
        assert!(Cli::try_parse_from(zero).is_err());
    }
}
