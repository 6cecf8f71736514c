//! Helpers shared by the integration tests that read the real traces.

use std::path::{Path, PathBuf};

/// `$TTAP_SHARED_TRACES`, else `../shared/traces` beside the crate; `None` where it is absent.
pub fn shared_traces() -> Option<PathBuf> {
    let dir = std::env::var_os("TTAP_SHARED_TRACES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/traces"));
    dir.is_dir().then_some(dir)
}

/// The `.json` and `.gz` files one folder below `dir`, sorted.
pub fn trace_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for sub in std::fs::read_dir(dir).unwrap().flatten() {
        if sub.path().is_dir() {
            for f in std::fs::read_dir(sub.path()).unwrap().flatten() {
                let p = f.path();
                let name = p.file_name().unwrap().to_string_lossy().to_string();
                if name.ends_with(".json") || name.ends_with(".gz") {
                    files.push(p);
                }
            }
        }
    }
    files.sort();
    files
}
