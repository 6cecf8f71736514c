//! The library's layers, enforced: a module of `src/` may name (`crate::x`, `use crate::{x, …}`)
//! only modules of a lower layer, never one of its own layer or above. The front ends
//! (`cli/`, `web/`, `python/`) may use any layer. ARCHITECTURE.md ("Layers") explains the order.
//!
//! And the crate boundary: the development tools (`dev/`, `torchtraceap-dev`) sit above the
//! library and beside the front ends. The library never names them, nor do the web app's and the
//! Python package's code; their tests may (a dev-dependency).

use std::collections::BTreeSet;
use std::path::Path;

/// The layers, lowest first. A module may depend on modules of lower layers only.
const LAYERS: &[&[&str]] = &[
    // The normalized trace: what everything reads.
    &["model"],
    // Bytes to the model.
    &["ingest"],
    // Steps and their windows; the allocator's memory over time.
    &["window", "memory"],
    // Numbers about a time range; CUDA/HIP graph launches and their kernels.
    &["metrics", "roofline", "graphs"],
    // One split of each step's time; window features; what a trace holds.
    &["attribution", "features", "summary", "modules"],
    // The rules.
    &["detect"],
    // The window detector (trained on generated scenarios by `dev/`, compared with the rules).
    &["ml"],
    // The versioned report of rules and model.
    &["report"],
    // What is made from a report: links, LLM requests, the timeline's bands, Perfetto exports.
    &["share", "llm", "timeline", "profile", "perfetto"],
    // What is made from profiles: a before/after comparison, a multi-rank run view; and what
    // is read from many reports' summaries: a fleet report.
    &["compare", "run", "fleet"],
    // Comparisons and run views as links.
    &["view_link"],
    // Native: files and folders analyzed as the CLI and the Python package show them.
    &["files"],
];

fn layer_of(module: &str) -> usize {
    LAYERS
        .iter()
        .position(|l| l.contains(&module))
        .unwrap_or_else(|| {
            panic!("module `{module}` has no layer: add it to LAYERS and to ARCHITECTURE.md")
        })
}

/// The top-level modules a source text names through `crate::`.
fn named_modules(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (k, _) in text.match_indices("crate::") {
        let rest = &text[k + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `use crate::{a::b, c, d::{e, f}}`: the names at the group's top level.
            let mut depth = 0;
            let mut item = String::new();
            for ch in group.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.extend(top_name(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 {
                    item.push(ch);
                }
            }
            out.extend(top_name(&item));
        } else {
            out.extend(top_name(rest));
        }
    }
    out
}

fn top_name(path: &str) -> Option<String> {
    let name: String = path
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty() && name != "self").then_some(name)
}

/// Every `.rs` file below `dir`, with the top-level module it belongs to.
fn library_files(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let relative = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if path.is_dir() {
            library_files(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") && relative != "lib.rs" {
            let module = relative.split(['/', '.']).next().unwrap().to_string();
            out.push((module, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

/// Every edge from a module to a module of its own layer or above, as `file: a -> b`.
fn upward_edges(files: &[(String, String)]) -> Vec<String> {
    let mut wrong = Vec::new();
    for (module, text) in files {
        for target in named_modules(text) {
            if &target != module && layer_of(&target) >= layer_of(module) {
                wrong.push(format!("{module} -> {target}"));
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    wrong
}

#[test]
fn every_library_module_reads_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    library_files(&src, &src, &mut files);
    assert!(files.len() > 40, "found only {} library files", files.len());
    let wrong = upward_edges(&files);
    assert!(
        wrong.is_empty(),
        "upward or sideways imports (move the shared type down, or change the layers in \
         tests/layers.rs and ARCHITECTURE.md with a reason):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn a_planted_upward_import_is_caught() {
    let files = vec![
        (
            "metrics".to_string(),
            "use crate::model::Trace;\nuse crate::{window::Phase, detect::Finding};".to_string(),
        ),
        (
            "ml".to_string(),
            "let c = crate::features::NAMES.len();".to_string(),
        ),
        (
            "features".to_string(),
            "fn f(s: &crate::summary::Summary) {}".to_string(),
        ),
    ];
    assert_eq!(
        upward_edges(&files),
        vec!["features -> summary", "metrics -> detect"]
    );
}

#[test]
fn grouped_and_nested_imports_are_read() {
    let names = named_modules("use crate::{a::{b, c}, d, self, e::f as g};\nlet x = crate::h::i;");
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        vec!["a", "d", "e", "h"]
    );
}

/// The text of `file` before its first `#[cfg(test)]`: its code, where tests come last.
fn code_of(text: &str) -> &str {
    text.split("#[cfg(test)]").next().unwrap_or(text)
}

/// Whether a manifest depends on the development crate outside `[dev-dependencies]`.
fn depends_on_dev(manifest: &str) -> bool {
    let mut section = "";
    manifest.lines().map(str::trim).any(|line| {
        if line.starts_with('[') {
            section = line;
        }
        line.starts_with("torchtraceap-dev") && section != "[dev-dependencies]"
    })
}

/// Every `.rs` file below `dir`, with its path.
fn rust_files(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((path.display().to_string(), text));
        }
    }
}

#[test]
fn the_library_and_the_apps_code_never_name_the_development_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut wrong = Vec::new();
    for (dir, tests_may) in [("src", false), ("web/src", true), ("python/src", true)] {
        let mut files = Vec::new();
        rust_files(&root.join(dir), &mut files);
        assert!(!files.is_empty(), "no Rust files in {dir}");
        for (path, text) in files {
            let code = if tests_may { code_of(&text) } else { &text };
            if code.contains("torchtraceap_dev") {
                wrong.push(path);
            }
        }
    }
    for manifest in ["Cargo.toml", "web/Cargo.toml", "python/Cargo.toml"] {
        if depends_on_dev(&std::fs::read_to_string(root.join(manifest)).unwrap()) {
            wrong.push(manifest.to_string());
        }
    }
    assert!(
        wrong.is_empty(),
        "the development crate (generator, training, evaluations) is named where the library \
         or an app's code is; move what they need into the library, or the code into dev/:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn a_planted_use_of_the_development_crate_is_caught() {
    let code = "use torchtraceap_dev::synth;\n#[cfg(test)]\nmod tests {}";
    assert!(code_of(code).contains("torchtraceap_dev"));
    let test =
        "use torchtraceap::report;\n#[cfg(test)]\nmod tests { use torchtraceap_dev::synth; }";
    assert!(!code_of(test).contains("torchtraceap_dev"));
    assert!(depends_on_dev(
        "[dependencies]\ntorchtraceap-dev = { path = \"../dev\" }\n[dev-dependencies]\n"
    ));
    assert!(depends_on_dev(
        "[target.'cfg(unix)'.dependencies]\ntorchtraceap-dev = { path = \"dev\" }\n"
    ));
    assert!(!depends_on_dev(
        "[dependencies]\nserde = \"1\"\n[dev-dependencies]\ntorchtraceap-dev = { path = \"dev\" }\n"
    ));
}
