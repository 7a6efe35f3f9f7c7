//! Whether a folder's modules are private, so that it shows the rest of the crate only what
//! its root file re-exports.

use std::fs;
use std::path::{Path, PathBuf};

use crate::code::code_only;

/// The `mod` declarations in `text` (the root file of `folder`) that are more than private,
/// each as `(folder, visibility, name)`.
pub fn wider_than_private(folder: &str, text: &str) -> Vec<(String, String, String)> {
    code_only(text)
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let (visibility, rest) = line.split_once(" mod ")?;
            // `mod name;`, or an inline `mod name {`.
            let name = rest.strip_suffix(';').or_else(|| rest.strip_suffix(" {"))?;
            Some((folder.to_owned(), visibility.to_owned(), name.to_owned()))
        })
        .collect()
}

/// The folders under `dir`, at any depth, each with the file that declares its modules:
/// its `mod.rs`, or the `name.rs` beside a folder `name/`.
pub fn folders_below(dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.is_dir() {
            continue;
        }
        let root = [path.join("mod.rs"), path.with_extension("rs")]
            .into_iter()
            .find(|file| file.is_file())
            .unwrap_or_else(|| panic!("{} has no mod.rs and no .rs beside it", path.display()));
        out.push((
            path.file_name().unwrap().to_string_lossy().into_owned(),
            root,
        ));
        folders_below(&path, out);
    }
}
