//! `ttap-dev eval`: the window detector against the rules and k-means on held-out scenarios (unseen
//! architectures on unseen GPUs), its scoring speed, and its agreement with the rules on the real
//! traces; written as a Markdown report.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context};

use torchtraceap::ingest::IngestOptions;
use torchtraceap::internals::detect::scoring::RealLabels;
use torchtraceap::ml::labels::{for_trace, NOT_AN_ANTI_PATTERN};
use torchtraceap::ml::{self, Model};
use torchtraceap::model::AntiPattern;
use torchtraceap::share::fingerprint;
use torchtraceap::AnalyzedTrace;
use torchtraceap_dev::ml::eval::{auroc, score_scenario, KMeansBaseline, Scored};
use torchtraceap_dev::ml::real::{feature_gaps, figures, score_labelled};
use torchtraceap_dev::ml::train::{
    data_set, LabelledWindow, HELD_OUT_GPUS, HELD_OUT_MODELS, TRAIN_GPUS, TRAIN_MODELS,
};
use torchtraceap_dev::synth::scenario;

use crate::features::read_labels;
use torchtraceap_cli::read::read_file;

#[derive(clap::Args)]
pub struct Args {
    /// A model file written by `ttap-dev train` (default: the embedded model).
    #[arg(long)]
    model: Option<PathBuf>,
    /// How many held-out scenarios to score.
    #[arg(long, default_value_t = 300)]
    traces: usize,
    /// The first held-out scenario's seed (far from the training seeds).
    #[arg(long, default_value_t = 1_000_000)]
    seed: u64,
    /// Training scenarios for the k-means baseline (seeds from 1, as `ttap-dev train`).
    #[arg(long, default_value_t = 300)]
    kmeans_traces: usize,
    /// Clusters of the k-means baseline.
    #[arg(long, default_value_t = 12)]
    clusters: usize,
    /// The real traces to compare the model with the rules on (every .json and .json.gz below).
    #[arg(long, env = "TTAP_SHARED_TRACES", default_value = "../shared/traces")]
    real: PathBuf,
    /// The hand labels of the real traces (docs/LABELS.md).
    #[arg(long, default_value = "models/real-labels.json")]
    real_labels: PathBuf,
    /// Where the report (Markdown) goes.
    #[arg(long, default_value = "models/EVALUATION.md")]
    out: PathBuf,
    /// Instead of the held-out scenarios: score the windows of real traces that a person
    /// labelled (the web app's Export labels, or `ttap-dev synth --labels`) and print how the model
    /// agrees with each label. Needs --trace. (`--real` is not read then; it is not refused
    /// either, since `TTAP_SHARED_TRACES` in the environment sets it.)
    #[arg(long, requires = "trace", conflicts_with_all = ["traces", "seed", "kmeans_traces", "clusters", "real_labels", "out"])]
    labels: Option<PathBuf>,
    /// A trace the --labels were made on (matched by fingerprint). Repeatable.
    #[arg(long, requires = "labels")]
    trace: Vec<PathBuf>,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    match &args.labels {
        Some(labels) => score_labels(args, labels),
        None => evaluate(args),
    }
    .context("ttap-dev eval")?;
    Ok(ExitCode::SUCCESS)
}

fn load(args: &Args) -> anyhow::Result<Model> {
    match &args.model {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the model {}", path.display()))?;
            Model::from_json(&text).with_context(|| path.display().to_string())
        }
        None => Ok(Model::embedded().clone()),
    }
}

fn evaluate(args: &Args) -> anyhow::Result<()> {
    let model = load(args)?;
    let train_rows = data_set(&TRAIN_MODELS, &TRAIN_GPUS, args.kmeans_traces, 1)?;
    let kmeans = KMeansBaseline::fit(&train_rows, args.clusters)?;
    let mut held_out: Vec<Scored> = Vec::new();
    for k in 0..args.traces {
        let c = scenario(&HELD_OUT_MODELS, &HELD_OUT_GPUS, args.seed + k as u64);
        held_out.extend(score_scenario(&model, &kmeans, &c)?);
    }
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# Window detector: evaluation\n\n\
         Written by `ttap-dev eval --traces {} --seed {} --kmeans-traces {} --clusters {}`.\n\n\
         Held out: {} scenarios (`synth::scenario`, with noise) of {} on {}: architectures and GPUs \
         the model never saw (it is trained on {} on {}).",
        args.traces,
        args.seed,
        args.kmeans_traces,
        args.clusters,
        args.traces,
        names(HELD_OUT_MODELS.map(|m| m.id())),
        names(HELD_OUT_GPUS.map(|g| g.id())),
        names(TRAIN_MODELS.map(|m| m.id())),
        names(TRAIN_GPUS.map(|g| g.id())),
    );
    let generated_healthy: Vec<&[f32]> = train_rows
        .iter()
        .filter(|r| r.label.is_none())
        .map(|r| r.features.values.as_slice())
        .collect();
    labelled_real_section(
        &mut o,
        &model,
        &kmeans,
        &generated_healthy,
        &args.real,
        &args.real_labels,
    )?;
    held_out_section(&mut o, &model, &held_out);
    speed_section(&mut o, &model, &train_rows);
    real_section(&mut o, &model, &args.real);
    std::fs::write(&args.out, &o)
        .with_context(|| format!("writing {} (does its folder exist?)", args.out.display()))?;
    crate::out(&o);
    Ok(())
}

/// `ttap-dev eval --labels L --trace T...`: each labelled window of each trace, scored, and whether
/// the model agrees with the label: a window labelled with an anti-pattern when the model flags
/// it with that type, one labelled "none" when it does not flag it.
fn score_labels(args: &Args, path: &PathBuf) -> anyhow::Result<()> {
    let model = load(args)?;
    let labels = read_labels(path)?;
    let source = path.display().to_string();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# Window detector on labelled windows\n\n{} labels from {source}; model: {}.\n\n\
         | trace | step | phase | window | label | probability | flagged | model's type | agrees |\n\
         |---|---|---|---|---|---|---|---|---|",
        labels.len(),
        args.model
            .as_ref()
            .map_or("the embedded one".into(), |m| m.display().to_string()),
    );
    let (mut rows, mut agree) = (0, 0);
    let (mut scores, mut positive) = (Vec::new(), Vec::new());
    let mut used = vec![false; labels.len()];
    for trace in &args.trace {
        let name = trace.display().to_string();
        let ingested = read_file(trace, IngestOptions::default()).with_context(|| name.clone())?;
        let t = &ingested.trace;
        let fp = fingerprint(t);
        let mine = for_trace(labels.clone(), &fp, &source, &name)?;
        if !ml::applies_to(t) {
            bail!(
                "{name} has no GPU work: the window detector does not score it (labels for it cannot be checked)"
            );
        }
        let (mut step, mut index) = (None, 0);
        for w in AnalyzedTrace::new(&ingested).features() {
            index = if step == Some(w.step) { index + 1 } else { 0 };
            step = Some(w.step);
            let Some(l) = mine
                .iter()
                .find(|l| l.names(w.step, w.phase.label(), index))
            else {
                continue;
            };
            for (u, x) in used.iter_mut().zip(&labels) {
                *u |= x == l;
            }
            let s = model.score(&w.values);
            let flagged = model.flags(s.probability);
            let anomalous = l.pattern != NOT_AN_ANTI_PATTERN;
            let agrees = if anomalous {
                flagged && s.kind == l.pattern
            } else {
                !flagged
            };
            rows += 1;
            agree += usize::from(agrees);
            scores.push(s.probability);
            positive.push(anomalous);
            let yes = |b: bool| if b { "yes" } else { "no" };
            let _ = writeln!(
                o,
                "| {name} | {} | {} | {} | `{}` | {:.2} | {} | `{}` | {} |",
                w.step,
                l.phase,
                index + 1,
                l.pattern,
                s.probability,
                yes(flagged),
                s.kind,
                yes(agrees),
            );
        }
    }
    if let Some(k) = used.iter().position(|u| !u) {
        let l = &labels[k];
        bail!(
            "label {k} of {source} (step {} {}{}) names no window of the traces given; pass the \
             trace it was made on with --trace",
            l.step,
            l.phase,
            l.trace
                .as_ref()
                .map_or(String::new(), |t| format!(" of {t}")),
        );
    }
    let _ = writeln!(
        o,
        "\nThe model agrees with {agree} of {rows} labelled windows (an anti-pattern: flagged \
         with that type; \"none\": not flagged). AUROC of the probability, anti-pattern against \
         \"none\": {}.",
        auroc(&scores, &positive)
            .map_or("needs windows of both kinds".into(), |a| format!("{a:.3}"))
    );
    crate::out(&o);
    Ok(())
}

/// The model, the rules and k-means on the hand-labelled real traces, trace by trace
/// (`ml::real`).
fn labelled_real_section(
    o: &mut String,
    model: &Model,
    kmeans: &KMeansBaseline,
    generated_healthy: &[&[f32]],
    dir: &Path,
    labels: &Path,
) -> anyhow::Result<()> {
    if !dir.is_dir() {
        let _ = writeln!(
            o,
            "\n## Real labelled traces\n\nSKIPPED: {} is absent (pass --real DIR or set TTAP_SHARED_TRACES).",
            dir.display()
        );
        return Ok(());
    }
    let text = std::fs::read_to_string(labels)
        .with_context(|| format!("reading the real labels {}", labels.display()))?;
    let labels = RealLabels::from_json(&text).with_context(|| labels.display().to_string())?;
    let rows = score_labelled(model, Some(kmeans), &labels, dir)?;
    let f = figures(&rows, model.threshold);
    let ratio = |x: Option<f64>| x.map_or("n/a".into(), |x| format!("{x:.3}"));
    let _ = writeln!(
        o,
        "\n## Real labelled traces\n\nData: **real** traces of `../shared/traces`, labelled by \
         hand (`models/real-labels.json`, rubric in `docs/LABELS.md`). {} traces judged: {} hold \
         one of the six anti-patterns the model knows in their median steady step, {} hold none \
         of the six; {} left out (none present, some unjudged). A trace's score is the median, \
         over its steady steps, of the step's most anomalous window (rules: the highest \
         confidence of their findings of the six).\n\n\
         | method | trace AUROC | type accuracy (positive traces) |\n|---|---|---|\n\
         | random forest (this model) | {} | {:.3} |\n\
         | rule detectors | {} | {:.3} |\n\
         | k-means (distance to the nearest centroid) | {} | {:.3} |\n\n\
         At the operating threshold ({}): {} of {} positive traces flagged (recall {:.3}), {} of \
         {} negative ones (precision {}). Healthy controls: {} of {} steady windows flagged. \
         Agreement with the rules where either side finds a type: {} of {} (trace, type) pairs.",
        f.positives + f.negatives,
        f.positives,
        f.negatives,
        f.left_out,
        ratio(f.forest.auroc),
        f.forest.type_accuracy,
        ratio(f.rules.auroc),
        f.rules.type_accuracy,
        ratio(f.kmeans.auroc),
        f.kmeans.type_accuracy,
        model.threshold,
        f.flagged_positive,
        f.positives,
        f.recall(),
        f.flagged_negative,
        f.negatives,
        ratio(f.precision()),
        f.healthy_flagged,
        f.healthy_windows,
        f.both,
        f.either,
    );
    let _ = writeln!(
        o,
        "\n| trace | labels: present | steady windows | flagged | model score | model's type | rules' types |\n|---|---|---|---|---|---|---|"
    );
    for r in &rows {
        let present: Vec<&str> = r.present.iter().map(|p| p.id()).collect();
        let control = if r.healthy_control {
            " (healthy control)"
        } else {
            ""
        };
        let _ = writeln!(
            o,
            "| {}{control} | {} | {} | {} | {:.2} | {} | {} |",
            r.trace,
            list(&present),
            r.steady_windows,
            r.flagged_windows,
            r.forest,
            r.forest_kind.as_deref().unwrap_or("-"),
            list(&r.rules_kinds),
        );
    }
    let _ = writeln!(
        o,
        "\n### Generated against real healthy windows\n\nPer feature, the two-sample \
         Kolmogorov–Smirnov statistic between the healthy windows of the k-means training \
         scenarios (**generated**) and the steady windows of the {} real traces labelled free of \
         all six (**real**, each trace weighing the same), over the windows the model scores \
         (those showing the evidence of some anti-pattern); largest first. Medians weighted the \
         same way.\n\n\
         | feature | KS | generated median | real median |\n|---|---|---|---|",
        f.negatives
    );
    for g in feature_gaps(generated_healthy, &rows) {
        let _ = writeln!(
            o,
            "| `{}` | {:.2} | {:.3} | {:.3} |",
            g.feature, g.ks, g.generated_median, g.real_median
        );
    }
    Ok(())
}

fn list(l: &[&str]) -> String {
    if l.is_empty() {
        "-".into()
    } else {
        l.join(", ")
    }
}

fn names<const N: usize>(list: [&str; N]) -> String {
    list.join(", ")
}

fn held_out_section(o: &mut String, model: &Model, rows: &[Scored]) {
    let positive: Vec<bool> = rows.iter().map(|r| r.label.is_some()).collect();
    let anomalous: Vec<&Scored> = rows.iter().filter(|r| r.label.is_some()).collect();
    let share = |hit: &dyn Fn(&Scored) -> bool| {
        anomalous.iter().filter(|r| hit(r)).count() as f64 / anomalous.len().max(1) as f64
    };
    let id = |r: &Scored| r.label.map_or("", AntiPattern::id);
    let methods: [(&str, Vec<f32>, f64); 3] = [
        (
            "random forest (this model)",
            rows.iter().map(|r| r.forest).collect(),
            share(&|r| r.forest_kind == id(r)),
        ),
        (
            "rule detectors (finding confidence as score)",
            rows.iter().map(|r| r.rules).collect(),
            share(&|r| r.rules_kind == Some(id(r))),
        ),
        (
            "k-means (distance to the nearest centroid)",
            rows.iter().map(|r| r.kmeans).collect(),
            share(&|r| r.kmeans_kind == r.label),
        ),
    ];
    let _ = writeln!(
        o,
        "\n## Held-out windows\n\n{} windows, {} anomalous ({:.1}%).\n\n\
         | method | window AUROC | type accuracy (anomalous windows) |\n|---|---|---|",
        rows.len(),
        anomalous.len(),
        100.0 * anomalous.len() as f64 / rows.len().max(1) as f64
    );
    for (name, scores, accuracy) in &methods {
        let a = auroc(scores, &positive).map_or("n/a".into(), |a| format!("{a:.3}"));
        let _ = writeln!(o, "| {name} | {a} | {:.3} |", accuracy);
    }
    let flagged = |r: &Scored| model.flags(r.forest);
    let tp = rows
        .iter()
        .filter(|r| flagged(r) && r.label.is_some())
        .count();
    let fp = rows
        .iter()
        .filter(|r| flagged(r) && r.label.is_none())
        .count();
    let _ = writeln!(
        o,
        "\nFlagged (probability above {}): {tp} of {} anomalous windows (recall {:.3}), \
         {fp} normal windows (precision {:.3}).",
        model.threshold,
        anomalous.len(),
        tp as f64 / anomalous.len().max(1) as f64,
        tp as f64 / (tp + fp).max(1) as f64
    );
    let mut false_alarms: Vec<(&str, usize)> = Vec::new();
    for r in rows.iter().filter(|r| r.label.is_none() && flagged(r)) {
        match false_alarms.iter_mut().find(|(k, _)| *k == r.forest_kind) {
            Some((_, n)) => *n += 1,
            None => false_alarms.push((r.forest_kind.as_str(), 1)),
        }
    }
    false_alarms.sort_by_key(|a| std::cmp::Reverse(a.1));
    let alarms: Vec<String> = false_alarms
        .iter()
        .map(|(k, n)| format!("`{k}` {n}"))
        .collect();
    let _ = writeln!(
        o,
        "\nNormal windows flagged, by the type the model names: {}.\n",
        if alarms.is_empty() {
            "none".to_string()
        } else {
            alarms.join(", ")
        }
    );
    let _ = writeln!(
        o,
        "| type | windows | forest AUROC (this type against normal windows) | forest type accuracy |\n|---|---|---|---|"
    );
    for kind in AntiPattern::ALL {
        let (scores, positive): (Vec<f32>, Vec<bool>) = rows
            .iter()
            .filter(|r| r.label.is_none() || r.label == Some(kind))
            .map(|r| (r.forest, r.label.is_some()))
            .unzip();
        let of_kind: Vec<&&Scored> = anomalous.iter().filter(|r| r.label == Some(kind)).collect();
        let right = of_kind
            .iter()
            .filter(|r| r.forest_kind == kind.id())
            .count();
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {:.3} |",
            kind.id(),
            of_kind.len(),
            auroc(&scores, &positive).map_or("n/a".into(), |a| format!("{a:.3}")),
            right as f64 / of_kind.len().max(1) as f64
        );
    }
}

/// Scores 10,000 windows (the training windows, cycled) and reports the fastest of five runs.
fn speed_section(o: &mut String, model: &Model, rows: &[LabelledWindow]) {
    let windows: Vec<&[f32]> = rows
        .iter()
        .cycle()
        .take(10_000)
        .map(|r| r.features.values.as_slice())
        .collect();
    let mut best = f64::INFINITY;
    let mut flagged = 0;
    for _ in 0..5 {
        let start = Instant::now();
        flagged = windows
            .iter()
            .filter(|w| model.flags(model.score(w).probability))
            .count();
        best = best.min(start.elapsed().as_secs_f64());
    }
    let bytes = serde_json::to_string(model).map_or(0, |j| j.len());
    let _ = writeln!(
        o,
        "\n## Size and speed\n\nModel file: {bytes} bytes ({} + {} trees). Scoring {} windows \
         (both forests): {:.1} ms, fastest of 5 runs, in this build ({flagged} flagged).",
        model.anomaly.trees.len(),
        model.kind.trees.len(),
        windows.len(),
        best * 1e3
    );
}

/// Every `.json` and `.json.gz` file below `dir`.
fn trace_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for path in entries.flatten().map(|e| e.path()) {
        let name = path.to_string_lossy();
        if path.is_dir() {
            trace_files(&path, out);
        } else if name.ends_with(".json") || name.ends_with(".json.gz") {
            out.push(path);
        }
    }
}

/// Per real trace: windows, flagged windows and their types, the rules' injectable findings,
/// and whether the two agree on each of the six types (found by the rules ⇔ flagged by the model
/// in a steady-state window).
fn real_section(o: &mut String, model: &Model, dir: &Path) {
    let mut files = Vec::new();
    trace_files(dir, &mut files);
    files.sort();
    if files.is_empty() {
        let _ = writeln!(
            o,
            "\n## Real traces\n\nSKIPPED: no trace under {} (pass --real DIR).",
            dir.display()
        );
        return;
    }
    let _ = writeln!(
        o,
        "\n## Real traces\n\nAgreement on each of the six types: the rules find it in the trace \
         exactly when the model flags a steady-state window of that type.\n\n\
         | trace | windows | flagged | model's types | rules' types | agreement (of 6) |\n|---|---|---|---|---|---|"
    );
    let (mut agree, mut pairs, mut skipped, mut cpu_only) = (0, 0, 0, 0);
    // Per type: traces where both, only the model, only the rules find it.
    let mut per_type = [[0usize; 3]; AntiPattern::ALL.len()];
    for path in &files {
        let Ok(ingested) = read_file(path, IngestOptions::default()) else {
            skipped += 1;
            continue;
        };
        let t = &ingested.trace;
        if !ml::applies_to(t) {
            cpu_only += 1;
            continue;
        }
        let analyzed = AnalyzedTrace::new(&ingested);
        let a = analyzed.analysis();
        let features = analyzed.features();
        let mut model_types: Vec<&str> = Vec::new();
        let mut flagged = 0;
        for (w, f) in a.steps.windows().zip(&features) {
            let s = model.score(&f.values);
            if model.flags(s.probability) && !a.steps.steps[w.step].warmup {
                flagged += 1;
                if !model_types.contains(&s.kind) {
                    model_types.push(s.kind);
                }
            }
        }
        model_types.sort_unstable();
        let rule_types: Vec<&str> = analyzed
            .findings()
            .iter()
            .map(|f| f.id)
            .filter(|id| AntiPattern::parse(id).is_some())
            .collect();
        let mut same = 0;
        for (k, counts) in AntiPattern::ALL.iter().zip(&mut per_type) {
            match (model_types.contains(&k.id()), rule_types.contains(&k.id())) {
                (true, true) => counts[0] += 1,
                (true, false) => counts[1] += 1,
                (false, true) => counts[2] += 1,
                (false, false) => {}
            }
            same += usize::from(model_types.contains(&k.id()) == rule_types.contains(&k.id()));
        }
        agree += same;
        pairs += AntiPattern::ALL.len();
        let _ = writeln!(
            o,
            "| {} | {} | {flagged} | {} | {} | {same} |",
            path.strip_prefix(dir).unwrap_or(path).display(),
            features.len(),
            list(&model_types),
            list(&rule_types),
        );
    }
    let _ = writeln!(
        o,
        "\nOverall: {agree} of {pairs} (trace, type) pairs agree ({:.1}%). Left out: {cpu_only} \
         traces without GPU work (outside the detector's domain, `ml::applies_to`) and {skipped} \
         files that are not traces the engine reads.",
        100.0 * agree as f64 / pairs.max(1) as f64
    );
    let _ = writeln!(
        o,
        "\n| type | traces where both find it | the model only | the rules only |\n|---|---|---|---|"
    );
    for (k, [both, model_only, rules_only]) in AntiPattern::ALL.iter().zip(per_type) {
        let _ = writeln!(o, "| `{}` | {both} | {model_only} | {rules_only} |", k.id());
    }
}
