//! What a profile is made of, item by item: each subcommand, flag, `-c` override and
//! `--enable`/`--disable` of its command line, each setting (leaf key) of its home's TOML
//! files, each `thread/start` param (each entry of its `config` map apart), and each package
//! path. A check judges every item on every release (`crate::config::judge`).
//!
//! The command line is read with a [`Grammar`]: which words are subcommands and which flags
//! take a value, joined from the surface cards of every release checked (a flag only an old
//! release has, `--profile-v2 NAME`, still takes its value), so that the items are the same
//! on every release.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;

use serde_json::Value;

use crate::codex::card::Card;
use crate::config::profile::{self, Profile};

/// The command words codex-parity starts live: the app-server gets the handshake, exec a
/// start.
pub const APP_SERVER: &str = "app-server";

/// One item of a profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Its index in the profile's item list.
    pub id: usize,
    /// What it is.
    pub kind: ItemKind,
    /// Where it is in the integrator's text (`profile.toml:7`, or `config.toml:3` of a file
    /// read by path).
    pub at: String,
}

/// What an item is.
#[derive(Debug, Clone, PartialEq)]
pub enum ItemKind {
    /// A subcommand word (`app-server`; `exec resume` for the second of two).
    Subcommand {
        /// The command path it selects.
        path: String,
        /// Its index in the args.
        arg: usize,
    },
    /// A flag of the command line, with its value.
    Flag {
        /// The command path it belongs to (`""` for `codex` itself).
        command: String,
        /// As written (`-a`, `--listen`).
        flag: String,
        /// Its long name, when a card knows it.
        long: Option<String>,
        /// Its value.
        value: Option<String>,
        /// Its args.
        args: Range<usize>,
    },
    /// `-c KEY=VALUE`.
    Override {
        /// The dotted key.
        key: String,
        /// The value, read as TOML (a string when it is not TOML, as codex reads it).
        value: Value,
        /// What follows the key as written: `=VALUE`, or nothing when there is no `=`.
        raw: String,
        /// Its args.
        args: Range<usize>,
    },
    /// `--enable NAME` / `--disable NAME`.
    Feature {
        /// The feature name.
        name: String,
        /// `--enable`.
        enable: bool,
        /// Its args.
        args: Range<usize>,
    },
    /// One setting of a home TOML file.
    Key {
        /// The file's name in the home.
        file: String,
        /// The dotted key.
        key: String,
        /// The value.
        value: Value,
        /// The value as written.
        raw: String,
        /// Its first line in the file (1-based).
        line: usize,
        /// Its last line.
        end_line: usize,
        /// Its bytes in the file.
        span: Range<usize>,
    },
    /// A home TOML file that is not TOML: the whole file is one item.
    File {
        /// The file's name in the home.
        file: String,
        /// The parser's complaint.
        error: String,
    },
    /// A `thread/start` param other than `config`.
    ThreadParam {
        /// The param.
        name: String,
        /// Its value.
        value: Value,
    },
    /// One entry of `thread/start`'s `config` map.
    ThreadConfig {
        /// The dotted key.
        key: String,
        /// Its value.
        value: Value,
    },
    /// A path the launcher expects in the npm package.
    Package {
        /// The path.
        path: String,
    },
}

impl ItemKind {
    /// The family, for the report (`command line`, `config.toml`, `thread/start`, `package`).
    pub fn family(&self) -> String {
        match self {
            ItemKind::Subcommand { .. }
            | ItemKind::Flag { .. }
            | ItemKind::Override { .. }
            | ItemKind::Feature { .. } => "command line".into(),
            ItemKind::Key { file, .. } | ItemKind::File { file, .. } => file.clone(),
            ItemKind::ThreadParam { .. } | ItemKind::ThreadConfig { .. } => "thread/start".into(),
            ItemKind::Package { .. } => "package".into(),
        }
    }

    /// The feature an item names and whether it turns it on: `--enable X`, `features.X`
    /// in a file, `-c` or the thread's config.
    pub fn feature(&self) -> Option<(&str, bool)> {
        match self {
            ItemKind::Feature { name, enable, .. } => Some((name, *enable)),
            ItemKind::Key { key, value, .. }
            | ItemKind::Override { key, value, .. }
            | ItemKind::ThreadConfig { key, value } => {
                let name = key.strip_prefix("features.")?;
                (!name.contains('.')).then_some((name, value.as_bool().unwrap_or(true)))
            }
            _ => None,
        }
    }

    /// The configuration key an item sets, when it sets one.
    pub fn config_key(&self) -> Option<&str> {
        match self {
            ItemKind::Key { key, .. }
            | ItemKind::Override { key, .. }
            | ItemKind::ThreadConfig { key, .. } => Some(key),
            _ => None,
        }
    }

    /// The value an item sets, when it has one.
    pub fn value(&self) -> Option<&Value> {
        match self {
            ItemKind::Key { value, .. }
            | ItemKind::Override { value, .. }
            | ItemKind::ThreadParam { value, .. }
            | ItemKind::ThreadConfig { value, .. } => Some(value),
            _ => None,
        }
    }

    /// The args it takes up.
    pub fn args(&self) -> Option<Range<usize>> {
        match self {
            ItemKind::Flag { args, .. }
            | ItemKind::Override { args, .. }
            | ItemKind::Feature { args, .. } => Some(args.clone()),
            ItemKind::Subcommand { arg, .. } => Some(*arg..*arg + 1),
            _ => None,
        }
    }
}

impl fmt::Display for ItemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ItemKind::Subcommand { path, .. } => write!(f, "subcommand {path}"),
            ItemKind::Flag { flag, value, .. } => match value {
                Some(v) => write!(f, "{flag} {v}"),
                None => write!(f, "{flag}"),
            },
            ItemKind::Override { key, raw, .. } => write!(f, "-c {key}{raw}"),
            ItemKind::Feature { name, enable, .. } => {
                write!(f, "--{} {name}", if *enable { "enable" } else { "disable" })
            }
            ItemKind::Key { key, raw, .. } => write!(f, "{key} = {}", one_line(raw)),
            ItemKind::File { file, .. } => write!(f, "{file} (the whole file)"),
            ItemKind::ThreadParam { name, value } => write!(f, "thread/start {name}: {value}"),
            ItemKind::ThreadConfig { key, value } => {
                write!(f, "thread/start config.{key}: {value}")
            }
            ItemKind::Package { path } => write!(f, "package path {path}"),
        }
    }
}

/// A value's text on one line, shortened.
fn one_line(raw: &str) -> String {
    let flat: String = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 60 {
        format!("{}…", flat.chars().take(59).collect::<String>())
    } else {
        flat
    }
}

/// Which words are subcommands and which flags take a value, joined over several releases.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grammar {
    /// Command path -> its subcommands.
    subcommands: BTreeMap<String, BTreeSet<String>>,
    /// (command path, long flag) -> takes a value.
    flags: BTreeMap<(String, String), bool>,
    /// (command path, short letter) -> long flag.
    shorts: BTreeMap<(String, char), String>,
}

impl Grammar {
    /// The grammar every card agrees to: a word is a subcommand, and a flag takes a value,
    /// when any card says so.
    pub fn of(cards: &[&Card]) -> Grammar {
        let mut g = Grammar::default();
        for card in cards {
            for (path, spec) in &card.commands {
                g.subcommands
                    .entry(path.clone())
                    .or_default()
                    .extend(spec.subcommands.iter().cloned());
                for (long, flag) in &spec.flags {
                    let takes = g.flags.entry((path.clone(), long.clone())).or_default();
                    *takes |= flag.takes_value;
                    if let Some(c) = flag.short {
                        g.shorts.insert((path.clone(), c), long.clone());
                    }
                }
            }
        }
        g
    }

    fn takes_value(&self, path: &str, long: &str) -> Option<bool> {
        self.flags
            .get(&(path.to_string(), long.to_string()))
            .copied()
    }
}

/// How the command line is laid out: where the subcommand words are, whether a positional
/// argument (a prompt) follows them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    /// The command path the args select (`""`, `app-server`, `exec`, `exec resume`).
    pub path: String,
    /// The index of the last subcommand word.
    pub last_subcommand: Option<usize>,
    /// Whether a positional argument follows.
    pub positional: bool,
}

/// The items of a command line, and its layout.
pub fn command_line(
    args: &[profile::Placed<String>],
    g: &Grammar,
) -> (Vec<(ItemKind, usize)>, Layout) {
    let mut out = Vec::new();
    let mut layout = Layout::default();
    let mut i = 0;
    while i < args.len() {
        let (a, line) = (args[i].value.as_str(), args[i].line);
        let start = i;
        if a == "--" {
            layout.positional |= i + 1 < args.len();
            break;
        }
        let path = layout.path.clone();
        let flag = if let Some(body) = a.strip_prefix("--").filter(|b| !b.is_empty()) {
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (format!("--{n}"), Some(v.to_string())),
                None => (a.to_string(), None),
            };
            let takes = g.takes_value(&path, &name).unwrap_or(inline.is_some());
            let value = match (inline, takes) {
                (Some(v), _) => Some(v),
                (None, true) if i + 1 < args.len() => {
                    i += 1;
                    Some(args[i].value.clone())
                }
                _ => None,
            };
            Some((
                a.split('=').next().unwrap_or(a).to_string(),
                Some(name),
                value,
            ))
        } else if a.len() > 1 && a.starts_with('-') {
            let letter = a.chars().nth(1).unwrap_or('-');
            let long = g.shorts.get(&(path.clone(), letter)).cloned();
            let takes = long
                .as_deref()
                .and_then(|l| g.takes_value(&path, l))
                .unwrap_or(false);
            let rest = &a[1 + letter.len_utf8()..];
            let value = if !takes {
                None
            } else if !rest.is_empty() {
                Some(rest.trim_start_matches('=').to_string())
            } else if i + 1 < args.len() {
                i += 1;
                Some(args[i].value.clone())
            } else {
                None
            };
            Some((format!("-{letter}"), long, value))
        } else {
            None
        };
        let args_range = start..i + 1;
        match flag {
            Some((written, long, value)) => {
                let kind = match (long.as_deref(), value) {
                    (Some("--config"), Some(v)) => {
                        let (key, raw) = match v.split_once('=') {
                            Some((k, r)) => (k, format!("={r}")),
                            None => (v.as_str(), String::new()),
                        };
                        ItemKind::Override {
                            key: key.trim().to_string(),
                            value: toml_value(raw.trim_start_matches('=')),
                            raw,
                            args: args_range,
                        }
                    }
                    (Some(l @ ("--enable" | "--disable")), Some(v)) => ItemKind::Feature {
                        name: v,
                        enable: l == "--enable",
                        args: args_range,
                    },
                    (long, value) => ItemKind::Flag {
                        command: path,
                        flag: written,
                        long: long.map(String::from),
                        value,
                        args: args_range,
                    },
                };
                out.push((kind, line));
            }
            None => {
                let known = g.subcommands.get(&path).is_some_and(|s| s.contains(a));
                if known && !layout.positional {
                    layout.path = if path.is_empty() {
                        a.to_string()
                    } else {
                        format!("{path} {a}")
                    };
                    layout.last_subcommand = Some(i);
                    out.push((
                        ItemKind::Subcommand {
                            path: layout.path.clone(),
                            arg: i,
                        },
                        line,
                    ));
                } else {
                    layout.positional = true;
                }
            }
        }
        i += 1;
    }
    (out, layout)
}

/// A `-c` value as codex reads it: TOML when it parses, else the raw text as a string.
pub fn toml_value(raw: &str) -> Value {
    match toml::de::DeValue::parse(raw.trim()) {
        Ok(v) => profile::to_json(v.get_ref()),
        Err(_) => Value::String(raw.to_string()),
    }
}

/// Every item of `profile`, read with `grammar`, in the profile's order: the command line,
/// the home's TOML files, the thread/start params, the package paths.
pub fn items(profile: &Profile, grammar: &Grammar) -> (Vec<Item>, Layout) {
    let name = profile.path.display().to_string();
    let mut out: Vec<(ItemKind, String)> = Vec::new();
    let (line_items, layout) = command_line(&profile.args, grammar);
    out.extend(
        line_items
            .into_iter()
            .map(|(k, l)| (k, format!("{name}:{l}"))),
    );
    for file in profile.home.iter().filter(|f| f.is_config()) {
        match profile::leaves(&file.text) {
            Ok(leaves) => {
                for leaf in leaves {
                    let at = file.place(leaf.line);
                    out.push((
                        ItemKind::Key {
                            file: file.name.clone(),
                            key: leaf.key,
                            value: leaf.value,
                            raw: leaf.raw,
                            line: leaf.line,
                            end_line: leaf.end_line,
                            span: leaf.span,
                        },
                        at,
                    ));
                }
            }
            Err((error, line)) => out.push((
                ItemKind::File {
                    file: file.name.clone(),
                    error,
                },
                file.place(line),
            )),
        }
    }
    for (param, placed) in &profile.thread_start {
        let at = format!("{name}:{}", placed.line);
        match (param.as_str(), &placed.value) {
            ("config", Value::Object(map)) => {
                let mut flat = Vec::new();
                flatten("", map, &mut flat);
                for (key, value) in flat {
                    out.push((ItemKind::ThreadConfig { key, value }, at.clone()));
                }
            }
            _ => out.push((
                ItemKind::ThreadParam {
                    name: param.clone(),
                    value: placed.value.clone(),
                },
                at,
            )),
        }
    }
    for path in &profile.package {
        out.push((
            ItemKind::Package {
                path: path.value.clone(),
            },
            format!("{name}:{}", path.line),
        ));
    }
    let items = out
        .into_iter()
        .enumerate()
        .map(|(id, (kind, at))| Item { id, kind, at })
        .collect();
    (items, layout)
}

/// The leaves of a JSON object as dotted keys (a `features` map's entries each one leaf).
fn flatten(prefix: &str, map: &serde_json::Map<String, Value>, out: &mut Vec<(String, Value)>) {
    for (k, v) in map {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Object(inner) if !inner.is_empty() => flatten(&key, inner, out),
            _ => out.push((key, v.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codex::completion::{CommandSpec, FlagSpec};
    use crate::config::profile::Placed;
    use serde_json::json;
    use std::path::Path;

    fn grammar() -> Grammar {
        let mut top = CommandSpec::default();
        let flag = |short: Option<char>, takes: bool| FlagSpec {
            short,
            takes_value: takes,
            values: Vec::new(),
        };
        top.flags.insert("--config".into(), flag(Some('c'), true));
        top.flags
            .insert("--ask-for-approval".into(), flag(Some('a'), true));
        top.subcommands
            .extend(["app-server".to_string(), "exec".to_string()]);
        let mut app = CommandSpec::default();
        app.flags.insert("--config".into(), flag(Some('c'), true));
        app.flags.insert("--enable".into(), flag(None, true));
        app.flags.insert("--listen".into(), flag(None, true));
        app.flags
            .insert("--strict-config".into(), flag(None, false));
        let mut g = Grammar::default();
        for (path, spec) in [("", top), ("app-server", app)] {
            g.subcommands.insert(path.into(), spec.subcommands.clone());
            for (long, f) in spec.flags {
                if let Some(c) = f.short {
                    g.shorts.insert((path.into(), c), long.clone());
                }
                g.flags.insert((path.into(), long), f.takes_value);
            }
        }
        g
    }

    fn placed(args: &[&str]) -> Vec<Placed<String>> {
        args.iter()
            .map(|a| Placed {
                value: a.to_string(),
                line: 1,
            })
            .collect()
    }

    #[test]
    fn a_command_line_becomes_items() {
        let (items, layout) = command_line(
            &placed(&[
                "-a",
                "never",
                "app-server",
                "-c",
                "model=\"o3\"",
                "--enable",
                "hooks",
                "--listen=stdio://",
                "--strict-config",
                "--stdio",
            ]),
            &grammar(),
        );
        let shown: Vec<String> = items.iter().map(|(k, _)| k.to_string()).collect();
        assert_eq!(
            shown,
            [
                "-a never",
                "subcommand app-server",
                "-c model=\"o3\"",
                "--enable hooks",
                "--listen stdio://",
                "--strict-config",
                "--stdio"
            ]
        );
        assert_eq!(layout.path, "app-server");
        assert_eq!(layout.last_subcommand, Some(2));
        assert!(!layout.positional);
        match &items[2].0 {
            ItemKind::Override { value, args, .. } => {
                assert_eq!(value, &json!("o3"));
                assert_eq!(args, &(3..5));
            }
            other => panic!("{other:?}"),
        }
        let (_, exec) = command_line(&placed(&["exec", "hello"]), &grammar());
        assert!(exec.positional && exec.path == "exec");
    }

    #[test]
    fn every_part_of_a_profile_is_an_item_with_its_place() {
        let text = "args = [\"app-server\"]\npackage = [\"vendor/x/codex/codex\"]\n[home]\n\
                    \"config.toml\" = '''\nmodel = \"o3\"\n[features]\ncodex_hooks = true\n'''\n\
                    [thread_start]\napprovalPolicy = \"on-failure\"\n\
                    config = { approval_policy = \"untrusted\", features = { hooks = true } }\n";
        let profile = Profile::parse(Path::new("p.toml"), text).unwrap();
        let (items, _) = items(&profile, &grammar());
        let shown: Vec<(String, &str)> = items
            .iter()
            .map(|i| (i.kind.to_string(), i.at.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                ("subcommand app-server".to_string(), "p.toml:1"),
                ("model = \"o3\"".to_string(), "p.toml:5"),
                ("features.codex_hooks = true".to_string(), "p.toml:7"),
                (
                    "thread/start approvalPolicy: \"on-failure\"".to_string(),
                    "p.toml:10"
                ),
                (
                    "thread/start config.approval_policy: \"untrusted\"".to_string(),
                    "p.toml:11"
                ),
                (
                    "thread/start config.features.hooks: true".to_string(),
                    "p.toml:11"
                ),
                ("package path vendor/x/codex/codex".to_string(), "p.toml:2"),
            ]
        );
        assert_eq!(items[2].kind.feature(), Some(("codex_hooks", true)));
        assert_eq!(items[5].kind.feature(), Some(("hooks", true)));
        assert_eq!(toml_value("on-failure"), json!("on-failure"));
        assert_eq!(toml_value("12"), json!(12));
    }
}
