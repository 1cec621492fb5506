//! The sidecar's layers, checked from its sources: a module may import only its own layer
//! and the layers below it (wire < mock < mcp < control), and the modules of one layer
//! import each other in no circle.
//!
//! An import is a `crate::LAYER::module` path, or a `crate::name` that the crate root
//! re-exports from a layer (`pub use mock::{decode, pairing}`), outside comments and test
//! modules. A file `LAYER/NAME.rs` is module `NAME` of `LAYER`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, lowest first.
const LAYERS: &[&str] = &["wire", "mock", "mcp", "control"];

type Module = (String, String);

/// The source of a file without comment lines and without its `#[cfg(test)]` module.
fn code(source: &str) -> String {
    let source = source.split("#[cfg(test)]").next().unwrap_or(source);
    source
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| l.split(" // ").next().unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names the crate root re-exports from a layer: `pub use mock::{decode, pairing};`.
fn root_reexports(lib: &str) -> BTreeMap<String, Module> {
    let mut map = BTreeMap::new();
    for line in code(lib).lines() {
        let Some(rest) = line.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((layer, items)) = rest.split_once("::") else {
            continue;
        };
        if !LAYERS.contains(&layer) {
            continue;
        }
        let items = items.trim_end_matches(';');
        let items = items.trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',') {
            let name = item.trim().split("::").next().unwrap_or("").trim();
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                map.insert(name.to_string(), (layer.to_string(), name.to_string()));
            }
        }
    }
    map
}

/// An identifier at the start of `s`.
fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The modules a file imports.
fn imports(code: &str, reexports: &BTreeMap<String, Module>) -> BTreeSet<Module> {
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        let mut heads: Vec<&str> = Vec::new();
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            heads.extend(group[..end].split(',').map(|s| s.trim()));
        } else {
            heads.push(rest);
        }
        for head in heads {
            let first = ident(head);
            if LAYERS.contains(&first) {
                let after = head[first.len()..].strip_prefix("::").unwrap_or("");
                let module = ident(after);
                if !module.is_empty() && module.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                {
                    found.insert((first.to_string(), module.to_string()));
                }
            } else if let Some(m) = reexports.get(first) {
                found.insert(m.clone());
            }
        }
    }
    found
}

/// Every layer module of the crate with what it imports.
fn graph() -> BTreeMap<Module, BTreeSet<Module>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let reexports = root_reexports(&lib);
    let mut graph = BTreeMap::new();
    for layer in LAYERS {
        for entry in std::fs::read_dir(src.join(layer)).unwrap() {
            let path = entry.unwrap().path();
            let Some(name) = path.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            let name = if path.is_dir() {
                name
            } else {
                name.trim_end_matches(".rs")
            };
            let text = if path.is_dir() {
                std::fs::read_to_string(path.join("mod.rs")).unwrap_or_default()
            } else {
                std::fs::read_to_string(&path).unwrap()
            };
            let me: Module = (layer.to_string(), name.to_string());
            let mut deps = imports(&code(&text), &reexports);
            deps.remove(&me);
            graph.insert(me, deps);
        }
    }
    graph
}

fn rank(layer: &str) -> usize {
    LAYERS.iter().position(|l| *l == layer).unwrap()
}

#[test]
fn no_module_imports_a_layer_above_its_own() {
    let mut wrong = Vec::new();
    for ((layer, module), deps) in graph() {
        for (dl, dm) in deps {
            if rank(&dl) > rank(&layer) {
                wrong.push(format!("{layer}::{module} imports {dl}::{dm}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports up a layer:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_modules_of_a_layer_import_each_other_in_no_circle() {
    let graph = graph();
    // Depth-first search for a cycle among modules of one layer.
    fn visit(
        node: &Module,
        graph: &BTreeMap<Module, BTreeSet<Module>>,
        path: &mut Vec<Module>,
        done: &mut BTreeSet<Module>,
        cycles: &mut Vec<String>,
    ) {
        if let Some(at) = path.iter().position(|n| n == node) {
            let circle: Vec<String> = path[at..]
                .iter()
                .chain([node])
                .map(|(l, m)| format!("{l}::{m}"))
                .collect();
            cycles.push(circle.join(" -> "));
            return;
        }
        if !done.insert(node.clone()) {
            return;
        }
        path.push(node.clone());
        for dep in graph.get(node).into_iter().flatten() {
            if dep.0 == node.0 {
                visit(dep, graph, path, done, cycles);
            }
        }
        path.pop();
    }
    let mut cycles = Vec::new();
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, &graph, &mut Vec::new(), &mut done, &mut cycles);
    }
    assert!(cycles.is_empty(), "import circles:\n{}", cycles.join("\n"));
}

#[test]
fn the_checker_sees_imports_and_their_layers() {
    let reexports = root_reexports("pub use mock::{captured, decode};\npub use wire::sse;");
    let found = imports(
        &code(
            "use crate::mock::server::{Server, Status};\n// use crate::control::cli;\nuse crate::{decode, sse};\nfn f() { crate::wire::events::x(); }\n#[cfg(test)]\nmod tests { use crate::control::client; }",
        ),
        &reexports,
    );
    let names: Vec<String> = found.iter().map(|(l, m)| format!("{l}::{m}")).collect();
    assert_eq!(
        names,
        ["mock::decode", "mock::server", "wire::events", "wire::sse"]
    );
    // The graph of the real crate is not empty, and mock is under control.
    let graph = graph();
    assert!(graph[&("control".into(), "cli".into())].contains(&("mock".into(), "server".into())));
    assert!(rank("mock") < rank("control"));
}
