//! Comparison and run links (`view_link`): a round trip on HTA's real `trace_diff` pair and on
//! generated pairs and runs gives the same verdict, tables and run view; name tables are cut to
//! fit the budget, their kept rows unchanged; forged links (numbers out of bounds, unknown
//! detectors, wrong counts, newer versions, bombs) are refused with a message naming the place;
//! mutated links never panic, and what they decode to is bounded and quoted; the CLI's
//! `compare --share`, `analyze --share` and `share --decode` of them.

#[path = "../../tests/common/mod.rs"]
mod common;
#[path = "../../tests/links/mod.rs"]
mod links;
mod profiles;
mod synth;
mod ttap;

use std::io::Read as _;
use std::path::Path;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use flate2::read::ZlibDecoder;
use profiles::profile_of_bytes;
use serde_json::{json, Value};
use torchtraceap::compare::{Comparison, NameChange};
use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::detect;
use torchtraceap::profile::Profile;
use torchtraceap::report::Report;
use torchtraceap::run::RunView;
use torchtraceap::share::{self, ShareError, ShareOptions, SharedReport, QUOTED_MAX_CHARS};
use torchtraceap::view_link::facts::MAX_NAME_CHARS;
use torchtraceap::view_link::{self, View};
use torchtraceap_dev::synth::{
    generate, generate_ranks, AntiPattern, Config, DataParallel, Injection,
};

fn config(injections: Vec<Injection>, seed: u64) -> Config {
    profiles::resnet50(seed, injections, true)
}

fn stall(step: u32) -> Injection {
    Injection {
        pattern: AntiPattern::DataLoader,
        step,
        severity: 0.8,
    }
}

/// A generated before (a data-loading stall in every step) and after (none).
fn generated_pair() -> (Profile, Profile) {
    let before = generate(&config((2..8).map(stall).collect(), 1));
    let after = generate(&config(Vec::new(), 2));
    (
        profile_of_bytes("before.pt.trace.json", before.trace.as_bytes()),
        profile_of_bytes("after.pt.trace.json", after.trace.as_bytes()),
    )
}

/// The profiles of a generated 8-rank run with a straggler on rank 5.
fn generated_run() -> Vec<Profile> {
    let dp = DataParallel {
        world_size: 8,
        rank_injections: vec![(5, stall(4))],
    };
    let mut c = config(Vec::new(), 3);
    c.noise = false;
    generate_ranks(&c, &dp)
        .iter()
        .enumerate()
        .map(|(r, g)| profile_of_bytes(&format!("rank{r}.pt.trace.json"), g.trace.as_bytes()))
        .collect()
}

const WHOLE: ShareOptions = ShareOptions {
    max_bytes: usize::MAX,
};

fn row(n: &NameChange) -> (String, u64, u64, String, String) {
    (
        n.name.clone(),
        n.before_count,
        n.after_count,
        format!("{:.9}", n.before_ms_per_step),
        format!("{:.9}", n.after_ms_per_step),
    )
}

/// The decoded comparison says what the original does: verdict, headline, pairs, split,
/// findings, and each kept table row (a prefix of the original table).
fn same_comparison(original: &Comparison, decoded: &Comparison) {
    assert_eq!(decoded.verdict, original.verdict);
    assert_eq!(decoded.step_ms, original.step_ms);
    assert_eq!(decoded.samples_per_s, original.samples_per_s);
    assert_eq!(decoded.gpu_busy_pct, original.gpu_busy_pct);
    assert_eq!(decoded.pairs, original.pairs);
    assert_eq!(decoded.split, original.split);
    assert_eq!(decoded.findings, original.findings);
    assert_eq!(decoded.before.batch, original.before.batch);
    for (d, o) in [
        (&decoded.gpu_work, &original.gpu_work),
        (&decoded.cpu_ops, &original.cpu_ops),
    ] {
        for (dl, ol) in [
            (&d.changed, &o.changed),
            (&d.added, &o.added),
            (&d.removed, &o.removed),
        ] {
            assert!(dl.len() <= ol.len());
            let kept: Vec<_> = ol.iter().take(dl.len()).map(row).collect();
            assert_eq!(dl.iter().map(row).collect::<Vec<_>>(), kept);
        }
    }
}

fn comparison_of(shared: &view_link::SharedView) -> Comparison {
    shared.comparison().expect("a comparison link")
}

#[test]
fn a_comparison_link_of_htas_trace_diff_pair_round_trips_within_8_kb() {
    let Some(dir) = common::shared_traces("the trace_diff comparison link") else {
        return;
    };
    let files = common::trace_files(&dir);
    let read = |name: &str| {
        let hta = Path::new("facebookresearch__HolisticTraceAnalysis");
        let path = files
            .iter()
            .find(|f| f.ends_with(hta.join(name)))
            .unwrap_or_else(|| panic!("{name} is missing from the shared traces"));
        profile_of_bytes(name, &std::fs::read(path).expect("readable"))
    };
    let before = read("tests__data__trace_diff__control__control.json.gz");
    let after = read("tests__data__trace_diff__test__test.json.gz");
    let original = Comparison::new(&before, &after);
    let encoded = view_link::encode_comparison(&before, &after, &ShareOptions::default()).unwrap();
    eprintln!(
        "trace_diff comparison link: {} bytes, {} table rows left out; verdict: {}",
        encoded.bytes, encoded.kept.rows_left_out, original.verdict
    );
    assert!(encoded.fragment.starts_with("ttapc1."));
    assert!(encoded.bytes <= 8192);
    let decoded =
        view_link::decode(&format!("https://x.example/app/#{}", encoded.fragment)).unwrap();
    assert_eq!(decoded, encoded.kept);
    let c = comparison_of(&decoded);
    same_comparison(&original, &c);
    // The changes that matter most are still there.
    assert!(
        c.gpu_work.changed.len() >= 10,
        "{}",
        c.gpu_work.changed.len()
    );
    let whole = view_link::encode_comparison(&before, &after, &WHOLE).unwrap();
    assert_eq!(whole.kept.rows_left_out, 0);
    let c = comparison_of(&whole.kept);
    assert_eq!(c.gpu_work.changed.len(), original.gpu_work.changed.len());
    assert_eq!(c.cpu_ops.removed.len(), original.cpu_ops.removed.len());
    same_comparison(&original, &c);
}

#[test]
fn a_generated_comparison_link_round_trips_and_cuts_its_tables_to_fit() {
    let (before, after) = generated_pair();
    let original = Comparison::new(&before, &after);
    assert!(
        original.verdict.contains("fixed: dataloader-bottleneck"),
        "{}",
        original.verdict
    );
    let whole = view_link::encode_comparison(&before, &after, &WHOLE).unwrap();
    assert_eq!(whole.kept.rows_left_out, 0);
    let View::Comparison {
        before: b,
        after: a,
    } = &whole.kept.view
    else {
        panic!("a comparison");
    };
    // Whole, the profiles come back as they were but for the raw name examples.
    let without_examples = |p: &Profile| {
        let mut p = p.clone();
        for n in p.gpu_work.iter_mut().chain(&mut p.cpu_ops) {
            n.example = n.name.clone();
            n.variants = 1;
        }
        p
    };
    assert_eq!(**b, without_examples(&before));
    assert_eq!(**a, without_examples(&after));
    same_comparison(&original, &comparison_of(&whole.kept));
    let small = ShareOptions {
        max_bytes: whole.bytes - 1,
    };
    let cut = view_link::encode_comparison(&before, &after, &small).unwrap();
    assert!(cut.bytes <= small.max_bytes);
    assert!(cut.kept.rows_left_out > 0);
    same_comparison(&original, &comparison_of(&cut.kept));
    let tiny = ShareOptions { max_bytes: 200 };
    assert!(matches!(
        view_link::encode_comparison(&before, &after, &tiny),
        Err(ShareError::CannotFit { .. })
    ));
}

#[test]
fn a_run_link_round_trips_with_its_straggler() {
    let profiles = generated_run();
    let original = RunView::new(&profiles);
    assert_eq!(original.findings.len(), 1, "{:?}", original.findings);
    assert_eq!(original.findings[0].rank, 5);
    let encoded = view_link::encode_run(&profiles, &ShareOptions::default()).unwrap();
    eprintln!("8-rank run link: {} bytes", encoded.bytes);
    assert!(encoded.fragment.starts_with("ttapr1."));
    assert!(view_link::is_view_link(&encoded.fragment));
    let decoded = view_link::decode(&encoded.fragment).unwrap();
    assert_eq!(decoded.run().unwrap(), original);
    assert!(decoded.comparison().is_none());
}

/// The JSON a view link carries, without its checksum (the tests forge links from it, read as
/// links made before the checksum).
fn json_of(fragment: &str) -> Value {
    let data = &fragment[fragment.find('.').unwrap() + 1..];
    let compressed = URL_SAFE_NO_PAD.decode(data).unwrap();
    let mut json = Vec::new();
    ZlibDecoder::new(compressed.as_slice())
        .read_to_end(&mut json)
        .unwrap();
    let mut v: Value = serde_json::from_slice(&json).unwrap();
    v.as_object_mut().unwrap().remove("check");
    v
}

fn refused(link: &str, expect: &str) -> ShareError {
    match view_link::decode(link) {
        Ok(v) => panic!("{expect}: accepted as {v:?}"),
        Err(e) => {
            let text = e.to_string();
            assert!(text.contains(expect), "{expect:?} not in {text:?}");
            e
        }
    }
}

type Forgery = Box<dyn Fn(&mut Value)>;

#[test]
fn report_links_and_view_links_are_not_taken_for_each_other() {
    let trace = generate(&config(vec![stall(3)], 4)).trace;
    let ingested = ingest_bytes(trace.as_bytes(), IngestOptions::default()).unwrap();
    let a = Analysis::new(&ingested.trace);
    let report = Report::new(&a, &detect::run(&a));
    let shared = SharedReport::new(report, share::fingerprint(&ingested.trace));
    let report_link = share::encode(&shared, &ShareOptions::default())
        .unwrap()
        .fragment;
    assert!(report_link.starts_with(links::PREFIX));
    assert!(!view_link::is_view_link(&report_link));
    refused(&report_link, "where 'ttapc1.' is expected");
    // A report's facts under a comparison's prefix: the wrong document.
    let disguised = links::link("ttapc1.", links::facts_json(&shared).to_string().as_bytes());
    refused(&disguised, "not a \"torchtraceap.comparison\" one");
    let (before, after) = generated_pair();
    let view = view_link::encode_comparison(&before, &after, &ShareOptions::default())
        .unwrap()
        .fragment;
    assert!(matches!(
        share::decode(&view),
        Err(ShareError::NotALink { .. })
    ));
}

#[test]
fn forged_comparison_and_run_links_are_refused_naming_the_place() {
    let (before, after) = generated_pair();
    let fragment = view_link::encode_comparison(&before, &after, &WHOLE)
        .unwrap()
        .fragment;
    let v = json_of(&fragment);
    let forged = |change: &dyn Fn(&mut Value)| {
        let mut v = v.clone();
        change(&mut v);
        links::link("ttapc1.", v.to_string().as_bytes())
    };
    let cases: Vec<(&str, Forgery)> = vec![
        (
            "before, step row 2: the step time (ns) is -5",
            Box::new(|v| v["profiles"][0]["steps"][1]["dur_ns"] = json!(-5)),
        ),
        (
            "after, step row 1: the step time (ns) is 9223372036854775807",
            Box::new(|v| v["profiles"][1]["steps"][0]["dur_ns"] = json!(i64::MAX)),
        ),
        (
            "before, step row 1: a split of 3 parts",
            Box::new(|v| v["profiles"][0]["steps"][0]["parts_ns"] = json!([1, 2, 3])),
        ),
        (
            "after, step row 1: a part of the split (ns) is -1",
            Box::new(|v| v["profiles"][1]["steps"][0]["parts_ns"][2] = json!(-1)),
        ),
        (
            "before: no step",
            Box::new(|v| v["profiles"][0]["steps"] = json!([])),
        ),
        (
            "before: 5001 steps, more than the 5000",
            Box::new(|v| {
                let step = json!({"number": 0, "warmup": false, "dur_ns": 1, "parts_ns": [],
                "collective_ns": 0, "exposed_comm_ns": 0, "dataloader_ns": 0});
                v["profiles"][0]["steps"] = Value::Array(vec![step; 5_001]);
            }),
        ),
        (
            "3 traces, where a comparison holds 2",
            Box::new(|v| {
                let p = v["profiles"][0].clone();
                v["profiles"].as_array_mut().unwrap().push(p);
            }),
        ),
        (
            "the detector \"rm-rf\"",
            Box::new(|v| v["profiles"][0]["findings"][0]["id"] = json!("rm-rf")),
        ),
        (
            "the share of the step (%) is 250",
            Box::new(|v| v["profiles"][0]["findings"][0]["pct_of_step"] = json!(250)),
        ),
        (
            "the batch size is 0",
            Box::new(|v| v["profiles"][0]["batch"] = json!({"size": 0, "source": "x"})),
        ),
        (
            "GPU work name 1: the time (ns) is -7",
            Box::new(|v| v["profiles"][1]["gpu_work"][0][2] = json!(-7)),
        ),
        (
            "after, CPU operator name 2: a name given twice",
            Box::new(|v| {
                let ops = v["profiles"][1]["cpu_ops"].as_array_mut().unwrap();
                ops[1][0] = ops[0][0].clone();
            }),
        ),
        (
            "not a shared TorchTraceAP report",
            Box::new(|v| v["profiles"][1]["gpu_work"][0] = json!("oops")),
        ),
        (
            "rows left out",
            Box::new(|v| v["rows_left_out"] = json!(1u64 << 40)),
        ),
        (
            "a \"torchtraceap.share\" document, not a \"torchtraceap.comparison\" one",
            Box::new(|v| v["format"] = json!("torchtraceap.share")),
        ),
        (
            "newer TorchTraceAP (comparison link format 2",
            Box::new(|v| v["version"] = json!(2)),
        ),
    ];
    for (expect, change) in &cases {
        refused(&forged(change.as_ref()), expect);
    }
    // Texts are data: quoted, cut, never markup.
    let texts = view_link::decode(&forged(&|v| {
        v["profiles"][0]["label"] = json!("<img src=x onerror=alert(1)>\u{202e}evil");
        v["profiles"][1]["gpu_work"][0][0] = json!("k".repeat(5000));
        v["profiles"][1]["devices"] = json!(["d".repeat(500)]);
    }))
    .unwrap();
    let c = comparison_of(&texts);
    assert_eq!(c.before.label, "<img src=x onerror=alert(1)>⟨U+202E⟩evil");
    assert_eq!(c.after.devices[0].chars().count(), QUOTED_MAX_CHARS);
    assert!(c
        .gpu_work
        .changed
        .iter()
        .chain(&c.gpu_work.added)
        .all(|n| n.name.chars().count() <= MAX_NAME_CHARS));
    // The link's prefix names its version and kind.
    refused(
        &fragment.replacen("ttapc1.", "ttapc2.", 1),
        "comparison link format 2",
    );
    refused(
        &fragment.replacen("ttapc1.", "ttapc0.", 1),
        "cannot be opened",
    );
    refused(&format!("ttapc1.{}", "A".repeat(3 << 20)), "more than the");
    refused(&fragment[..fragment.len() - 7], "link");
    let bomb = links::link("ttapc1.", &vec![b' '; 2 << 20]);
    refused(&bomb, "decompresses to more than");
    // Runs: the ranks of one run, 2 to 1024.
    let run = view_link::encode_run(&generated_run(), &WHOLE)
        .unwrap()
        .fragment;
    let r = json_of(&run);
    let forged_run = |change: &dyn Fn(&mut Value)| {
        let mut r = r.clone();
        change(&mut r);
        links::link("ttapr1.", r.to_string().as_bytes())
    };
    refused(
        &forged_run(&|r| r["profiles"][3]["rank"] = json!(2)),
        "not the ranks of one run",
    );
    refused(
        &forged_run(&|r| r["profiles"][3]["rank"] = json!(-1)),
        "trace 4: the rank is -1",
    );
    refused(
        &forged_run(&|r| {
            let one = r["profiles"][0].clone();
            r["profiles"] = json!([one]);
        }),
        "1 ranks, where a run link holds 2 to 1024",
    );
    refused(
        &forged_run(&|r| r["rows_left_out"] = json!(3)),
        "the run: 3 table rows left out",
    );
    refused(
        &forged_run(&|r| r["format"] = json!("torchtraceap.comparison")),
        "not a \"torchtraceap.run\" one",
    );
}

/// What the `view_link_decode` fuzz target checks of any link: `Ok` or `Err`, never a panic;
/// what decodes compares or runs, and shared again without a budget gives the same view (a run:
/// the same profiles; a comparison: the same comparison, its profiles holding only the names its
/// tables show). Whether it decoded; `case` names the input in failures.
fn decodes_and_shares_again(case: &str, link: &str) -> bool {
    let Ok(shared) = view_link::decode(link) else {
        return false;
    };
    let whole = ShareOptions {
        max_bytes: usize::MAX,
    };
    match &shared.view {
        View::Comparison { before, after } => {
            let c = comparison_of(&shared);
            assert!(!c.verdict.is_empty());
            let again = view_link::encode_comparison(before, after, &whole).unwrap();
            assert_eq!(again.kept.rows_left_out, 0, "{case}");
            assert_eq!(again.kept.comparison(), Some(c), "{case}");
        }
        View::Run(profiles) => {
            let r = shared.run().expect("a run link");
            assert_eq!(r.ranks.len(), profiles.len());
            let again = view_link::encode_run(profiles, &whole).unwrap();
            assert_eq!(again.kept, shared, "{case}");
        }
    }
    true
}

/// The link a `view_link_decode` fuzz input stands for (`fuzz/fuzz_targets/view_link_decode.rs`).
fn fuzz_input_link(input: &[u8]) -> Option<String> {
    let (&control, payload) = input.split_first()?;
    let prefix = if control & 4 == 0 {
        "ttapc1."
    } else {
        "ttapr1."
    };
    let text = String::from_utf8_lossy(payload);
    Some(match control % 4 {
        0 => text.into_owned(),
        1 => format!("{prefix}{text}"),
        2 => links::link(prefix, payload),
        _ => format!("{prefix}{}", URL_SAFE_NO_PAD.encode(payload)),
    })
}

/// The fuzz target's seeds (links made by `ttap compare --share` on HTA's `trace_diff` pair and
/// `ttap analyze --share` on a generated 8-rank run, and their JSON) and every input it ever
/// failed on (`fuzz/regressions/view_link_decode`), read as the target reads them: CI replays
/// them without nightly Rust.
#[test]
fn the_view_link_fuzz_seeds_and_regressions_replay() {
    let root = common::repo().join("fuzz");
    let (mut replayed, mut decoded) = (0, 0);
    for dir in ["view_link_seeds", "regressions/view_link_decode"] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap_or_else(|e| panic!("fuzz/{dir}: {e}"))
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        for path in files {
            let input = std::fs::read(&path).unwrap();
            let link = fuzz_input_link(&input).unwrap_or_default();
            let started = std::time::Instant::now();
            let case = path.display().to_string();
            decoded += usize::from(decodes_and_shares_again(&case, &link));
            let took = started.elapsed();
            assert!(took.as_secs() < 10, "{}: {took:?}", path.display());
            replayed += 1;
        }
    }
    assert!(replayed >= 5, "{replayed} inputs: fuzz/ is missing");
    // The four seeds are real links: they decode.
    assert!(decoded >= 4, "{decoded} of {replayed} inputs decode");
}

/// Every cut and every changed byte of a link, and extreme numbers anywhere in its JSON: an
/// error or a bounded view, never a panic; what decodes also compares or runs.
#[test]
fn mutated_view_links_never_panic_and_stay_bounded() {
    let (before, after) = generated_pair();
    let comparison = view_link::encode_comparison(&before, &after, &ShareOptions::default())
        .unwrap()
        .fragment;
    let run = view_link::encode_run(&generated_run(), &ShareOptions::default())
        .unwrap()
        .fragment;
    let check = |link: &str| {
        decodes_and_shares_again("a mutated link", link);
    };
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for fragment in [&comparison, &run] {
        let bytes = fragment.as_bytes();
        for cut in (0..bytes.len()).step_by(97) {
            check(&fragment[..cut]);
        }
        for _ in 0..300 {
            let mut changed = bytes.to_vec();
            let at = 7 + (next() as usize) % (changed.len() - 7);
            changed[at] = b"AZaz09-_"[(next() % 8) as usize];
            check(std::str::from_utf8(&changed).unwrap());
        }
        // Extreme numbers in place of the JSON's numbers, one at a time.
        let prefix = &fragment[..fragment.find('.').unwrap() + 1];
        let v = json_of(fragment);
        let mut numbers = Vec::new();
        collect_numbers(&v, &mut Vec::new(), &mut numbers);
        assert!(numbers.len() > 50);
        for _ in 0..300 {
            let path = &numbers[(next() as usize) % numbers.len()];
            let extreme = [
                json!(-1),
                json!(i64::MAX),
                json!(u64::MAX),
                json!(1e300),
                json!(0),
                json!(-1e-300),
            ][(next() % 6) as usize]
                .clone();
            let mut forged = v.clone();
            *pointer(&mut forged, path) = extreme;
            check(&links::link(prefix, forged.to_string().as_bytes()));
        }
    }
}

fn collect_numbers(v: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Number(_) => out.push(path.clone()),
        Value::Array(items) => items.iter().enumerate().for_each(|(k, item)| {
            path.push(k.to_string());
            collect_numbers(item, path, out);
            path.pop();
        }),
        Value::Object(fields) => fields.iter().for_each(|(key, item)| {
            path.push(key.clone());
            collect_numbers(item, path, out);
            path.pop();
        }),
        _ => {}
    }
}

fn pointer<'v>(v: &'v mut Value, path: &[String]) -> &'v mut Value {
    path.iter().fold(v, |v, key| match v {
        Value::Array(items) => &mut items[key.parse::<usize>().unwrap()],
        other => &mut other[key.as_str()],
    })
}

#[test]
fn the_cli_makes_and_reads_comparison_and_run_links() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let path = |name: &str| dir.join(name).display().to_string();
    let (before, after) = (path("before.pt.trace.json"), path("after.pt.trace.json"));
    let run = path("run");
    let dataloader = |step| synth::at(AntiPattern::DataLoader, step, 0.8);
    synth::synth(
        Path::new(&before),
        &synth::config(8, 1, vec![dataloader(3)]),
        None,
    );
    synth::synth(Path::new(&after), &synth::config(8, 2, Vec::new()), None);
    let dp = DataParallel {
        world_size: 4,
        rank_injections: vec![(2, dataloader(4))],
    };
    synth::synth(Path::new(&run), &synth::config(6, 1, Vec::new()), Some(dp));
    let (code, link) = ttap::ttap(&[
        "compare",
        "--share",
        "--base-url",
        "https://t.example/",
        &before,
        &after,
    ]);
    assert_eq!(code, 0);
    assert!(link.starts_with("https://t.example/#ttapc1."), "{link}");
    let (code, decoded) = ttap::ttap(&["share", "--decode", link.trim()]);
    assert_eq!(code, 0);
    let (_, direct) = ttap::ttap(&["compare", "--format", "json", &before, &after]);
    let verdict = |json: &str| serde_json::from_str::<Value>(json).unwrap()["verdict"].clone();
    assert_eq!(verdict(&decoded), verdict(&direct));
    assert!(verdict(&direct).as_str().unwrap().contains("step time"));

    let (code, link) = ttap::ttap(&["analyze", "--share", &run]);
    assert_eq!(code, 0);
    assert!(link.contains("#ttapr1."), "{link}");
    let (code, decoded) = ttap::ttap(&["share", "--decode", link.trim()]);
    assert_eq!(code, 0);
    let (_, direct) = ttap::ttap(&["analyze", "--format", "json", &run]);
    let direct: Value = serde_json::from_str(&direct).unwrap();
    let decoded: Value = serde_json::from_str(&decoded).unwrap();
    assert_eq!(decoded["findings"], direct["run"]["findings"]);
    assert_eq!(decoded["findings"][0]["rank"], json!(2));
    // One trace is not a run; a forged link is an error, exit code 2.
    assert_eq!(ttap::ttap(&["analyze", "--share", &before]).0, 2);
    assert_eq!(ttap::ttap(&["share", "--decode", "ttapc1.AAAA"]).0, 2);
}
