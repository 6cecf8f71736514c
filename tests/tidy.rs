//! Tidy checks that run with the tests: ARCHITECTURE.md names every source file (Rust, the
//! end-to-end tests' JavaScript, the Python package's Python, the scripts, the fuzz targets) by its path, and every path it names is there, so the map
//! cannot drift from the code; and it stays short enough to read first (21,000 bytes).

use std::path::Path;

/// The source files under `dir`, as paths from the repository's root.
fn source_files(root: &Path, dir: &str, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let script = dir.starts_with("python/") || dir.starts_with("scripts");
        let script = script && (name.ends_with(".py") || name.ends_with(".sh"));
        if path.is_dir() && name != "__pycache__" {
            source_files(root, &format!("{dir}/{name}"), out);
        } else if script || path.extension().is_some_and(|e| e == "rs" || e == "mjs") {
            out.push(format!("{dir}/{name}"));
        }
    }
}

/// The Markdown's sections, each from its heading to the next: the folder it is about (a
/// backticked path ending in `/` in its heading, or in the heading of a section it is part of)
/// and every backticked text in it, its heading included.
fn sections(doc: &str) -> Vec<(Option<String>, Vec<String>)> {
    let level = |line: &str| {
        let hashes = line.len() - line.trim_start_matches('#').len();
        (hashes > 0 && line[hashes..].starts_with(' ')).then_some(hashes)
    };
    // The headings that enclose the current line, with their folders.
    let mut enclosing: Vec<(usize, Option<String>)> = Vec::new();
    let mut out: Vec<(Option<String>, Vec<String>)> = vec![(None, Vec::new())];
    for line in doc.lines() {
        if let Some(depth) = level(line) {
            enclosing.retain(|(d, _)| *d < depth);
            let own = quoted(line).into_iter().find(|q| q.ends_with('/'));
            let folder = own.or_else(|| enclosing.iter().rev().find_map(|(_, f)| f.clone()));
            enclosing.push((depth, folder.clone()));
            out.push((folder, Vec::new()));
        }
        out.last_mut().expect("a section").1.extend(quoted(line));
    }
    out
}

/// The backticked texts of `text`.
fn quoted(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Whether `path` is named: backticked whole anywhere, or from a section about its folder.
fn named(doc: &str, sections: &[(Option<String>, Vec<String>)], path: &str) -> bool {
    doc.contains(&format!("`{path}`"))
        || sections.iter().any(|(folder, quoted)| {
            folder.as_ref().is_some_and(|folder| {
                path.strip_prefix(folder.as_str())
                    .is_some_and(|rest| quoted.iter().any(|q| q == rest))
            })
        })
}

#[test]
fn architecture_md_names_every_source_file_by_its_path() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let sections = sections(&doc);
    let mut files = Vec::new();
    for dir in [
        "src",
        "tests",
        "dev/src",
        "cli/src",
        "cli/tests",
        "dev-cli/src",
        "dev-cli/tests",
        "web/src",
        "web/tests",
        "e2e",
        "python/src",
        "python/torchtraceap",
        "python/tests",
        "scripts",
        "fuzz/fuzz_targets",
    ] {
        source_files(root, dir, &mut files);
    }
    let missing: Vec<&String> = files
        .iter()
        .filter(|f| !named(&doc, &sections, f))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md does not name (by its path, or in the section about its folder): {missing:?}"
    );
}

#[test]
fn every_source_path_architecture_md_names_is_there() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let stale: Vec<String> = sections(&doc)
        .into_iter()
        .flat_map(|(folder, quoted)| {
            quoted
                .into_iter()
                .filter(|q| {
                    q.contains('/')
                        && (q.ends_with(".rs") || q.ends_with(".mjs") || q.ends_with(".py"))
                })
                .filter(move |q| {
                    !root.join(q).is_file()
                        && !folder
                            .as_ref()
                            .is_some_and(|f| root.join(f).join(q).is_file())
                })
        })
        .collect();
    assert!(
        stale.is_empty(),
        "ARCHITECTURE.md names files that are not there: {stale:?}"
    );
}

/// The map is read first, in one sitting: details belong in the modules' own docs. (20,000
/// until the scripts and the fuzz targets joined the map.)
const ARCHITECTURE_MAX_BYTES: usize = 21_000;

#[test]
fn architecture_md_fits_in_one_read() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(root.join("ARCHITECTURE.md")).unwrap().len();
    assert!(
        bytes <= ARCHITECTURE_MAX_BYTES,
        "ARCHITECTURE.md is {bytes} bytes, over {ARCHITECTURE_MAX_BYTES}: move details into the \
         modules' `//!` docs and keep one short row per file"
    );
}

/// A file's `//!` header says what the file holds and why it is one piece, never how long it is:
/// a line count is stale by the next commit.
#[test]
fn no_file_header_states_a_line_count() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        "src",
        "tests",
        "cli/src",
        "cli/tests",
        "dev/src",
        "dev-cli/src",
        "dev-cli/tests",
        "web/src",
        "web/tests",
        "python/src",
    ] {
        source_files(root, dir, &mut files);
    }
    let counted: Vec<String> = files
        .iter()
        .filter(|f| f.ends_with(".rs"))
        .flat_map(|f| {
            let text = std::fs::read_to_string(root.join(f)).unwrap();
            text.lines()
                .filter(|l| l.trim_start().starts_with("//!"))
                .filter(|l| {
                    let words: Vec<&str> = l.split_whitespace().collect();
                    words.windows(2).any(|w| {
                        w[1].trim_end_matches(|c: char| !c.is_alphabetic()) == "lines"
                            && w[0].trim_start_matches('(').parse::<u64>().is_ok()
                    })
                })
                .map(|l| format!("{f}: {}", l.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        counted.is_empty(),
        "file headers state line counts (say why the file is one piece instead): {counted:#?}"
    );
}
