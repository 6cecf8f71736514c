//! The layers, enforced: a module of `src/` may name (`crate::x`, `use crate::{x, …}`) only
//! modules of a lower layer, never one of its own layer or above; so may a module of the web
//! crate (`web/src/`), in the web crate's own order. The front ends (`cli/`, `web/`, `python/`)
//! may use any layer of the library; a binary (`bin/`) any of its crate. ARCHITECTURE.md
//! ("Layers", and the web app's) explains the orders.
//!
//! And the crate boundary: the development tools (`dev/`, `torchtraceap-dev`, and their binary
//! `ttap-dev` in `dev-cli/`) sit above the library and beside the front ends. The library never
//! names them, nor do the web app's and the Python package's code, nor the user's `ttap`
//! (`cli/`); their tests may (a dev-dependency).

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
    // One split of each step's time; window features; what a trace holds; serving iterations.
    &["attribution", "features", "summary", "modules", "serving"],
    // A trace prepared for the rules and the views: steps, metrics, splits, memory.
    &["analysis"],
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
    // The door: a trace analyzed once, with the views the front ends show.
    &["analyzed"],
    // Native: files and folders analyzed as the CLI and the Python package show them.
    &["files"],
];

/// The web crate's layers, lowest first: what page and worker both use, the messages between
/// them, the worker, the page. Page and worker never name each other's modules, but the page
/// may start workers and post them messages (`js`, `protocol`).
const WEB_LAYERS: &[&[&str]] = &[
    // JavaScript glue; number formats; the timeline canvas's geometry.
    &["js", "format", "geometry"],
    // The versioned messages and typed errors between page and worker.
    &["protocol"],
    // Reading, ranges, the session, retraining, drawing.
    &["worker"],
    // The Yew UI.
    &["page"],
];

fn layer_of(layers: &[&[&str]], module: &str) -> usize {
    layers
        .iter()
        .position(|l| l.contains(&module))
        .unwrap_or_else(|| {
            panic!("module `{module}` has no layer: add it to the layers in tests/layers.rs and to ARCHITECTURE.md")
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

/// Every `.rs` file below `dir` (but `bin/` and `lib.rs`), with the top-level module it
/// belongs to.
fn crate_files(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let relative = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if path.is_dir() {
            if relative != "bin" {
                crate_files(root, &path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") && relative != "lib.rs" {
            let module = relative.split(['/', '.']).next().unwrap().to_string();
            out.push((module, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

/// Every edge from a module to a module of its own layer or above, as `a -> b`.
fn upward_edges(layers: &[&[&str]], files: &[(String, String)]) -> Vec<String> {
    let mut wrong = Vec::new();
    for (module, text) in files {
        for target in named_modules(text) {
            if &target != module && layer_of(layers, &target) >= layer_of(layers, module) {
                wrong.push(format!("{module} -> {target}"));
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    wrong
}

/// The upward or sideways edges between the modules of the crate whose sources are in `dir`
/// (below the workspace), after checking that it found at least `least` files.
fn crate_edges(dir: &str, layers: &[&[&str]], least: usize) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files = Vec::new();
    crate_files(&src, &src, &mut files);
    assert!(
        files.len() > least,
        "found only {} files in {dir}",
        files.len()
    );
    upward_edges(layers, &files)
}

fn assert_layered(dir: &str, wrong: &[String]) {
    assert!(
        wrong.is_empty(),
        "upward or sideways imports in {dir} (move the shared type down, or change the layers \
         in tests/layers.rs and ARCHITECTURE.md with a reason):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_library_module_reads_only_lower_layers() {
    assert_layered("src", &crate_edges("src", LAYERS, 40));
}

/// Page and worker apart: the worker never names the page, the page never the worker; what
/// both need lives below them.
#[test]
fn every_web_module_reads_only_lower_layers() {
    assert_layered("web/src", &crate_edges("web/src", WEB_LAYERS, 30));
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
        upward_edges(LAYERS, &files),
        vec!["features -> summary", "metrics -> detect"]
    );
}

#[test]
fn a_web_page_named_by_the_worker_is_caught() {
    let files = vec![
        (
            "worker".to_string(),
            "use crate::protocol::FileError;\nuse crate::page::format::bytes;".to_string(),
        ),
        (
            "page".to_string(),
            "use crate::{js::Started, worker::session::Kept};".to_string(),
        ),
        ("protocol".to_string(), "use crate::js;".to_string()),
    ];
    assert_eq!(upward_edges(WEB_LAYERS, &files), vec!["worker -> page"]);
}

#[test]
fn grouped_and_nested_imports_are_read() {
    let names = named_modules("use crate::{a::{b, c}, d, self, e::f as g};\nlet x = crate::h::i;");
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        vec!["a", "d", "e", "h"]
    );
}

/// The names a module's code (comments left out) reaches through `super::`: `super::a::b` and
/// `use super::{a, b::c}` name `a` and `b`.
fn super_names(code: &str) -> BTreeSet<String> {
    let code: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = BTreeSet::new();
    for (k, _) in code.match_indices("super::") {
        let rest = &code[k + "super::".len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                out.extend(group.split(',').filter_map(top_name));
            }
            None => out.extend(top_name(rest)),
        }
    }
    out
}

/// The circles among sibling modules (each with the code of its own file), as `a -> b -> a`.
fn sibling_circles(modules: &[(String, String)]) -> Vec<String> {
    let names: BTreeSet<&str> = modules.iter().map(|(m, _)| m.as_str()).collect();
    let edges: Vec<(&str, Vec<String>)> = modules
        .iter()
        .map(|(m, code)| {
            let to = super_names(code)
                .into_iter()
                .filter(|n| n != m && names.contains(n.as_str()))
                .collect();
            (m.as_str(), to)
        })
        .collect();
    let next = |m: &str| -> &[String] {
        edges
            .iter()
            .find(|(from, _)| *from == m)
            .map_or(&[], |(_, to)| to.as_slice())
    };
    let mut circles = BTreeSet::new();
    // Depth-first from each module, reporting a path that comes back to a module on it.
    fn walk<'a>(
        path: &mut Vec<&'a str>,
        next: &dyn Fn(&str) -> &'a [String],
        circles: &mut BTreeSet<String>,
    ) {
        let last = *path.last().expect("a path has a start");
        for to in next(last) {
            if let Some(k) = path.iter().position(|m| m == to) {
                let mut circle = path[k..].to_vec();
                circle.push(to);
                circles.insert(circle.join(" -> "));
            } else {
                path.push(to);
                walk(path, next, circles);
                path.pop();
            }
        }
    }
    for (m, _) in &edges {
        walk(&mut vec![m], &next, &mut circles);
    }
    circles.into_iter().collect()
}

/// Every folder below `dir` with its modules: each `.rs` file but `mod.rs`, `lib.rs` and
/// `main.rs`, and each subfolder with a `mod.rs`, with the code of that one file.
fn rooms(dir: &Path, out: &mut Vec<(String, Vec<(String, String)>)>) {
    let mut modules = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if let Ok(text) = std::fs::read_to_string(path.join("mod.rs")) {
                modules.push((name, code_of(&text).to_string()));
            }
            rooms(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && !["mod", "lib", "main"].contains(&name.as_str())
        {
            let text = std::fs::read_to_string(&path).unwrap();
            modules.push((name, code_of(&text).to_string()));
        }
    }
    out.push((dir.display().to_string(), modules));
}

/// Inside a room (`web/src/worker/`, `src/detect/`, …) the submodules that name each other
/// through `super::` never do so in a circle: one of them is below the other, as the rooms are.
#[test]
fn no_circle_between_the_submodules_of_a_room() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut wrong = Vec::new();
    for dir in ["src", "web/src", "cli/src", "dev/src", "dev-cli/src"] {
        let mut found = Vec::new();
        rooms(&root.join(dir), &mut found);
        assert!(
            found.len() > 1 || dir.ends_with("cli/src"),
            "no rooms in {dir}"
        );
        for (room, modules) in found {
            wrong.extend(
                sibling_circles(&modules)
                    .into_iter()
                    .map(|c| format!("{room}: {c}")),
            );
        }
    }
    assert!(
        wrong.is_empty(),
        "submodules of one room name each other in a circle (move what both need into a third, \
         below them):\n{}",
        wrong.join("\n")
    );
}

/// The names each submodule of a room takes from the module that lists it (`mod.rs`, `lib.rs`,
/// `main.rs`) through `super::`, rather than from a sibling: `room/file: name`.
fn names_from_the_parent(room: &str, modules: &[(String, String)]) -> Vec<String> {
    let siblings: BTreeSet<&str> = modules.iter().map(|(m, _)| m.as_str()).collect();
    modules
        .iter()
        .flat_map(|(m, code)| {
            super_names(code)
                .into_iter()
                .filter(|n| !siblings.contains(n.as_str()))
                .map(move |n| format!("{room}/{m}: {n}"))
        })
        .collect()
}

/// A room's parent only names its submodules and re-exports them: the detectors take their
/// contract from `detect/contract.rs`, the page its helpers from `js`, never from the module
/// that lists them, so that the list and what it lists are never a circle. Checked in the rooms
/// issue 37 named: `src/detect`, `web/src`, `cli/src`.
#[test]
fn no_module_imports_from_the_module_that_lists_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut wrong = Vec::new();
    for dir in ["src/detect", "web/src", "cli/src"] {
        let mut found = Vec::new();
        rooms(&root.join(dir), &mut found);
        for (room, modules) in found {
            wrong.extend(names_from_the_parent(&room, &modules));
        }
    }
    assert!(
        wrong.is_empty(),
        "a submodule takes an item from the module that lists it (move the item into a \
         sibling both use, and re-export it from the parent):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn a_planted_import_from_the_parent_is_caught() {
    let modules = vec![
        (
            "dataloader".to_string(),
            "use super::contract::{judge, Gate};\nuse super::{pct, utilization::SHORT_US};"
                .to_string(),
        ),
        (
            "contract".to_string(),
            "use crate::analysis::Analysis;".to_string(),
        ),
        (
            "utilization".to_string(),
            "use super::contract::Gate;".to_string(),
        ),
    ];
    assert_eq!(
        names_from_the_parent("detect", &modules),
        ["detect/dataloader: pct"]
    );
}

#[test]
fn a_planted_circle_between_submodules_is_caught() {
    let modules = vec![
        (
            "session".to_string(),
            "use super::{draw::Timeline, frames::Frames};".to_string(),
        ),
        (
            "draw".to_string(),
            "// super::session is only a comment here\nuse super::frames;".to_string(),
        ),
        (
            "frames".to_string(),
            "fn f(s: &super::session::Kept) {}".to_string(),
        ),
    ];
    assert_eq!(
        sibling_circles(&modules),
        [
            "draw -> frames -> session -> draw",
            "frames -> session -> draw -> frames",
            "frames -> session -> frames",
            "session -> draw -> frames -> session",
            "session -> frames -> session",
        ]
    );
    assert!(sibling_circles(&modules[1..2]).is_empty());
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

/// The user's binary (`ttap`, `cli/`) is thin: its package links the library, never the
/// development crate (the generator, training, evaluations), which only the developers' `ttap-dev`
/// (`dev-cli/`) and tests link. What `ttap` depends on besides: the library, which names no
/// development crate either (above).
#[test]
fn the_users_binary_never_links_the_development_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut wrong = Vec::new();
    if depends_on_dev(&std::fs::read_to_string(root.join("cli/Cargo.toml")).unwrap()) {
        wrong.push("cli/Cargo.toml".to_string());
    }
    let mut files = Vec::new();
    rust_files(&root.join("cli/src"), &mut files);
    assert!(
        files.len() > 5,
        "found only {} files in cli/src",
        files.len()
    );
    wrong.extend(
        files
            .into_iter()
            .filter(|(_, text)| text.contains("torchtraceap_dev"))
            .map(|(path, _)| path),
    );
    assert!(
        wrong.is_empty(),
        "`ttap` links the development crate; a developers' command belongs in `ttap-dev` \
         (dev-cli/), a helper both binaries need in cli/src/lib.rs:\n{}",
        wrong.join("\n")
    );
}

/// The calls that run the analysis stages: only the analyzed trace (`src/analyzed.rs`) makes
/// them, so that every front end shows the same analysis, made once.
const STAGE_RUNS: &[&str] = &["detect::run", "Report::new", "Analysis::new"];

/// The stage runs `code` makes itself (a name preceded by a letter, as in `SharedReport::new`,
/// is another).
fn stage_runs(code: &str) -> Vec<&'static str> {
    STAGE_RUNS
        .iter()
        .copied()
        .filter(|run| {
            code.match_indices(run).any(|(k, _)| {
                !code[..k]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
        })
        .collect()
}

/// One door: the front ends (`ttap`, `ttap-dev`, the web app, the Python module) and the
/// development tools analyze a trace through `AnalyzedTrace`, never by running the stages
/// themselves (their tests may).
#[test]
fn front_ends_analyze_through_the_analyzed_trace() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut wrong = Vec::new();
    for dir in ["cli/src", "dev-cli/src", "web/src", "python/src", "dev/src"] {
        let mut files = Vec::new();
        rust_files(&root.join(dir), &mut files);
        assert!(!files.is_empty(), "no Rust files in {dir}");
        for (path, text) in files {
            for run in stage_runs(code_of(&text)) {
                wrong.push(format!("{path}: {run}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "a front end runs an analysis stage itself; make an `AnalyzedTrace` and ask it (add the \
         view it lacks to src/analyzed.rs):\n{}",
        wrong.join("\n")
    );
}

/// The user's front ends (`ttap`, the web app, the Python module) use what the library's face
/// re-exports and the public view modules; `torchtraceap::internals` (the private stages) is the
/// development tools' and the tests' only.
#[test]
fn user_front_ends_never_reach_the_internals() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut wrong = Vec::new();
    for dir in ["cli/src", "web/src", "python/src"] {
        let mut files = Vec::new();
        rust_files(&root.join(dir), &mut files);
        assert!(!files.is_empty(), "no Rust files in {dir}");
        wrong.extend(
            files
                .into_iter()
                .filter(|(_, text)| code_of(text).contains("torchtraceap::internals"))
                .map(|(path, _)| path),
        );
    }
    assert!(
        wrong.is_empty(),
        "a user front end names `torchtraceap::internals`; re-export what it shows in src/lib.rs \
         or ask `AnalyzedTrace` for it:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn a_planted_stage_run_is_caught() {
    let code = "let a = Analysis::new(&t);\nlet r = report::Report::new(&a, &detect::run(&a));";
    assert_eq!(stage_runs(code), STAGE_RUNS);
    assert!(stage_runs("let s = SharedReport::new(r, fp);").is_empty());
    assert!(stage_runs("let a = AnalyzedTrace::new(&ingested);").is_empty());
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
