//! The window detector: the embedded model loads and scores injected windows high and clean ones
//! low (on an architecture and a GPU it was not trained on, whose kernels it never saw), a tiny
//! forest trains the same twice and round-trips through its file format, the committed model
//! says what made it, malformed model files are refused, the AUROC on a hand-checked case, the
//! evidence gate, and the report's window scores and unexplained regions.

// Only `shared_traces` of it: `trace_files` serves the tests that read every trace.
#[allow(dead_code)]
mod common;

use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::detect;
use torchtraceap::internals::features::{of_trace, NAMES};
use torchtraceap::ml::base_set::{retrain, BaseSet};
use torchtraceap::ml::fit::Params;
use torchtraceap::ml::labels::{for_trace, parse, to_json, WindowLabel};
use torchtraceap::ml::{MlError, Model};
use torchtraceap::model::EventKind;
use torchtraceap::report::Report;
use torchtraceap_dev::ml::eval::auroc;
use torchtraceap_dev::ml::train::{
    train, Recipe, HELD_OUT_GPUS, HELD_OUT_MODELS, TRAIN_GPUS, TRAIN_MODELS,
};
use torchtraceap_dev::synth::{
    generate, AntiPattern, Config, Gpu, Injection, Model as Arch, GENERATOR_VERSION,
};

#[test]
fn auroc_on_a_hand_checked_case() {
    // Positives 0.35 and 0.8 against negatives 0.1 and 0.4: 3 of the 4 pairs ordered right.
    assert_eq!(
        auroc(&[0.1, 0.4, 0.35, 0.8], &[false, false, true, true]),
        Some(0.75)
    );
    // A tie counts half; a perfect ranking is 1; without both classes there is no AUROC.
    assert_eq!(auroc(&[0.5, 0.5], &[true, false]), Some(0.5));
    assert_eq!(auroc(&[0.9, 0.2, 0.3], &[true, false, false]), Some(1.0));
    assert_eq!(auroc(&[0.9, 0.2], &[true, true]), None);
}

/// A held-out family on the held-out GPU.
fn mobilenet_on_b200(injections: Vec<Injection>) -> Config {
    Config {
        model: Arch::MobileNetV2,
        gpu: Gpu::B200,
        training: true,
        steps: 6,
        batch: 64,
        seed: 11,
        injections,
        noise: true,
    }
}

#[test]
fn the_embedded_model_flags_injected_windows_of_an_unseen_architecture_and_gpu() {
    let model = Model::embedded();
    let injections = vec![
        Injection {
            pattern: AntiPattern::DataLoader,
            step: 2,
            severity: 0.7,
        },
        Injection {
            pattern: AntiPattern::HostSync,
            step: 4,
            severity: 0.7,
        },
    ];
    let generated = generate(&mobilenet_on_b200(injections));
    let t = ingest_bytes(generated.trace.as_bytes(), IngestOptions::default())
        .unwrap()
        .trace;
    let a = Analysis::new(&t);
    for w in of_trace(&t, &a.steps) {
        let s = model.score(&w.values);
        let label = generated
            .labels
            .iter()
            .find(|l| l.step == w.step && l.phase == w.phase.label());
        match label {
            Some(l) => {
                assert!(model.flags(s.probability), "{l:?}: {s:?}");
                assert_eq!(s.kind, l.pattern, "{l:?}");
            }
            None => assert!(
                !model.flags(s.probability),
                "step {} {}: {s:?}",
                w.step,
                w.phase.label()
            ),
        }
    }
}

/// The names of the GPU kernels of the traces of every family of `models` on every GPU of
/// `gpus`, with every anti-pattern injected somewhere (fp32 SIMT kernels, tiny kernels).
fn kernel_names(models: &[Arch], gpus: &[Gpu]) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for &model in models {
        for &gpu in gpus {
            let injections = AntiPattern::ALL
                .iter()
                .enumerate()
                .map(|(k, &pattern)| Injection {
                    pattern,
                    step: 1 + k as u32 % 3,
                    severity: 0.5,
                })
                .collect();
            let c = Config {
                steps: 4,
                batch: 16,
                ..mobilenet_on_b200(injections)
            };
            let c = Config { model, gpu, ..c };
            let t = ingest_bytes(generate(&c).trace.as_bytes(), IngestOptions::default())
                .unwrap()
                .trace;
            names.extend(
                (0..t.events.len())
                    .filter(|&i| t.events.kind[i] == EventKind::GpuKernel)
                    .map(|i| t.name_of(i).to_string()),
            );
        }
    }
    names
}

#[test]
fn the_held_out_scenarios_run_kernels_training_never_shows() {
    let training = kernel_names(&TRAIN_MODELS, &TRAIN_GPUS);
    let held_out = kernel_names(&HELD_OUT_MODELS, &HELD_OUT_GPUS);
    // Only PyTorch's own element-wise, copy and optimizer kernels and NCCL's are named alike on
    // every GPU, as in real traces; every library kernel (convolution, GEMM, attention, norm),
    // and every kernel of the held-out families' own layers, is new.
    let generic = |n: &str| {
        n.starts_with("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar")
            || n.starts_with("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add")
            || n.starts_with("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda")
            || n.contains("multi_tensor_apply_kernel")
            || n.starts_with("nccl")
    };
    let shared: Vec<&String> = held_out
        .intersection(&training)
        .filter(|n| !generic(n))
        .collect();
    assert!(shared.is_empty(), "{shared:#?}");
    for new in [
        "conv_depthwise2d",
        "silu_kernel",
        "upsample_nearest2d",
        "sm100_xmma",
        "nvjet_",
        "cutlass_80_simt",
    ] {
        assert!(held_out.iter().any(|n| n.contains(new)), "{new}");
        assert!(!training.iter().any(|n| n.contains(new)), "{new}");
    }
}

/// A recipe small enough for a test.
const TINY: Recipe = Recipe {
    traces: 12,
    seed: 1,
    params: Params {
        trees: 5,
        max_depth: 6,
        ..Params::COMMITTED
    },
};

#[test]
fn a_tiny_forest_trains_the_same_twice_and_round_trips_through_its_file() {
    let (model, rows) = train(&TINY).unwrap();
    assert!(rows.iter().any(|r| r.label.is_some()) && rows.iter().any(|r| r.label.is_none()));
    assert_eq!(model.anomaly.trees.len(), 5);
    let text = serde_json::to_string(&model).unwrap();
    assert_eq!(Model::from_json(&text).unwrap(), model);
    // The same recipe makes the same model, byte for byte, and says so in the file.
    assert_eq!(
        serde_json::to_string(&train(&TINY).unwrap().0).unwrap(),
        text
    );
    assert_eq!(model.provenance.generator, GENERATOR_VERSION);
    assert_eq!(model.provenance.command, TINY.command());
    // It has learnt its own training windows.
    let right = rows
        .iter()
        .filter(|r| model.flags(model.score(&r.features.values).probability) == r.label.is_some())
        .count();
    assert!(
        right as f64 >= 0.9 * rows.len() as f64,
        "{right} of {}",
        rows.len()
    );
}

#[test]
fn malformed_model_files_are_refused_with_the_reason() {
    let good = serde_json::to_value(Model::embedded()).unwrap();
    let refused = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut m = good.clone();
        edit(&mut m);
        Model::from_json(&m.to_string()).unwrap_err()
    };
    let e = refused(&|m| m["version"] = 9.into());
    assert!(
        matches!(e, MlError::ModelVersion { version: 9, .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("version 9"), "{e}");
    let e = refused(&|m| m["features"] = serde_json::json!(["x"]));
    assert!(matches!(e, MlError::ModelFeatures(1)), "{e:?}");
    assert!(
        e.to_string().contains("retrain it with `ttap-dev train`"),
        "{e}"
    );
    let e = refused(&|m| m["anomaly"]["trees"][0]["right"][0] = 1_000_000.into());
    assert!(
        matches!(
            e,
            MlError::MalformedTree {
                forest: "anomaly",
                tree: 0
            }
        ),
        "{e:?}"
    );
    let e = Model::from_json("{}").unwrap_err();
    assert!(matches!(e, MlError::NotAModel(_)), "{e:?}");
    assert!(e.to_string().contains("not a window-forest model"), "{e}");
    assert_eq!(Model::embedded().features, NAMES);
}

#[test]
fn the_committed_model_says_what_made_it() {
    // A model trained on another generator, or by another recipe, than the code says: rebuild it
    // with the command it records (`ttap-dev train`), which the committed recipe reproduces exactly.
    let p = &Model::embedded().provenance;
    assert_eq!(p.generator, GENERATOR_VERSION, "retrain: {}", p.command);
    assert_eq!(p.command, Recipe::COMMITTED.command());
    assert_eq!(p.traces, Recipe::COMMITTED.traces);
    assert_eq!(p.forest_seed, Params::COMMITTED.seed);
    assert_eq!(p.models, TRAIN_MODELS.map(|m| m.id().to_string()));
    assert_eq!(p.gpus, TRAIN_GPUS.map(|g| g.id().to_string()));
}

#[test]
fn a_window_without_the_evidence_of_any_anti_pattern_is_not_anomalous() {
    let model = Model::embedded();
    let feature = |name: &str| NAMES.iter().position(|n| *n == name).unwrap();
    // An empty slice: no GPU work, no runtime call, no DataLoader.
    let mut x = vec![0.0f32; NAMES.len()];
    x[feature("idle_before_first_work")] = 1.0;
    assert_eq!(model.score(&x).probability, 0.0);
    // The GPU idles the whole window while the DataLoader works: only that type has evidence.
    x[feature("dataloader_time")] = 0.9;
    let s = model.score(&x);
    assert_eq!(s.kind, "dataloader-bottleneck");
    assert!(model.flags(s.probability), "{s:?}");
}

#[test]
fn the_report_carries_window_scores_and_unexplained_regions() {
    let injections = vec![Injection {
        pattern: AntiPattern::LaunchBound,
        step: 3,
        severity: 0.5,
    }];
    // Batch 256: the healthy steps' kernels outlast their launches (at batch 64 MobileNet's
    // kernels on a B200 are shorter than the host's launches: launch-bound in every step).
    let config = Config {
        batch: 256,
        ..mobilenet_on_b200(injections)
    };
    let t = ingest_bytes(generate(&config).trace.as_bytes(), IngestOptions::default())
        .unwrap()
        .trace;
    let a = Analysis::new(&t);
    let detected = detect::run(&a);
    let report = Report::new(&a, &detected);
    let findings = detected.findings;
    for phase in ["forward", "backward"] {
        let w = report
            .windows
            .iter()
            .find(|w| w.step == 13 && w.phase == phase)
            .unwrap();
        assert!(
            Model::embedded().flags(w.anomaly_probability.unwrap()),
            "{w:?}"
        );
        assert_eq!(
            w.predicted_type.as_deref(),
            Some("launch-bound-small-kernels")
        );
    }
    // Tiny kernels in one step of five stay under the rule's steady-state threshold: the rule is
    // silent, so these windows are unexplained suspicious regions, and the only ones.
    assert!(
        !findings
            .iter()
            .any(|f| f.id == "launch-bound-small-kernels"),
        "{findings:?}"
    );
    let mut unexplained: Vec<(i64, &str)> = report
        .unexplained
        .iter()
        .map(|u| (u.step, u.phase.as_str()))
        .collect();
    unexplained.sort_unstable();
    assert_eq!(unexplained, vec![(13, "backward"), (13, "forward")]);
    assert!(report
        .to_markdown("t")
        .contains("Unexplained suspicious regions (flagged, and no finding of that type concerns the step): step 13"));
}

#[test]
fn a_cpu_only_trace_is_outside_the_detector_s_domain() {
    let Some(dir) = common::shared_traces("a_cpu_only_trace_is_outside_the_detector_s_domain")
    else {
        return;
    };
    let path = dir.join("local__torch-2.15-cpu/resnet18_train_step_cpu.pt.trace.json.gz");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let t = ingest_bytes(&bytes, IngestOptions::default())
        .unwrap()
        .trace;
    assert!(!torchtraceap::ml::applies_to(&t));
    let a = Analysis::new(&t);
    let report = Report::new(&a, &detect::run(&a));
    assert!(!report.windows.is_empty());
    assert!(report
        .windows
        .iter()
        .all(|w| w.anomaly_probability.is_none() && w.predicted_type.is_none()));
    assert!(report.unexplained.is_empty());
    assert!(report
        .to_markdown("t")
        .contains("Not applied: the trace holds no GPU work"));
}

#[test]
fn retraining_on_the_base_set_and_kept_labels_moves_a_window_toward_its_label() {
    // The bundled base set (`ttap-dev train` writes it for the web app) and a healthy trace of a
    // held-out family on the held-out GPU, small enough that its kernels are tiny: the model
    // flags windows of it as launch-bound. The user keeps those windows as "no anti-pattern".
    let bytes = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("www/models/base-set.bin.gz"),
    )
    .unwrap();
    let base = BaseSet::decode(&bytes).unwrap();
    assert_eq!(base.generator, GENERATOR_VERSION);
    assert!(base.labels.iter().filter(|l| l.is_some()).count() >= 1000);
    let c = Config {
        batch: 16,
        ..mobilenet_on_b200(Vec::new())
    };
    let t = ingest_bytes(generate(&c).trace.as_bytes(), IngestOptions::default())
        .unwrap()
        .trace;
    let a = Analysis::new(&t);
    let windows = of_trace(&t, &a.steps);
    let before = Model::embedded();
    let flagged: Vec<&Vec<f32>> = windows
        .iter()
        .map(|w| &w.values)
        .filter(|x| before.flags(before.score(x).probability))
        .collect();
    assert!(
        !flagged.is_empty(),
        "the embedded model flags none of its windows"
    );
    let kept: Vec<(Vec<f32>, Option<AntiPattern>)> =
        flagged.iter().map(|x| ((*x).clone(), None)).collect();
    let after = retrain(&base, &kept).unwrap();
    assert!(after
        .provenance
        .command
        .contains(&format!("{} kept labels", kept.len())));
    for x in &flagged {
        let (p0, p1) = (before.score(x).probability, after.score(x).probability);
        assert!(p1 < p0 && !after.flags(p1), "{p0} -> {p1}");
    }
}

/// Window labels round-trip through their file, and the generator's labels (`ttap-dev synth
/// --labels`) read as the web app's do.
#[test]
fn labels_round_trip_and_the_generator_s_labels_read() {
    let labels = vec![WindowLabel {
        step: 12,
        phase: "forward".into(),
        pattern: "host-device-sync".into(),
        window: Some(1),
        trace: Some("rank0.pt.trace.json".into()),
        fingerprint: Some("fp1-0123456789abcdef".into()),
    }];
    assert_eq!(parse(&to_json(&labels), "x").unwrap(), labels);
    let generated = generate(&Config {
        model: Arch::ResNet50,
        gpu: Gpu::A100,
        training: true,
        steps: 3,
        batch: 8,
        seed: 1,
        injections: vec![Injection {
            pattern: AntiPattern::DataLoader,
            step: 1,
            severity: 0.5,
        }],
        noise: false,
    });
    let text = serde_json::to_string(&generated.labels).unwrap();
    let read = parse(&text, "synth").unwrap();
    assert_eq!(read.len(), generated.labels.len());
    assert_eq!(read[0].pattern, "dataloader-bottleneck");
    assert!(read[0].names(read[0].step, "data loading", 3));
    assert_eq!(read[0].fingerprint, None);
    assert_eq!(
        for_trace(read.clone(), "fp1-x", "synth", "t").unwrap(),
        read
    );
    let mine = for_trace(labels.clone(), "fp1-0123456789abcdef", "l.json", "t").unwrap();
    assert_eq!(mine, labels);
    let e = for_trace(labels, "fp1-other", "l.json", "b.json")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("none of the 1 labels in l.json is for b.json (fingerprint fp1-other)"),
        "{e}"
    );
}

#[test]
fn the_model_trains_on_every_gpu_but_the_held_out_generation() {
    let mut split: Vec<&str> = TRAIN_GPUS
        .iter()
        .chain(&HELD_OUT_GPUS)
        .map(|g| g.id())
        .collect();
    let mut all: Vec<&str> = torchtraceap_dev::synth::Gpu::ALL
        .iter()
        .map(|g| g.id())
        .collect();
    split.sort_unstable();
    all.sort_unstable();
    assert_eq!(split, all);
    assert!(TRAIN_GPUS.iter().all(|g| !HELD_OUT_GPUS.contains(g)));
}
