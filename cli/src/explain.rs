//! `ttap explain FILE --endpoint URL …`: the flagged windows' summaries sent to an LLM endpoint,
//! one request per window, the answers streamed to stdout.

use std::path::PathBuf;
use std::process::ExitCode;

use torchtraceap::llm::answer::parse_answer;
use torchtraceap::llm::check::{check, expected_of, Check};
use torchtraceap::llm::client::send;
use torchtraceap::llm::protocol::{without_key, Endpoint, Protocol};
use torchtraceap::llm::summary::{self, SummaryOptions};
use torchtraceap::AnalyzedTrace;

use torchtraceap_cli::read::read_trace;
use torchtraceap_cli::ProtocolArg;

#[derive(clap::Args)]
pub struct Args {
    /// A trace file: Kineto JSON, plain or gzip-compressed.
    file: PathBuf,
    /// The server's base URL (e.g. http://127.0.0.1:8080) or its full chat URL.
    #[arg(long, required_unless_present = "dry_run")]
    endpoint: Option<String>,
    #[arg(long, value_enum, default_value_t = ProtocolArg::Openai)]
    protocol: ProtocolArg,
    /// The model name the server serves.
    #[arg(long, default_value = "codellama")]
    model: String,
    /// Bearer API key (or the TTAP_LLM_API_KEY environment variable).
    #[arg(long, env = "TTAP_LLM_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Most estimated tokens (bytes / 4) of one request's messages.
    #[arg(long, default_value_t = summary::DEFAULT_BUDGET)]
    budget: usize,
    /// Most flagged windows sent (findings first, then unexplained regions).
    #[arg(long, default_value_t = summary::DEFAULT_MAX_WINDOWS)]
    max_windows: usize,
    /// Replace file paths, host names and the --redact-name names with placeholders.
    #[arg(long)]
    redact: bool,
    /// A name to hide (a module, model or project name); implies --redact. Repeatable.
    #[arg(long = "redact-name", value_name = "NAME")]
    redact_names: Vec<String>,
    /// Stream the answer as it is generated.
    #[arg(long)]
    stream: bool,
    /// Print the exact request bodies and send nothing.
    #[arg(long)]
    dry_run: bool,
    /// Seconds allowed for each request.
    #[arg(long, default_value_t = 120)]
    timeout: u64,
    /// Most tokens of each answer.
    #[arg(long, default_value_t = 1024)]
    max_tokens: u32,
    #[arg(long, default_value_t = 0.2)]
    temperature: f32,
    /// Do not ask for the answer's JSON schema (response_format, Ollama's format): for a
    /// server that ignores or mishandles it.
    #[arg(long)]
    no_schema: bool,
}

/// Each flagged window's request and answer; a request that fails is said (`error: `) and the
/// others still sent, with exit code 1.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let ingested = read_trace(&args.file)?;
    let analyzed = AnalyzedTrace::new(&ingested);
    let opts = SummaryOptions {
        budget: args.budget,
        max_windows: args.max_windows,
        redact: args.redact || !args.redact_names.is_empty(),
        module_names: args.redact_names.clone(),
    };
    let prompts = analyzed.prompts(&opts);
    if prompts.is_empty() {
        eprintln!(
            "{}: no flagged window (no finding, no unexplained region): nothing to explain",
            args.file.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut endpoint = Endpoint::new(
        args.endpoint.as_deref().unwrap_or("http://127.0.0.1:8080"),
        match args.protocol {
            ProtocolArg::Openai => Protocol::OpenAi,
            ProtocolArg::Ollama => Protocol::Ollama,
        },
        &args.model,
    );
    endpoint.api_key = args.api_key.clone();
    endpoint.stream = args.stream;
    endpoint.timeout_s = args.timeout;
    endpoint.max_tokens = args.max_tokens;
    endpoint.temperature = args.temperature;
    endpoint.structured = !args.no_schema;
    let mut failed = false;
    for (k, p) in prompts.iter().enumerate() {
        let body = endpoint.body(p);
        eprintln!(
            "== request {} of {}: {} [{}]: {} bytes, about {} tokens (window summary {} tokens, {} lines left out for the budget of {}) -> POST {}",
            k + 1,
            prompts.len(),
            p.title,
            p.key,
            body.len(),
            p.tokens,
            p.window_tokens,
            p.dropped_lines,
            args.budget,
            endpoint.chat_url()
        );
        if args.dry_run {
            crate::out(&format!("{body}\n"));
            continue;
        }
        crate::out(&format!("## {} [{}]\n", p.title, p.key));
        match send(&endpoint, p, crate::out) {
            Ok(reply) => {
                let a = parse_answer(&reply.text);
                let mut tail = String::from("\n");
                if let Some(e) = &reply.schema_refused {
                    let e = without_key(&e.to_string(), &endpoint);
                    tail.push_str(&format!(
                        "(the server refused the answer schema, {e}; asked again without it)\n"
                    ));
                }
                if a.structured() {
                    let field = |n: &str, v: &Option<String>| {
                        v.as_deref()
                            .map(|v| format!("- {n}: {v}\n"))
                            .unwrap_or_default()
                    };
                    tail.push_str(&field("anti-pattern", &a.anti_pattern));
                    tail.push_str(&field("explanation", &a.explanation));
                    tail.push_str(&field("fix", &a.fix));
                    if let Some(c) = a.confidence {
                        tail.push_str(&format!("- confidence: {c:.2}\n"));
                    }
                    tail.push_str(&checked(&check(&p.user, &a, expected_of(&p.key))));
                } else {
                    tail.push_str("(free text: the answer is not the JSON object asked for)\n");
                }
                crate::out(&format!("{tail}\n"));
            }
            Err(e) => {
                let e = without_key(&e.to_string(), &endpoint);
                eprintln!("error: request {} ({}): {e}", k + 1, p.key);
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// What the check of an answer says, as list items: the citations not in the evidence, and an
/// anti-pattern other than the finding's.
fn checked(c: &Check) -> String {
    let mut out = format!(
        "- evidence: {} of {} cited figures and names are in the request",
        c.found(),
        c.citations.len()
    );
    let missing: Vec<&str> = c.not_found().map(|c| c.text.as_str()).collect();
    if !missing.is_empty() {
        out.push_str(&format!("; not in the evidence: {}", missing.join(", ")));
    }
    out.push('\n');
    if let (true, Some(said), Some(expected)) = (c.differs, &c.anti_pattern, &c.expected) {
        out.push_str(&format!(
            "- the answer names `{said}`, not the finding's `{expected}`\n"
        ));
    }
    out
}
