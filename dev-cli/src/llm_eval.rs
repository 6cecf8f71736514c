//! `ttap-dev llm-eval --endpoint URL --model NAME [SET]`: the requests about a labelled set of
//! windows sent to each model, and a table of how the answers did (`llm::eval`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;

use torchtraceap::internals::detect::scoring::RealLabels;
use torchtraceap::llm::client::send;
use torchtraceap::llm::protocol::{without_key, Endpoint, Protocol};
use torchtraceap::llm::summary::DEFAULT_BUDGET;
use torchtraceap_dev::llm::eval::{
    self, grade, row, Case, Graded, Skipped, Source, Tally, UnexplainedLabels, TABLE_HEADER,
};

use torchtraceap_cli::ProtocolArg;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Set {
    /// The generator's six anti-patterns, one window each.
    Generated,
    /// The shared real traces' present labels (models/real-labels.json).
    Real,
    /// Both.
    All,
    /// The real windows the window model flags and no rule explains, labelled by hand
    /// (models/unexplained-labels.json): a diagnosis only the LLM can give.
    Unexplained,
}

#[derive(clap::Args)]
pub struct Args {
    /// Which labelled windows to ask about.
    #[arg(value_enum, default_value_t = Set::All)]
    set: Set,
    /// The server's base URL (e.g. http://127.0.0.1:8080) or its full chat URL.
    #[arg(long)]
    endpoint: String,
    /// A model the server serves; repeat it to compare models (one table row each).
    #[arg(long = "model", value_name = "NAME", required = true)]
    models: Vec<String>,
    #[arg(long, value_enum, default_value_t = ProtocolArg::Openai)]
    protocol: ProtocolArg,
    /// Bearer API key (or the TTAP_LLM_API_KEY environment variable).
    #[arg(long, env = "TTAP_LLM_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// The hand labels of the real traces.
    #[arg(long, default_value = "models/real-labels.json")]
    labels: PathBuf,
    /// The hand labels of the unexplained windows.
    #[arg(long, default_value = "models/unexplained-labels.json")]
    unexplained_labels: PathBuf,
    /// Also write every request and answer, graded, as JSON lines to this file.
    #[arg(long, value_name = "FILE")]
    answers: Option<PathBuf>,
    /// The folder the labels' trace paths are relative to.
    #[arg(long, env = "TTAP_SHARED_TRACES", default_value = "../shared/traces")]
    traces: PathBuf,
    /// Ask about the first N windows of the set only.
    #[arg(long)]
    limit: Option<usize>,
    /// Most estimated tokens (bytes / 4) of one request's messages.
    #[arg(long, default_value_t = DEFAULT_BUDGET)]
    budget: usize,
    /// Most tokens of each answer.
    #[arg(long, default_value_t = 1024)]
    max_tokens: u32,
    /// Seconds allowed for each request.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
    /// 0 by default: the same answers each run, where the server is deterministic.
    #[arg(long, default_value_t = 0.0)]
    temperature: f32,
    /// Do not ask for the answer's JSON schema: how the model does on its own.
    #[arg(long)]
    no_schema: bool,
}

/// The table of grades; exit code 1 where no request was answered.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let (mut cases, mut skipped): (Vec<Case>, Vec<Skipped>) = (Vec::new(), Vec::new());
    if matches!(args.set, Set::Generated | Set::All) {
        let (c, s) = eval::generated(args.budget);
        cases.extend(c);
        skipped.extend(s);
    }
    if matches!(args.set, Set::Real | Set::All | Set::Unexplained) && !args.traces.is_dir() {
        eprintln!(
            "SKIPPED: the real traces: {} is not a folder (pass --traces DIR or set TTAP_SHARED_TRACES)",
            args.traces.display()
        );
    } else if matches!(args.set, Set::Real | Set::All) {
        let labels = read(
            &args.labels,
            "the labels of the real traces",
            "--labels",
            |t| Ok(RealLabels::from_json(t)?),
        )?;
        let (c, s) = eval::real(&labels, &args.traces, args.budget);
        cases.extend(c);
        skipped.extend(s);
    } else if args.set == Set::Unexplained {
        let labels: UnexplainedLabels = read(
            &args.unexplained_labels,
            "the labels of the unexplained windows",
            "--unexplained-labels",
            |t| Ok(serde_json::from_str(t)?),
        )?;
        let (c, s) = eval::unexplained(&labels, &args.traces, args.budget);
        cases.extend(c);
        skipped.extend(s);
    }
    for s in &skipped {
        eprintln!("skipped {}: {}", s.name, s.why);
    }
    if let Some(n) = args.limit {
        cases.truncate(n);
    }
    if cases.is_empty() {
        anyhow::bail!("no labelled window to ask about (see the skipped ones above)");
    }
    let count = |source| cases.iter().filter(|c| c.source == source).count();
    let (generated, real) = (count(Source::Generated), count(Source::Real));
    let mut table = String::from(TABLE_HEADER);
    let mut refused = Vec::new();
    let mut none_answered = true;
    let mut answers = args
        .answers
        .as_ref()
        .map(|path| {
            let file = std::fs::File::create(path).with_context(|| {
                format!(
                    "the answers' file, {} (pass another --answers FILE)",
                    path.display()
                )
            })?;
            anyhow::Ok(std::io::BufWriter::new(file))
        })
        .transpose()?;
    for model in &args.models {
        let endpoint = endpoint(args, model);
        let mut tally = Tally::default();
        for (k, case) in cases.iter().enumerate() {
            let started = Instant::now();
            let result = send(&endpoint, &case.prompt, |_| {});
            let latency = started.elapsed();
            let graded = match result {
                Ok(reply) => {
                    let g = grade(
                        case,
                        &reply.text,
                        latency,
                        reply.usage,
                        reply.schema_refused.is_some(),
                    );
                    eprintln!(
                        "[{model}] {}/{} {}: {:.2} s, names {}, {} of {} citations in the evidence, {} misread{}{}{}{}",
                        k + 1,
                        cases.len(),
                        case.name,
                        latency.as_secs_f64(),
                        g.check.anti_pattern.as_deref().unwrap_or("nothing"),
                        g.check.found(),
                        g.check.citations.len(),
                        g.check.misread().count(),
                        if g.check.valid { ", valid" } else { ", not the schema's object" },
                        if g.key_figure { ", cites the key figure" } else { "" },
                        match g.check.fix_named {
                            Some(true) => ", the fix names the rule's change",
                            Some(false) => ", the fix names another change",
                            None => "",
                        },
                        match g.check.call_site_named {
                            Some(true) => ", names the call site",
                            Some(false) => ", does not name the call site",
                            None => "",
                        },
                    );
                    if let Some(w) = &mut answers {
                        record(w, model, case, &reply.text, &g)?;
                    }
                    Some(g)
                }
                Err(e) => {
                    eprintln!(
                        "[{model}] {}/{} {}: error: {}",
                        k + 1,
                        cases.len(),
                        case.name,
                        without_key(&e.to_string(), &endpoint)
                    );
                    None
                }
            };
            tally.add(case, graded);
        }
        none_answered &= tally.graded.is_empty();
        if tally.schema_refused() > 0 {
            refused.push(format!(
                "{model}: the server refused the answer schema for {} request(s); they were sent again without it",
                tally.schema_refused()
            ));
        }
        table.push_str(&row(model, &tally));
    }
    crate::out(&format!(
        "{} labelled windows ({generated} generated, {real} real), {} skipped; endpoint {}\n\n{table}",
        cases.len(),
        skipped.len(),
        args.endpoint
    ));
    for r in refused {
        crate::out(&format!("\n{r}\n"));
    }
    if none_answered {
        eprintln!("error: no request was answered (see the errors above)");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// A labels file read and parsed by `parse`; an error names it, and the `flag` to pass another.
fn read<T>(
    path: &std::path::Path,
    what: &str,
    flag: &str,
    parse: impl FnOnce(&str) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    std::fs::read_to_string(path)
        .map_err(anyhow::Error::from)
        .and_then(|t| parse(&t))
        .with_context(|| format!("{what}, {} (pass {flag} FILE)", path.display()))
}

/// One graded answer as a JSON line of the `--answers` file.
fn record(
    w: &mut impl std::io::Write,
    model: &str,
    case: &Case,
    answer: &str,
    g: &Graded,
) -> anyhow::Result<()> {
    let line = serde_json::json!({
        "model": model,
        "case": case.name,
        "accepted": case.accepted,
        "request": case.prompt.user,
        "answer": answer,
        "named": g.check.anti_pattern,
        "right": g.right,
        "valid": g.check.valid,
        "citations_found": g.check.found(),
        "citations": g.check.citations.len(),
        "figures": g.figures_found(),
        "misread": g.check.misread().count(),
        "key_figure": g.key_figure,
        "fix_named": g.check.fix_named,
        "call_site_named": g.check.call_site_named,
        "latency_s": g.latency.as_secs_f64(),
        "usage": g.usage,
    });
    writeln!(w, "{line}").context("writing the answers' file")?;
    w.flush().context("writing the answers' file")
}

fn endpoint(args: &Args, model: &str) -> Endpoint {
    let mut e = Endpoint::new(
        &args.endpoint,
        match args.protocol {
            ProtocolArg::Openai => Protocol::OpenAi,
            ProtocolArg::Ollama => Protocol::Ollama,
        },
        model,
    );
    e.api_key = args.api_key.clone();
    e.stream = false;
    e.timeout_s = args.timeout;
    e.max_tokens = args.max_tokens;
    e.temperature = args.temperature;
    e.structured = !args.no_schema;
    e
}
