//! The command line of a `codex exec` as the mock reads it: whether it is one (`codex exec …`
//! or `codex e …`, global flags before it allowed), whether it asks for the JSONL stream
//! (`--json`, or `--experimental-json` as OpenAI's TypeScript SDK passes it), which thread
//! it resumes (`resume ID`, `resume --last`), where the final message goes
//! (`--output-last-message FILE`) and its prompt. Flags that take a value are known by
//! name (those of `codex exec --help` from 0.131.0 to 0.171.0), so their values are never
//! read as the subcommand, the thread id or the prompt.

/// The flags of `codex` and `codex exec` (and `exec resume`) whose value is the next
/// argument (from their `--help`).
const VALUE_FLAGS: [&str; 26] = [
    "-c",
    "--config",
    "--enable",
    "--disable",
    "--remote",
    "--remote-auth-token-env",
    "-i",
    "--image",
    "-m",
    "--model",
    "--local-provider",
    "-p",
    "--profile",
    "-s",
    "--sandbox",
    "-a",
    "--ask-for-approval",
    "-C",
    "--cd",
    "--add-dir",
    "--thread-source",
    "--cyber-access-program",
    "--output-schema",
    "--color",
    "-o",
    "--output-last-message",
];

/// The flag naming the file the final message is written to, short and long.
const LAST_MESSAGE: [&str; 2] = ["-o", "--output-last-message"];

/// A `codex exec` invocation, as far as the mock needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecArgs {
    /// `--json` or `--experimental-json`: the JSONL event stream on stdout.
    pub json: bool,
    /// `resume`: the thread it resumes.
    pub resume: Option<Resume>,
    /// `--output-last-message FILE`.
    pub last_message: Option<String>,
    /// The prompt argument, if any (`-`: read from stdin).
    pub prompt: Option<String>,
}

/// The thread an `exec resume` names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resume {
    /// The id (or name) given; `None` with `--last` or nothing.
    pub id: Option<String>,
}

impl ExecArgs {
    /// Reads the arguments after `codex`; `None` when they do not run `exec`.
    pub fn of(args: &[String]) -> Option<ExecArgs> {
        let (at, words) = positionals(args);
        match words.first().map(String::as_str) {
            Some("exec" | "e") => Some(ExecArgs::parse(&args[at[0] + 1..])),
            _ => None,
        }
    }

    /// Reads the arguments after `exec`.
    pub fn parse(args: &[String]) -> ExecArgs {
        let mut out = ExecArgs::default();
        let mut last = false;
        let mut i = 0;
        while i < args.len() {
            let a = args[i].as_str();
            if let Some((flag, value)) = a.split_once('=').filter(|_| a.starts_with("--")) {
                if LAST_MESSAGE.contains(&flag) {
                    out.last_message = Some(value.to_string());
                }
            } else if a == "--json" || a == "--experimental-json" {
                out.json = true;
            } else if a == "--last" {
                last = true;
            } else if VALUE_FLAGS.contains(&a) {
                if LAST_MESSAGE.contains(&a) {
                    out.last_message = args.get(i + 1).cloned();
                }
                i += 1;
            }
            i += 1;
        }
        let (_, words) = positionals(args);
        let mut words = words.into_iter();
        let first = words.next();
        if first.as_deref() == Some("resume") {
            let id = if last { None } else { words.next() };
            out.resume = Some(Resume { id });
            out.prompt = words.next();
        } else {
            out.prompt = first;
        }
        out
    }
}

/// The positional arguments (neither a flag nor a flag's value), with their places.
fn positionals(args: &[String]) -> (Vec<usize>, Vec<String>) {
    let (mut at, mut words) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "--" {
            for (j, rest) in args.iter().enumerate().skip(i + 1) {
                at.push(j);
                words.push(rest.clone());
            }
            break;
        }
        if VALUE_FLAGS.contains(&a) {
            i += 2;
            continue;
        }
        if !a.starts_with('-') || a == "-" {
            at.push(i);
            words.push(a.to_string());
        }
        i += 1;
    }
    (at, words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_sdks_command_lines_are_read() {
        // As OpenAI's TypeScript SDK runs it: flags, then `resume ID`, the prompt on stdin.
        let sdk = "exec --experimental-json --model gpt-5 --sandbox read-only --cd /w \
                   --skip-git-repo-check -c a=b resume 0199-thread --image x.png";
        let e = ExecArgs::of(&args(sdk)).unwrap();
        assert!(e.json);
        assert_eq!(
            e.resume,
            Some(Resume {
                id: Some("0199-thread".into())
            })
        );
        assert_eq!(e.prompt, None);
        let first = ExecArgs::of(&args("-c model=x e --json -o out.txt hello")).unwrap();
        assert_eq!(first.resume, None);
        assert_eq!(first.prompt.as_deref(), Some("hello"));
        assert_eq!(first.last_message.as_deref(), Some("out.txt"));
        let last = ExecArgs::of(&args("exec resume --last next")).unwrap();
        assert_eq!(last.resume, Some(Resume { id: None }));
        assert_eq!(last.prompt.as_deref(), Some("next"));
        let eq = ExecArgs::of(&args("exec --output-last-message=f.txt -")).unwrap();
        assert_eq!(eq.last_message.as_deref(), Some("f.txt"));
        assert_eq!(eq.prompt.as_deref(), Some("-"));
        assert!(!eq.json);
        // A value that looks like the subcommand is a value.
        assert!(ExecArgs::of(&args("-c exec app-server")).is_none());
        assert!(ExecArgs::of(&args("app-server")).is_none());
    }
}
