//! Directory listing shared by every loader.

use std::path::PathBuf;

/// Subfolders of `dir`, sorted by name so the order (and so which tool wins a clash) is stable.
pub fn sorted_subdirs(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect(),
        Err(_) => Vec::new(),
    };
    out.sort();
    out
}

/// The `*.md` files of `dir` (not folders), sorted by name; a missing folder has none (role
/// files, a plugin's slash commands).
pub fn sorted_md_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md") && !p.is_dir())
            .collect(),
        Err(_) => Vec::new(),
    };
    out.sort();
    out
}
