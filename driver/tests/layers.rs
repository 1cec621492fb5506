//! The driver's layers, checked from its sources: a module may import only its own layer
//! and the layers below it (codex < app_server < harness < drift < scenario_file <
//! scenarios < plan < record < report < client_check < config < upgrade < bench < cli), and
//! no modules of one layer may import each other in a cycle.
//!
//! The layers live in three crates, read together here: the engine's (`engine/src`, codex to
//! scenario_file), the catalogue's (`catalogue/src`, scenarios) and this one's (plan to cli).
//! Each crate names the layers of the crates below it by their own names (`crate::harness`,
//! imported at its root), so an import reads the same in all three.
//!
//! An import is a `crate::LAYER::module` path (or `codex_parity::LAYER::module` in the
//! binary) outside comments; `crate::LAYER::Item` and `crate::LAYER::{self, ..}` name the
//! layer's `mod.rs`. A file `LAYER/NAME.rs` or `LAYER/NAME/..` is module `NAME` of `LAYER`;
//! `main.rs` and `cli/` are the `cli` layer.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, lowest first.
const LAYERS: &[&str] = &[
    "codex",
    "app_server",
    "harness",
    "drift",
    "scenario_file",
    "scenarios",
    "plan",
    "record",
    "report",
    "client_check",
    "config",
    "upgrade",
    "bench",
    "cli",
];

/// A module: its layer and its name in the layer (`mod` for the layer's `mod.rs`).
type Module = (String, String);

/// The module a source file (path relative to `src/`) belongs to; `None` for `lib.rs`
/// and files outside the layers.
fn module_of(path: &str) -> Option<Module> {
    let path = path.trim_start_matches("./");
    if path == "main.rs" {
        return Some(("cli".into(), "main".into()));
    }
    let (layer, rest) = path.split_once('/')?;
    if !LAYERS.contains(&layer) {
        return None;
    }
    let first = rest.split('/').next()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    Some((layer.to_string(), name.to_string()))
}

/// The source without comments: whole comment lines (`//`, `///`, `//!`) and trailing
/// ` // ` comments are dropped.
fn code_lines(source: &str) -> impl Iterator<Item = &str> {
    source.lines().filter_map(|line| {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            return None;
        }
        Some(line.split(" // ").next().unwrap_or(line))
    })
}

/// Reads an identifier at the start of `s`; returns it and the rest.
fn ident(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    s.split_at(end)
}

/// The first path segment of each item of a `{a, b::c, self}` group (`s` starts after
/// the `{`), up to its matching `}`.
fn group_heads(s: &str) -> Vec<&str> {
    let mut heads = Vec::new();
    let mut depth = 0usize;
    let mut item_start = true;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => item_start = true,
            c if item_start && depth == 0 && !c.is_whitespace() => {
                item_start = false;
                heads.push(ident(&s[i..]).0);
            }
            _ => {}
        }
    }
    heads
}

/// Every `crate::LAYER::module` (and `codex_parity::LAYER::module`) a source imports.
/// `modules` are the known module names per layer: any other segment is an item of the
/// layer's `mod.rs`.
fn imports(source: &str, modules: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<Module> {
    let mut found = BTreeSet::new();
    let module = |layer: &str, head: &str| -> String {
        let known = modules.get(layer).is_some_and(|m| m.contains(head));
        if known { head } else { "mod" }.to_string()
    };
    for line in code_lines(source) {
        for prefix in ["crate::", "codex_parity::"] {
            let mut rest = line;
            while let Some(at) = rest.find(prefix) {
                let before = &rest[..at];
                rest = &rest[at + prefix.len()..];
                if before.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                    continue;
                }
                let (layer, after) = ident(rest);
                if !LAYERS.contains(&layer) {
                    continue;
                }
                let Some(after) = after.strip_prefix("::") else {
                    found.insert((layer.to_string(), "mod".to_string()));
                    continue;
                };
                if let Some(group) = after.strip_prefix('{') {
                    for head in group_heads(group) {
                        found.insert((layer.to_string(), module(layer, head)));
                    }
                } else {
                    found.insert((layer.to_string(), module(layer, ident(after).0)));
                }
            }
        }
    }
    found
}

/// The modules of its own layer a file names relatively: in a layer's `mod.rs`, `use
/// NAME::…` of a module of the layer (its own code uses it; a `pub use` only hands names on,
/// as a façade, and is not counted); in a file `LAYER/NAME.rs`, `super::X` (the layer's
/// `mod.rs`, or its module `X`). Inside a folder module (`LAYER/NAME/…`) `super` is `NAME`
/// itself, which is not an import.
fn relative_imports(
    path: &str,
    source: &str,
    me: &Module,
    modules: &BTreeMap<String, BTreeSet<String>>,
) -> BTreeSet<Module> {
    let mut found = BTreeSet::new();
    let layer = &me.0;
    let known = |head: &str| modules.get(layer).is_some_and(|m| m.contains(head));
    let in_folder = path.trim_start_matches("./").matches('/').count() > 1;
    for line in code_lines(source) {
        let line = line.trim_start();
        let used = line.strip_prefix("use ");
        if me.1 == "mod"
            && let Some(used) = used
        {
            let heads = match used.strip_prefix('{') {
                Some(group) => group_heads(group),
                None => vec![ident(used).0],
            };
            for head in heads {
                if known(head) && head != "mod" {
                    found.insert((layer.clone(), head.to_string()));
                }
            }
        }
        if in_folder || me.1 == "mod" {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("super::") {
            let before = &rest[..at];
            rest = &rest[at + "super::".len()..];
            if before.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            let heads = match rest.strip_prefix('{') {
                Some(group) => group_heads(group),
                None => vec![ident(rest).0],
            };
            for head in heads {
                let name = if known(head) { head } else { "mod" };
                found.insert((layer.clone(), name.to_string()));
            }
        }
    }
    found
}

/// The layering problems of `files` (path relative to `src/`, source): each names the
/// file and the import.
fn problems(files: &[(String, String)]) -> Vec<String> {
    let mut modules: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, _) in files {
        if let Some((layer, name)) = module_of(path) {
            modules.entry(layer).or_default().insert(name);
        }
    }
    let rank = |layer: &str| LAYERS.iter().position(|l| *l == layer);
    let mut problems = Vec::new();
    // Same-layer edges: (from, to) -> the file that imports.
    let mut edges: BTreeMap<(Module, Module), String> = BTreeMap::new();
    for (path, source) in files {
        let Some(me) = module_of(path) else { continue };
        let mut all = imports(source, &modules);
        all.extend(relative_imports(path, source, &me, &modules));
        for import in all {
            let (layer, name) = &import;
            if rank(layer) > rank(&me.0) {
                problems.push(format!(
                    "{path} (layer {}) imports crate::{layer}::{name}, a higher layer",
                    me.0
                ));
            } else if *layer == me.0 && *name != me.1 {
                edges.insert((me.clone(), import.clone()), path.clone());
            }
        }
    }
    let mut seen: BTreeSet<Vec<Module>> = BTreeSet::new();
    for (from, to) in edges.keys() {
        let Some(back) = path_between(&edges, to, from) else {
            continue;
        };
        // The cycle from -> to -> .. -> from, once per set of modules.
        let mut cycle = vec![from.clone()];
        cycle.extend(back);
        let mut members = cycle.clone();
        members.sort();
        members.dedup();
        if !seen.insert(members.clone()) {
            continue;
        }
        let name = |m: &Module| format!("{}::{}", m.0, m.1);
        let steps: Vec<String> = cycle
            .windows(2)
            .map(|w| {
                format!(
                    "{} imports crate::{}",
                    edges[&(w[0].clone(), w[1].clone())],
                    name(&w[1])
                )
            })
            .collect();
        problems.push(format!("cycle in layer {}: {}", from.0, steps.join(", ")));
    }
    problems
}

/// The modules of a shortest path of `edges` from `from` to `to` (both included).
fn path_between(
    edges: &BTreeMap<(Module, Module), String>,
    from: &Module,
    to: &Module,
) -> Option<Vec<Module>> {
    let mut came_from: BTreeMap<Module, Module> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([from.clone()]);
    while let Some(at) = queue.pop_front() {
        if at == *to {
            let mut path = vec![at];
            while let Some(prev) = came_from.get(&path[path.len() - 1]) {
                path.push(prev.clone());
            }
            path.reverse();
            return Some(path);
        }
        for (a, b) in edges.keys() {
            if *a == at && *b != *from && !came_from.contains_key(b) {
                came_from.insert(b.clone(), at.clone());
                queue.push_back(b.clone());
            }
        }
    }
    None
}

/// Every `.rs` file under `dir`, as (path relative to `root`, source).
fn read_sources(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            read_sources(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let source = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            let relative = path.strip_prefix(root).expect("under src/");
            out.push((relative.to_string_lossy().replace('\\', "/"), source));
        }
    }
}

#[test]
fn the_driver_keeps_its_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in ["engine", "catalogue", "driver"] {
        let src = root.join(krate).join("src");
        let before = files.len();
        read_sources(&src, &src, &mut files);
        assert!(
            files.len() > before + 5,
            "read only {} files of {krate}",
            files.len() - before
        );
    }
    let problems = problems(&files);
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

fn example(files: &[(&str, &str)]) -> Vec<String> {
    let files: Vec<(String, String)> = files
        .iter()
        .map(|(p, s)| (p.to_string(), s.to_string()))
        .collect();
    problems(&files)
}

#[test]
fn a_clean_example_has_no_problems() {
    let p = example(&[
        (
            "codex/schema.rs",
            "use crate::codex::binaries::CodexBinary;",
        ),
        (
            "harness/world.rs",
            "use crate::app_server::{AppServer, turn::MOCK_MODEL};\nuse crate::harness::tally::Tally;",
        ),
        ("harness/tally.rs", "use crate::lock;"),
        ("app_server/turn.rs", "use crate::app_server::AppServer;"),
        ("app_server/mod.rs", ""),
        ("main.rs", "use codex_parity::scenarios;"),
        ("lib.rs", "pub mod scenarios;"),
    ]);
    assert!(p.is_empty(), "{p:?}");
}

#[test]
fn an_import_of_a_higher_layer_is_named() {
    let p = example(&[
        (
            "app_server/turn.rs",
            "fn f() -> &str {\n    crate::harness::world::MOCK_MODEL\n}",
        ),
        ("harness/world.rs", ""),
        ("harness/scenario.rs", "use crate::scenarios::{self, goal};"),
    ]);
    assert_eq!(
        p,
        [
            "app_server/turn.rs (layer app_server) imports crate::harness::world, a higher layer",
            "harness/scenario.rs (layer harness) imports crate::scenarios::mod, a higher layer",
        ]
    );
}

#[test]
fn relative_imports_count_too() {
    // mod.rs naming its module relatively, the module naming the layer's mod.rs back.
    let p = example(&[
        ("plan/mod.rs", "pub mod events;\nuse events::{Event, Sink};"),
        ("plan/events.rs", "use crate::plan::Plan;"),
    ]);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].contains("cycle in layer plan"), "{p:?}");
    // A façade's `pub use` hands names on: not an import of mod.rs's own.
    let p = example(&[
        ("plan/mod.rs", "pub mod events;\npub use events::Event;"),
        ("plan/events.rs", "use crate::plan::Plan;"),
    ]);
    assert!(p.is_empty(), "{p:?}");
    // super:: from a module of the layer; inside a folder module it is the module itself.
    let p = example(&[
        ("report/json.rs", "use super::matrix::Matrix;"),
        ("report/matrix.rs", "use super::json;"),
        ("report/audit/mod.rs", ""),
        ("report/audit/table.rs", "use super::Finding;"),
    ]);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].contains("report::json") && p[0].contains("report::matrix"),
        "{p:?}"
    );
}

#[test]
fn comments_do_not_count() {
    let p = example(&[(
        "codex/schema.rs",
        "//! see [`crate::harness::world`]\n/// and crate::report::matrix\nfn f() {} // crate::bench::load",
    )]);
    assert!(p.is_empty(), "{p:?}");
}

#[test]
fn a_cycle_inside_a_layer_is_named() {
    let p = example(&[
        ("harness/scenario.rs", "use crate::harness::runner::Target;"),
        (
            "harness/runner.rs",
            "use crate::harness::{baseline::Baseline, scenario::Scenario};",
        ),
        ("harness/baseline.rs", ""),
    ]);
    assert_eq!(
        p,
        [
            "cycle in layer harness: harness/runner.rs imports crate::harness::scenario, harness/scenario.rs imports crate::harness::runner"
        ]
    );
}

#[test]
fn a_longer_cycle_is_named_once() {
    let p = example(&[
        ("harness/scenario.rs", "use crate::harness::runner::Target;"),
        (
            "harness/runner.rs",
            "use crate::harness::baseline::Baseline;",
        ),
        (
            "harness/baseline.rs",
            "use crate::harness::scenario::Outcome;",
        ),
    ]);
    assert_eq!(
        p,
        [
            "cycle in layer harness: harness/baseline.rs imports crate::harness::scenario, \
             harness/scenario.rs imports crate::harness::runner, \
             harness/runner.rs imports crate::harness::baseline"
        ]
    );
}
