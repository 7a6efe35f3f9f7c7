//! The module-order check of faultline and of its reference service, written once.
//!
//! A crate's top-level modules form floors in the order its `src/lib.rs` declares them: a
//! module uses only modules declared before it, so the graph between them has no cycle.
//! [`graph`] reads that graph from the code, not from comments: every `crate::…` path (in
//! `use` declarations and in expressions, grouped imports included), every root re-export
//! traced to its module, and every `super::…` path that climbs out of its top-level module
//! is an edge. Comments, doc comments and string literals are skipped, so a doc link is not
//! a dependency; so are unit-test files (`tests.rs`, built for tests only, which may drive a
//! whole floor as an integration test does) and a binary's `main.rs` (which uses the library
//! by its name). [`Graph::against_the_order`] names each use that breaks the order with its
//! file and line.
//!
//! Each crate's `tests/module_order.rs` runs the check on its own `src` and adds what is its
//! own: which floors it expects, which edges must exist or must not.
//!
//! ```
//! let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
//! let graph = module_order::graph(&src);
//! assert_eq!(graph.modules[..2], ["code", "privacy"]);
//! assert!(graph.has("privacy", "code"));
//! assert!(graph.against_the_order().is_empty());
//! ```

mod code;
mod privacy;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

pub use crate::code::{code_only, first_segments};
pub use crate::privacy::{folders_below, wider_than_private};

/// One use of another top-level module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// The top-level module that uses.
    pub from: String,
    /// The top-level module used.
    pub to: String,
    /// The file of the use, relative to `src`.
    pub file: String,
    /// The line of the use, from 1.
    pub line: usize,
}

/// A crate's top-level modules in their declared order, and every edge between two of them.
#[derive(Debug)]
pub struct Graph {
    /// The top-level modules, in the order `src/lib.rs` declares them.
    pub modules: Vec<String>,
    /// Every use of one top-level module by another.
    pub edges: Vec<Edge>,
}

impl Graph {
    /// The edges that point at a module declared after the one using it, each as
    /// `from -> to (src/file:line)`.
    pub fn against_the_order(&self) -> Vec<String> {
        let rank = |name: &str| self.modules.iter().position(|m| m == name).unwrap();
        self.edges
            .iter()
            .filter(|e| rank(&e.to) > rank(&e.from))
            .map(|e| format!("{} -> {} (src/{}:{})", e.from, e.to, e.file, e.line))
            .collect()
    }

    /// Whether `from` uses `to` anywhere.
    pub fn has(&self, from: &str, to: &str) -> bool {
        self.edges.iter().any(|e| e.from == from && e.to == to)
    }

    /// The edges out of `from`.
    pub fn uses_of(&self, from: &str) -> Vec<&Edge> {
        self.edges.iter().filter(|e| e.from == from).collect()
    }
}

/// Reads the graph of the crate whose sources are under `src`. Panics on a file that belongs
/// to no declared module and on a `crate::` path that names neither a module nor a root
/// re-export, since either means the reader no longer understands the crate.
pub fn graph(src: &Path) -> Graph {
    let lib = fs::read_to_string(src.join("lib.rs")).unwrap();
    let (modules, exports) = (declared_order(&lib), root_exports(&lib));
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut edges = Vec::new();
    for file in files {
        let at = module_path(src, &file);
        let name = file.file_name().unwrap().to_string_lossy();
        let Some(from) = at
            .first()
            .filter(|_| name != "tests.rs" && name != "main.rs")
        else {
            continue;
        };
        assert!(
            modules.contains(from),
            "{} belongs to no module declared in src/lib.rs",
            file.display()
        );
        let code = code_only(&fs::read_to_string(&file).unwrap());
        let relative = file.strip_prefix(src).unwrap().display().to_string();
        for (to, line) in uses(&code, &at, &modules, &exports) {
            if &to != from {
                let (from, file) = (from.clone(), relative.clone());
                edges.push(Edge {
                    from,
                    to,
                    file,
                    line,
                });
            }
        }
    }
    Graph { modules, edges }
}

/// Every top-level module `code` uses, read from the code of a file at module path `at`: each
/// with the line it is used on. A name is a module before it is a root re-export.
pub fn uses(
    code: &str,
    at: &[String],
    modules: &[String],
    exports: &BTreeMap<String, String>,
) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for (number, line) in code.lines().enumerate() {
        for first in first_segments(line, at) {
            let module = if modules.contains(&first) {
                first
            } else {
                exports.get(&first).cloned().unwrap_or_else(|| {
                    panic!(
                        "line {} of {at:?} names `crate::{first}`, which is neither a \
                         top-level module nor a root re-export",
                        number + 1
                    )
                })
            };
            found.push((module, number + 1));
        }
    }
    found
}

/// The top-level modules of `lib`, in the order declared: `mod name;` lines, `pub` or not.
pub fn declared_order(lib: &str) -> Vec<String> {
    code_only(lib)
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let line = line.strip_prefix("pub ").unwrap_or(line);
            let name = line.strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.to_owned())
        })
        .collect()
}

/// The names `lib` re-exports at the root, each with the top-level module it comes from:
/// `pub use crate::module::…::{A, B};` statements.
pub fn root_exports(lib: &str) -> BTreeMap<String, String> {
    let mut exports = BTreeMap::new();
    for statement in code_only(lib).split(';') {
        let Some(at) = statement.find("pub use crate::") else {
            continue;
        };
        let path = &statement[at + "pub use crate::".len()..];
        let module: String = path.chars().take_while(|c| code::is_ident(*c)).collect();
        let names = match (path.find('{'), path.rfind("::")) {
            (Some(open), _) => path[open + 1..].trim_end_matches('}').to_owned(),
            (None, Some(at)) => path[at + 2..].to_owned(),
            (None, None) => continue,
        };
        for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            exports.insert(name.to_owned(), module.clone());
        }
    }
    exports
}

/// The module path of a source file below `src`: `src/count/ledger/mod.rs` is
/// `["count", "ledger"]`, `src/summary.rs` is `["summary"]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let mut path: Vec<String> = file
        .strip_prefix(src)
        .unwrap()
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let last = path.pop().unwrap();
    let stem = last.strip_suffix(".rs").unwrap();
    if stem != "mod" && stem != "lib" {
        path.push(stem.to_owned());
    }
    path
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// Copies the tree `from` to `to`, so that a test can plant an import in the copy.
pub fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            fs::copy(&path, &target).unwrap();
        }
    }
}

/// The graph of a copy of `src` in which `line` is put first in the file `file` (relative to
/// `src`): how a test shows that an import it plants is found.
pub fn graph_with_planted(src: &Path, file: &str, line: &str) -> Graph {
    let copy = std::env::temp_dir().join(format!(
        "module-order-{}-{}",
        std::process::id(),
        file.replace('/', "-")
    ));
    copy_tree(src, &copy);
    let planted = copy.join(file);
    let text = fs::read_to_string(&planted).unwrap();
    fs::write(&planted, format!("{line}\n{text}")).unwrap();
    let graph = graph(&copy);
    fs::remove_dir_all(&copy).unwrap();
    graph
}

#[cfg(test)]
mod tests;
