//! Tidy checks that run with the tests: ARCHITECTURE.md names every source file (Rust, and the
//! end-to-end tests' JavaScript), so the map
//! cannot drift from the code.

use std::path::Path;

fn source_files(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            source_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs" || e == "mjs") {
            out.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
}

#[test]
fn architecture_md_names_every_source_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let mut files = Vec::new();
    for dir in ["src", "tests", "web/src", "web/tests", "e2e"] {
        source_files(&root.join(dir), &mut files);
    }
    let missing: Vec<&String> = files
        .iter()
        .filter(|f| *f != "lib.rs" && !doc.contains(f.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md does not mention: {missing:?}"
    );
}
