//! Before/after comparison (`compare`, `ttap compare`): on HTA's real pairs (`trace_diff`
//! control/test, `trace_compare` base/test) the GPU work reported as added, removed and changed
//! agrees with an independent oracle (`tests/oracle/compare_kernels.py`: Python's stock json and
//! regular expressions); on generated traces the step-time change is judged against the spread
//! and findings are fixed or new; the CLI's formats and its regression gate.

#[path = "../../tests/common/mod.rs"]
mod common;
#[path = "../../tests/common/oracle.rs"]
mod oracle;
mod profiles;
mod synth;
mod ttap;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use profiles::profile_of_bytes;
use torchtraceap::compare::{render, Comparison, NameChange};
use torchtraceap::profile::Profile;
use torchtraceap_dev::synth::{generate, AntiPattern, DataParallel, Injection};
use ttap::ttap;

const HTA: &str = "facebookresearch__HolisticTraceAnalysis";

fn profile_of(path: &Path) -> Profile {
    profile_of_bytes(
        &path.display().to_string(),
        &std::fs::read(path).expect("readable"),
    )
}

/// The pair's files among the shared traces, or `None` (and a loud message) without them.
fn pair(before: &str, after: &str) -> Option<(PathBuf, PathBuf)> {
    let dir = common::shared_traces("the real-pair comparison checks")?;
    let files = common::trace_files(&dir);
    let find = |name: &str| {
        files
            .iter()
            .find(|f| f.ends_with(Path::new(HTA).join(name)))
            .unwrap_or_else(|| panic!("{HTA}/{name} is missing from the shared traces"))
            .clone()
    };
    Some((find(before), find(after)))
}

/// `[before_count, before_ms_per_step, after_count, after_ms_per_step]` by normalized name.
type Expected = BTreeMap<String, (u64, f64, u64, f64)>;

fn oracle(before: &Path, after: &Path) -> Expected {
    let out = oracle::run("compare_kernels.py", &[before, after]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("oracle JSON");
    v["names"]
        .as_object()
        .expect("names")
        .iter()
        .map(|(k, x)| {
            let f = |i: usize| x[i].as_f64().expect("a number");
            (k.clone(), (f(0) as u64, f(1), f(2) as u64, f(3)))
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

/// Every added, removed and changed name, its counts and its time per step, as the oracle says.
fn check_against_oracle(before: &Path, after: &Path) -> Comparison {
    let expected = oracle(before, after);
    let c = Comparison::new(&profile_of(before), &profile_of(after));
    let names = |list: &[NameChange]| -> Vec<String> {
        let mut v: Vec<String> = list.iter().map(|n| n.name.clone()).collect();
        v.sort();
        v
    };
    let expect = |keep: fn(&(u64, f64, u64, f64)) -> bool| -> Vec<String> {
        expected
            .iter()
            .filter(|(_, v)| keep(v))
            .map(|(k, _)| k.clone())
            .collect()
    };
    assert_eq!(names(&c.gpu_work.added), expect(|v| v.0 == 0), "added");
    assert_eq!(names(&c.gpu_work.removed), expect(|v| v.2 == 0), "removed");
    assert_eq!(
        names(&c.gpu_work.changed),
        expect(|v| v.0 > 0 && v.2 > 0),
        "on both sides"
    );
    let all = c
        .gpu_work
        .changed
        .iter()
        .chain(&c.gpu_work.added)
        .chain(&c.gpu_work.removed);
    for n in all {
        let e = expected[&n.name];
        assert_eq!((n.before_count, n.after_count), (e.0, e.2), "{}", n.name);
        assert!(
            close(n.before_ms_per_step, e.1) && close(n.after_ms_per_step, e.3),
            "{}: {} → {} ms per step, the oracle says {} → {}",
            n.name,
            n.before_ms_per_step,
            n.after_ms_per_step,
            e.1,
            e.3
        );
    }
    // The changed list is ranked by the absolute change, as the oracle's figures rank it.
    let mut ranked: Vec<(f64, &String)> = expected
        .iter()
        .filter(|(_, v)| v.0 > 0 && v.2 > 0)
        .map(|(k, v)| ((v.3 - v.1).abs(), k))
        .collect();
    ranked.sort_by(|x, y| y.0.total_cmp(&x.0).then_with(|| x.1.cmp(y.1)));
    let top: Vec<&String> = c.gpu_work.changed.iter().take(5).map(|n| &n.name).collect();
    let oracle_top: Vec<&String> = ranked.iter().take(5).map(|x| x.1).collect();
    assert_eq!(top, oracle_top, "the five largest changes");
    c
}

#[test]
fn hta_trace_diff_pair_agrees_with_the_raw_events() {
    let Some((before, after)) = pair(
        "tests__data__trace_diff__control__control.json.gz",
        "tests__data__trace_diff__test__test.json.gz",
    ) else {
        return;
    };
    let c = check_against_oracle(&before, &after);
    // A100 ×8 (rank 3) against V100 ×2 (rank 1): the V100 runs its own SGEMMs, the A100's
    // CUTLASS and Ampere kernels are gone, and the step is slower beyond its spread.
    assert!(c
        .gpu_work
        .added
        .iter()
        .any(|n| n.name.starts_with("volta_")));
    assert!(c
        .gpu_work
        .removed
        .iter()
        .any(|n| n.name.starts_with("ampere_")));
    assert_eq!(c.step_ms.significant, Some(true));
    assert!(c.step_ms.delta_pct > 20.0, "{}", c.verdict);
    assert!(c.verdict.starts_with("step time +"), "{}", c.verdict);
    println!("{}", c.verdict);
}

#[test]
fn hta_trace_compare_pair_agrees_with_the_raw_events() {
    let Some((before, after)) = pair(
        "tests__data__trace_compare__base__base.json.gz",
        "tests__data__trace_compare__test__test.json.gz",
    ) else {
        return;
    };
    let c = check_against_oracle(&before, &after);
    // The test trace launches one integer add fewer, and records three more CPU operators.
    let add = c
        .gpu_work
        .changed
        .iter()
        .find(|n| n.name.contains("CUDAFunctor_add<int>"))
        .expect("the integer add on both sides");
    assert_eq!((add.before_count, add.after_count), (3, 2));
    assert_eq!(c.gpu_work.changed[0].name, add.name, "the largest change");
    // The test trace's last step launches nothing (warm-up by the window rule): step 1009 is
    // matched with step 1009 only, and they last the same.
    assert_eq!((c.step_ms.before.n, c.step_ms.after.n), (1, 1));
    assert_eq!(
        (c.pairs[0].before_step, c.pairs[0].after_step),
        (1009, 1009)
    );
    assert_eq!(c.step_ms.delta_ms, 0.0);
    assert_eq!(c.step_ms.significant, None, "one step a side: no spread");
    let mut added: Vec<&str> = c.cpu_ops.added.iter().map(|n| n.name.as_str()).collect();
    added.sort();
    assert_eq!(
        added,
        ["AddmmBackward0", "All2All_Pooled_Req", "CatBackward0"]
    );
    println!("{}", c.verdict);
}

fn synth(seed: u64, injections: Vec<Injection>) -> Profile {
    let trace = generate(&profiles::resnet50(seed, injections, false)).trace;
    profile_of_bytes(&format!("seed {seed}"), trace.as_bytes())
}

fn every_step(pattern: AntiPattern) -> Vec<Injection> {
    (1..8)
        .map(|step| Injection {
            pattern,
            step,
            severity: 0.8,
        })
        .collect()
}

#[test]
fn the_same_run_twice_is_no_significant_change_and_an_injected_stall_is() {
    let (a, b) = (synth(1, Vec::new()), synth(2, Vec::new()));
    let same = Comparison::new(&a, &b);
    println!("same configuration, another seed: {}", same.verdict);
    assert_eq!(same.step_ms.significant, Some(false), "{}", same.verdict);
    assert!(
        same.verdict
            .starts_with("no significant change in step time"),
        "{}",
        same.verdict
    );
    assert_eq!(same.regression_pct(), None);

    let slow = synth(2, every_step(AntiPattern::DataLoader));
    let worse = Comparison::new(&a, &slow);
    println!("DataLoader stall in every step: {}", worse.verdict);
    assert_eq!(worse.step_ms.significant, Some(true), "{}", worse.verdict);
    assert!(worse.regression_pct().is_some_and(|p| p > 5.0));
    assert!(
        worse
            .findings
            .new
            .iter()
            .any(|f| f.id == "dataloader-bottleneck"),
        "{}",
        worse.verdict
    );
    let better = Comparison::new(&slow, &a);
    assert!(
        better.verdict.contains("fixed: dataloader-bottleneck"),
        "{}",
        better.verdict
    );
    assert_eq!(better.regression_pct(), None);
    let idle = |c: &Comparison| {
        c.split
            .iter()
            .find(|p| p.part == "idle_data_loading")
            .map_or((0.0, 0.0), |p| (p.before_ms, p.after_ms))
    };
    let (before, after) = idle(&worse);
    assert!(
        after > before + 1.0,
        "{before} → {after} ms idle in data loading"
    );
}

#[test]
fn ttap_compare_prints_every_format_and_gates_regressions() {
    let Some((before, after)) = pair(
        "tests__data__trace_diff__control__control.json.gz",
        "tests__data__trace_diff__test__test.json.gz",
    ) else {
        return;
    };
    let (b, a) = (before.to_str().unwrap(), after.to_str().unwrap());
    let (code, text) = ttap(&["compare", b, a]);
    assert_eq!(code, 0);
    println!("{text}");
    assert!(text.starts_with("Verdict: step time +"), "{text}");
    assert!(text.contains("removed (only before)") && text.contains("volta_sgemm"));

    let (code, md) = ttap(&["compare", b, a, "--format", "md"]);
    assert_eq!(code, 0);
    assert!(md.contains("| part | before | after | change |"), "{md}");

    let (code, json) = ttap(&["compare", b, a, "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["step_ms"]["significant"], true);

    // The batch size read from the first linear layer's input, unless given.
    assert_eq!(v["before"]["batch"]["size"], 1024);
    assert_eq!(
        v["before"]["batch"]["source"],
        "aten::linear input [1024, 1705]"
    );
    let (_, json) = ttap(&[
        "compare",
        b,
        a,
        "--format",
        "json",
        "--batch-size-before",
        "512",
        "--batch-size-after",
        "1024",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["before"]["batch"]["source"], "given");
    let (before_rate, after_rate) = (
        v["samples_per_s"]["before"].as_f64().unwrap(),
        v["samples_per_s"]["after"].as_f64().unwrap(),
    );
    let steps = |side: &str| v["steps_per_s"][side].as_f64().unwrap();
    assert!((before_rate - 512.0 * steps("before")).abs() < 1e-6);
    assert!((after_rate - 1024.0 * steps("after")).abs() < 1e-6);
    // Twice the batch at 62 % of the step rate: more samples per second, no regression.
    assert_eq!(
        ttap(&[
            "compare",
            b,
            a,
            "--batch-size-before",
            "512",
            "--batch-size-after",
            "1024",
            "--fail-on-regression",
            "10"
        ])
        .0,
        0
    );
    // The V100 is slower: a gate at 10 % fails, at 90 % passes; the other way round is faster.
    assert_eq!(ttap(&["compare", b, a, "--fail-on-regression", "10"]).0, 1);
    assert_eq!(ttap(&["compare", b, a, "--fail-on-regression", "90"]).0, 0);
    assert_eq!(ttap(&["compare", a, b, "--fail-on-regression", "10"]).0, 0);
    assert_eq!(ttap(&["compare", b, "/nonexistent.json"]).0, 2);
}

/// Names written to break out of a Markdown table or a terminal line.
const HOSTILE: &[&str] = &[
    "<script>alert(1)</script>",
    "a | b | c",
    "[x](javascript:alert(1))",
    "line\n\n## heading",
    "`` ticks ```",
    "\u{1b}[31mred\u{202e}evil",
];

#[test]
fn hostile_names_stay_text_in_the_markdown_and_the_terminal() {
    use pulldown_cmark::{Event, Options, Parser, Tag};
    let (mut before, mut after) = (synth(1, Vec::new()), synth(2, Vec::new()));
    let benign = render::markdown(&Comparison::new(&before, &after), 10);
    for (k, p) in [&mut before, &mut after].into_iter().enumerate() {
        p.label = HOSTILE[k].to_string();
        p.devices = vec![HOSTILE[k + 2].to_string()];
        for (i, n) in p
            .gpu_work
            .iter_mut()
            .chain(p.cpu_ops.iter_mut())
            .enumerate()
        {
            n.name = format!("{}{i}", HOSTILE[i % HOSTILE.len()]);
        }
    }
    let c = Comparison::new(&before, &after);
    assert!(!c.gpu_work.changed.is_empty());
    let markdown = render::markdown(&c, 10);
    let structure = |text: &str| {
        Parser::new_ext(text, Options::ENABLE_TABLES)
            .filter(|e| {
                matches!(
                    e,
                    Event::Html(_)
                        | Event::InlineHtml(_)
                        | Event::Start(Tag::Heading { .. } | Tag::Link { .. } | Tag::Table(_))
                        | Event::Start(Tag::TableRow)
                )
            })
            .map(|e| format!("{e:?}"))
            .collect::<Vec<_>>()
    };
    assert_eq!(structure(&markdown), structure(&benign), "{markdown}");
    // GitHub splits a row at every unescaped `|`, code spans included.
    let pipes = |line: &str| line.matches('|').count() - line.matches("\\|").count();
    for table in markdown.split("\n\n").filter(|b| b.starts_with('|')) {
        let header = pipes(table.lines().next().unwrap());
        for row in table.lines() {
            assert_eq!(pipes(row), header, "{row}");
        }
    }
    let text = render::text(&c, 10);
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{202e}'),
        "{text}"
    );
    assert!(text.contains("⟨U+001B⟩"));
}

/// A set of one trace is that trace; a set of two copies has its per-step figures.
#[test]
fn a_pooled_set_is_its_mean_trace() {
    let (a, b) = (
        synth(1, Vec::new()),
        synth(3, every_step(AntiPattern::DataLoader)),
    );
    let one = Profile::pooled("one", std::slice::from_ref(&b)).expect("a set of one");
    assert_eq!(
        (&one.steps, &one.gpu_work, &one.cpu_ops, &one.findings),
        (&b.steps, &b.gpu_work, &b.cpu_ops, &b.findings)
    );
    let twice = Profile::pooled("twice", &[b.clone(), b.clone()]).unwrap();
    assert_eq!(twice.steps.len(), 2 * b.steps.len());
    let c = Comparison::new(&b, &twice);
    assert!(c
        .gpu_work
        .changed
        .iter()
        .all(|n| n.delta_ms_per_step().abs() < 1e-9));
    assert!(c.gpu_work.added.is_empty() && c.gpu_work.removed.is_empty());
    assert_eq!(
        c.findings.unchanged.len(),
        b.findings.len(),
        "{}",
        c.verdict
    );
    // A stall in one trace of two costs half of it per step of the set.
    let mixed = Profile::pooled("mixed", &[a.clone(), b.clone()]).unwrap();
    let cost = |p: &Profile| {
        p.findings
            .iter()
            .find(|f| f.id == "dataloader-bottleneck")
            .map_or(0.0, |f| f.ms_per_step)
    };
    assert!(
        cost(&a) == 0.0 && cost(&b) > 1.0,
        "{} {}",
        cost(&a),
        cost(&b)
    );
    let weights = |p: &Profile| p.steady().len() as f64;
    let expected = cost(&b) * weights(&b) / (weights(&a) + weights(&b));
    assert!(
        (cost(&mixed) - expected).abs() < 1e-9,
        "{} vs {expected}",
        cost(&mixed)
    );
    assert!(Profile::pooled("none", &[]).is_none());
}

/// `ttap compare` on two folders: the ranks of a healthy run against those of a run whose
/// every rank stalls on its DataLoader.
#[test]
fn ttap_compare_takes_two_folders_of_ranks() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let synth_run = |name: &str, seed: u64, inject: bool| {
        let out = dir.join(name);
        let injections = if inject {
            (1..6)
                .map(|s| synth::at(AntiPattern::DataLoader, s, 0.9))
                .collect()
        } else {
            Vec::new()
        };
        let dp = DataParallel {
            world_size: 2,
            rank_injections: Vec::new(),
        };
        synth::synth(&out, &synth::config(6, seed, injections), Some(dp));
        out.to_str().unwrap().to_string()
    };
    let before = synth_run("before", 1, false);
    let after = synth_run("after", 2, true);
    let (code, json) = ttap(&["compare", &before, &after, "--format", "json"]);
    assert_eq!(code, 0, "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert!(
        v["before"]["label"]
            .as_str()
            .unwrap()
            .ends_with("(2 traces)"),
        "{}",
        v["before"]["label"]
    );
    assert_eq!(v["step_ms"]["significant"], true);
    let new: Vec<&str> = v["findings"]["new"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert!(new.contains(&"dataloader-bottleneck"), "{new:?}");
    // Every step of both ranks is in the spread: 2 × 6 steps less each rank's warm-up.
    let single = ttap(&[
        "compare",
        &format!("{before}/rank-0.pt.trace.json"),
        &format!("{after}/rank-0.pt.trace.json"),
        "--format",
        "json",
    ]);
    let one: serde_json::Value = serde_json::from_str(&single.1).unwrap();
    assert_eq!(
        v["step_ms"]["before"]["n"].as_u64().unwrap(),
        2 * one["step_ms"]["before"]["n"].as_u64().unwrap()
    );
}
