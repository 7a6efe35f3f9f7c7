//! The library's modules form layers, ground first, without cycles: a module may use modules
//! of its own layer or of the layers declared before it in `src/lib.rs`, and the graph of
//! `crate::…` uses has no cycle. Read from the sources, so a new import that breaks the order
//! fails here with the edge that broke it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// Module name to its layer's index, in the order `src/lib.rs` declares them: a `// name`
/// comment line opens a layer, `mod name;` lines fill it.
fn layers(lib: &str) -> BTreeMap<String, usize> {
    let mut layer = 0;
    let mut modules = BTreeMap::new();
    let mut seen_mod_in_layer = false;
    for line in lib.lines().map(str::trim) {
        let opens_layer = line
            .strip_prefix("// ")
            .is_some_and(|name| !name.contains(' '));
        if opens_layer && seen_mod_in_layer {
            layer += 1;
            seen_mod_in_layer = false;
        }
        if let Some(name) = line.strip_prefix("mod ").and_then(|l| l.strip_suffix(';')) {
            modules.insert(name.to_owned(), layer);
            seen_mod_in_layer = true;
        }
    }
    modules
}

/// The source text of a module: `src/name.rs`, or every file under `src/name/`.
fn source(src: &Path, name: &str) -> String {
    let file = src.join(format!("{name}.rs"));
    if file.exists() {
        return fs::read_to_string(file).unwrap();
    }
    let mut text = String::new();
    for entry in fs::read_dir(src.join(name)).unwrap() {
        text.push_str(&fs::read_to_string(entry.unwrap().path()).unwrap());
    }
    text
}

/// The crate's modules that `text` names as `crate::module`.
fn uses(text: &str, modules: &BTreeMap<String, usize>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if modules.contains_key(&name) {
            found.insert(name);
        }
    }
    found
}

fn graph() -> (BTreeMap<String, usize>, BTreeMap<String, BTreeSet<String>>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = layers(&fs::read_to_string(src.join("lib.rs")).unwrap());
    let edges = modules
        .keys()
        .map(|name| {
            let mut used = uses(&source(&src, name), &modules);
            used.remove(name);
            (name.clone(), used)
        })
        .collect();
    (modules, edges)
}

#[test]
fn lib_rs_declares_every_module_in_layers() {
    let (modules, _) = graph();
    assert!(modules.len() >= 19, "{modules:?}");
    assert_eq!(modules["outcome"], 0);
    assert!(modules["layer"] > modules["ledger"]);
    assert!(modules["ledger"] > modules["summary"]);
}

#[test]
fn no_module_uses_one_of_a_later_layer() {
    let (modules, edges) = graph();
    let upward: Vec<String> = edges
        .iter()
        .flat_map(|(from, to)| to.iter().map(move |to| (from, to)))
        .filter(|(from, to)| modules[*to] > modules[*from])
        .map(|(from, to)| format!("{from} -> {to}"))
        .collect();
    assert!(
        upward.is_empty(),
        "uses against the layer order: {upward:?}"
    );
}

/// The modules that no topological order can place: those on a cycle and those using one.
fn unordered(edges: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    // Kahn's algorithm: whatever cannot be ordered is on a cycle or depends on one.
    let mut remaining = edges.clone();
    loop {
        let ready: Vec<String> = remaining
            .iter()
            .filter(|(_, to)| to.iter().all(|t| !remaining.contains_key(t)))
            .map(|(name, _)| name.clone())
            .collect();
        if ready.is_empty() {
            break;
        }
        for name in ready {
            remaining.remove(&name);
        }
    }
    remaining
}

#[test]
fn the_module_graph_has_no_cycle() {
    let (_, edges) = graph();
    let remaining = unordered(&edges);
    assert!(remaining.is_empty(), "modules on a cycle: {remaining:?}");
}

#[test]
fn the_checks_see_a_use_and_a_cycle_when_there_is_one() {
    let modules: BTreeMap<String, usize> = [("a", 0), ("b", 0), ("c", 0)]
        .into_iter()
        .map(|(n, l)| (n.to_owned(), l))
        .collect();
    let used_by_a = uses("use crate::b::X; // crate::nothing", &modules);
    assert_eq!(used_by_a, BTreeSet::from(["b".to_owned()]));
    let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
    let cyclic = BTreeMap::from([
        ("a".to_owned(), used_by_a),
        ("b".to_owned(), set(&["a"])),
        ("c".to_owned(), set(&[])),
    ]);
    let left = unordered(&cyclic);
    assert_eq!(left.keys().collect::<Vec<_>>(), ["a", "b"]);
}
