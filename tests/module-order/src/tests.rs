use std::collections::BTreeMap;
use std::fs;

use super::*;

#[test]
fn an_edge_against_the_order_is_named_with_its_place() {
    let modules = ["low".to_owned(), "high".to_owned()];
    let exports = BTreeMap::from([("Thing".to_owned(), "high".to_owned())]);
    let at = ["low".to_owned()];
    let found = uses("\nuse crate::Thing;\n", &at, &modules, &exports);
    assert_eq!(found, [("high".to_owned(), 2)]);
    let graph = Graph {
        modules: modules.to_vec(),
        edges: vec![
            Edge {
                from: "low".into(),
                to: "high".into(),
                file: "low.rs".into(),
                line: 2,
            },
            Edge {
                from: "high".into(),
                to: "low".into(),
                file: "high.rs".into(),
                line: 7,
            },
        ],
    };
    assert_eq!(graph.against_the_order(), ["low -> high (src/low.rs:2)"]);
    assert!(graph.has("high", "low") && !graph.has("low", "low"));
    assert_eq!(graph.uses_of("high"), [&graph.edges[1]]);
    let mut with_a_use_of_itself = graph.edges.clone();
    with_a_use_of_itself.push(Edge {
        from: "low".into(),
        to: "low".into(),
        file: "low.rs".into(),
        line: 3,
    });
    let graph = Graph {
        modules: graph.modules,
        edges: with_a_use_of_itself,
    };
    // A use of itself is never against the order.
    assert_eq!(graph.against_the_order(), ["low -> high (src/low.rs:2)"]);
}

#[test]
fn the_root_re_exports_are_traced_to_their_modules() {
    let lib = "pub use crate::a::b::{X, Y};\n#[cfg(x)]\npub use crate::c::Z;\nmod a;\npub mod c;";
    let exports = root_exports(lib);
    assert_eq!(exports["X"], "a");
    assert_eq!(exports["Y"], "a");
    assert_eq!(exports["Z"], "c");
    assert_eq!(declared_order(lib), ["a", "c"]);
}

#[test]
fn a_file_is_placed_at_its_module_path() {
    let src = Path::new("/s");
    let at = |file: &str| module_path(src, &src.join(file));
    assert_eq!(at("count/ledger/mod.rs"), ["count", "ledger"]);
    assert_eq!(at("summary.rs"), ["summary"]);
    assert!(at("lib.rs").is_empty());
}

/// This crate read as the crates it checks are: `code` is ground, `privacy` above it; an
/// upward import planted in a copy is found with its place, and so are a use through a root
/// re-export and a climb out of the module.
#[test]
fn a_planted_upward_import_is_named_with_its_place() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = graph(&src);
    assert!(graph.has("privacy", "code"), "{graph:?}");
    assert!(graph.against_the_order().is_empty());
    let planted = graph_with_planted(&src, "code.rs", "use crate::privacy::folders_below;");
    assert_eq!(
        planted.against_the_order(),
        ["code -> privacy (src/code.rs:1)"]
    );
    let planted = graph_with_planted(&src, "code.rs", "fn f() { super::wider_than_private }");
    assert_eq!(
        planted.against_the_order(),
        ["code -> privacy (src/code.rs:1)"]
    );
}

#[test]
fn the_privacy_reader_sees_every_visibility_and_skips_comments() {
    let text =
        "mod a;\npub(crate) mod b;\n// pub mod c;\n#[cfg(x)]\npub mod d;\npub(super) mod e;\n\
                mod tests {\n}\npub(crate) mod inline {\n}";
    let found: Vec<String> = wider_than_private("f", text)
        .into_iter()
        .map(|(_, v, n)| format!("{v} {n}"))
        .collect();
    assert_eq!(
        found,
        ["pub(crate) b", "pub d", "pub(super) e", "pub(crate) inline"]
    );
}

/// A tree of files written under the temporary directory, removed when dropped.
struct Tree(std::path::PathBuf);

impl Tree {
    fn new(name: &str, files: &[(&str, &str)]) -> Self {
        let root = std::env::temp_dir().join(format!("module-order-{name}-{}", std::process::id()));
        for (path, text) in files {
            let path = root.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        Self(root)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Unit-test files and the binary may use any module; every other file is held to the order.
#[test]
fn unit_test_files_and_the_binary_are_skipped_and_nothing_else() {
    let tree = Tree::new(
        "skipped",
        &[
            ("lib.rs", "mod low;\nmod high;\n"),
            ("low.rs", ""),
            ("high.rs", ""),
            ("low/tests.rs", "use crate::high::X;"),
            ("main.rs", "use crate::high::Y;"),
            ("low/inner.rs", "\nuse crate::high::Z;"),
        ],
    );
    let graph = graph(&tree.0);
    assert_eq!(
        graph.against_the_order(),
        ["low -> high (src/low/inner.rs:2)"]
    );
}

/// Every folder at any depth is found, with the file that declares its modules.
#[test]
fn the_folders_are_found_with_their_root_files() {
    let tree = Tree::new(
        "folders",
        &[
            ("a/mod.rs", ""),
            ("a/c/mod.rs", ""),
            ("b.rs", ""),
            ("b/d.rs", ""),
            ("e.rs", ""),
        ],
    );
    let mut found = Vec::new();
    folders_below(&tree.0, &mut found);
    let mut found: Vec<(String, String)> = found
        .into_iter()
        .map(|(name, root)| {
            (
                name,
                root.strip_prefix(&tree.0).unwrap().display().to_string(),
            )
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            ("a".to_owned(), "a/mod.rs".to_owned()),
            ("b".to_owned(), "b.rs".to_owned()),
            ("c".to_owned(), "a/c/mod.rs".to_owned()),
        ]
    );
}
