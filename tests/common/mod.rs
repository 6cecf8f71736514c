//! Helpers shared by the integration tests that read the real traces.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The workspace's root (the folder holding `Cargo.lock`): these helpers serve the library's
/// tests (`tests/`) and the CLI's (`cli/tests/`).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .expect("the tests run inside the workspace, below its Cargo.lock")
        .to_path_buf()
}

/// `$TTAP_SHARED_TRACES`, else `../shared/traces` beside the workspace; `None` where it is absent,
/// after saying loudly that `test` did not run. The line goes straight to the process's stderr:
/// the test harness captures `eprintln!` of passing tests, not that, so it shows in every
/// `cargo test` run. With `TTAP_REQUIRE_SHARED_TRACES` set, a missing folder fails the test.
pub fn shared_traces(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("TTAP_SHARED_TRACES")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("../shared/traces"));
    if dir.is_dir() {
        return Some(dir);
    }
    let why = format!(
        "{test}: {} is absent (set TTAP_SHARED_TRACES, or put the shared traces there)",
        dir.display()
    );
    assert!(
        std::env::var_os("TTAP_REQUIRE_SHARED_TRACES").is_none(),
        "TTAP_REQUIRE_SHARED_TRACES is set and {why}"
    );
    let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
    None
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
