//! The hostile-input corpus: generators (no committed files) of forged and malformed share
//! links, hostile traces and hostile LLM replies. Every case must end, within a time bound, in
//! a clear message or in a result that is safe to show (the page's own words, quoted text), and
//! never panic. The same kinds of input are tried in Chromium by `e2e/security.test.mjs`, which
//! checks the DOM for markup.

mod links;

use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use flate2::write::ZlibEncoder;
use flate2::Compression;
use serde_json::{json, Value};
use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::detect;
use torchtraceap::llm::answer::parse_answer;
use torchtraceap::llm::protocol::{LlmError, Protocol, MAX_RESPONSE_BYTES};
use torchtraceap::llm::stream::{parse_response, StreamParser};
use torchtraceap::report::{is_hidden, Report};
use torchtraceap::share::{self, ShareOptions, SharedReport, QUOTED_MAX_CHARS};
use torchtraceap_dev::synth::{self, AntiPattern, Gpu, Injection, Model};

/// Text written to be shown as something else than text.
const HOSTILE_TEXT: &[&str] = &[
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "javascript:alert(1)",
    "[fix](javascript:alert(1))",
    "\u{202e}txt.exe\u{202c}",
    "zero\u{200b}width\u{2060}\u{feff}",
    "line\nbreak\r\u{0}\u{7f}\u{85}",
    "```\n# out of the fence",
    "\u{e0041}\u{e0042} tags",
];

/// A small generated trace's report with findings.
fn shared() -> SharedReport {
    let c = synth::Config {
        model: Model::ResNet50,
        gpu: Gpu::A100,
        training: true,
        steps: 5,
        batch: 64,
        seed: 9,
        // A host sync in every steady step and a DataLoader stall in 2 of the 4: both hold in
        // at least half of the steady steps, as a finding needs.
        injections: (1..5)
            .map(|step| Injection {
                pattern: AntiPattern::HostSync,
                step,
                severity: 0.9,
            })
            .chain((3..5).map(|step| Injection {
                pattern: AntiPattern::DataLoader,
                step,
                severity: 0.9,
            }))
            .collect(),
        noise: false,
    };
    let trace = ingest_bytes(
        synth::generate(&c).trace.as_bytes(),
        IngestOptions::default(),
    )
    .unwrap()
    .trace;
    let a = Analysis::new(&trace);
    let report = Report::new(&a, &detect::run(&a));
    assert!(report.findings.len() >= 2);
    SharedReport::new(report, share::fingerprint(&trace))
}

/// Every string of `v` with its path.
fn strings<'v>(v: &'v Value, path: String, out: &mut Vec<(String, &'v str)>) {
    match v {
        Value::String(s) => out.push((path, s)),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                strings(item, format!("{path}[{i}]"), out);
            }
        }
        Value::Object(fields) => {
            for (k, item) in fields {
                strings(item, format!("{path}.{k}"), out);
            }
        }
        _ => {}
    }
}

/// A decoded link is safe to show: the catalogue's words, every other text quoted.
fn assert_safe(got: &SharedReport, case: &str) {
    for f in &got.report.findings {
        let d = detect::detector(&f.id).unwrap_or_else(|| panic!("{case}: unknown {:?}", f.id));
        assert_eq!(f.title, d.title(), "{case}");
        assert!(
            d.fixes().iter().any(|x| x.snippet == f.fix_snippet),
            "{case}"
        );
        // The gate's words are the catalogue's too, whatever the link said.
        if let Some(g) = &f.gate {
            assert_eq!(g.quantity, d.threshold(), "{case}");
        }
    }
    let v = serde_json::to_value(got).unwrap();
    let mut all = Vec::new();
    strings(&v, "$".into(), &mut all);
    for (path, s) in all {
        if path.ends_with(".fix_snippet") {
            continue; // the catalogue's code, with its line breaks
        }
        assert!(
            !s.chars().any(is_hidden),
            "{case}: {path} shows a hidden character: {s:?}"
        );
        let catalogue = path.ends_with(".title")
            || path.ends_with(".summary")
            || path.ends_with(".fix")
            || path.ends_with(".impact_method")
            || path.ends_with(".gate.quantity");
        if !catalogue {
            assert!(
                s.chars().count() <= QUOTED_MAX_CHARS,
                "{case}: {path} is {} characters",
                s.chars().count()
            );
        }
    }
}

/// Runs `f` and checks it took at most `limit`.
fn timed<T>(case: &str, limit: Duration, f: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let out = f();
    assert!(
        started.elapsed() <= limit,
        "{case}: {:?}, over {limit:?}",
        started.elapsed()
    );
    out
}

/// Cases per kind, and how many of them were refused with a message.
#[derive(Default)]
struct Tally(Vec<(&'static str, usize, usize)>);

impl Tally {
    fn add(&mut self, kind: &'static str, refused: bool) {
        match self.0.iter_mut().find(|(k, _, _)| *k == kind) {
            Some(entry) => {
                entry.1 += 1;
                entry.2 += usize::from(refused);
            }
            None => self.0.push((kind, 1, usize::from(refused))),
        }
    }

    /// Prints one line per kind: `what` and what became of the cases not refused.
    fn print(&self, what: &str, otherwise: &str) {
        for (kind, n, refused) in &self.0 {
            eprintln!(
                "{what}, {kind}: {n} cases, {refused} refused with a message, {} {otherwise}",
                n - refused
            );
        }
    }
}

/// Forged and malformed links, by kind: (kind, case name, link).
fn hostile_links(base: &SharedReport) -> Vec<(&'static str, String, String)> {
    let v2 = links::facts_json(base);
    let legacy = {
        let mut v = serde_json::to_value(base).unwrap();
        v["version"] = json!(1);
        v
    };
    let mut cases = Vec::new();
    let mut add = |kind, name: String, link: String| cases.push((kind, name, link));
    let forge = |v: &Value, f: &dyn Fn(&mut Value)| {
        let mut v = v.clone();
        f(&mut v);
        serde_json::to_vec(&v).unwrap()
    };
    for (prefix, version) in [
        ("ttap0.", 0),
        ("ttap3.", 3),
        ("ttap18446744073709551616.", 99),
    ] {
        add(
            "wrong version",
            format!("prefix {version}"),
            links::link(prefix, &forge(&v2, &|_| {})),
        );
    }
    for version in [0u64, 3, u64::MAX] {
        add(
            "wrong version",
            format!("payload {version}"),
            links::link("ttap2.", &forge(&v2, &|v| v["version"] = json!(version))),
        );
    }
    for (k, id) in [
        "",
        "nope",
        "<script>",
        "DataLoader-Bottleneck",
        "\u{202e}cnys-tsoh",
    ]
    .into_iter()
    .enumerate()
    {
        add(
            "unknown ids",
            format!("finding id {k}"),
            links::link(
                "ttap2.",
                &forge(&v2, &|v| v["findings"][1]["id"] = json!(id)),
            ),
        );
        add(
            "unknown ids",
            format!("format 1 finding id {k}"),
            links::link(
                "ttap1.",
                &forge(&legacy, &|v| v["report"]["findings"][0]["id"] = json!(id)),
            ),
        );
        add(
            "unknown ids",
            format!("window type {k}"),
            links::link(
                "ttap2.",
                &forge(&v2, &|v| v["windows"][0]["predicted_type"] = json!(id)),
            ),
        );
    }
    for n in [share::MAX_LINK_BYTES + 1, 8 << 20] {
        add(
            "oversized",
            format!("{n} characters"),
            format!("ttap2.{}", "A".repeat(n)),
        );
    }
    let long = forge(&v2, &|v| {
        v["exporter"] = json!("x".repeat(share::MAX_TEXT_BYTES + 1))
    });
    add(
        "oversized",
        "one long text".into(),
        links::link("ttap2.", &long),
    );
    let many = forge(&v2, &|v| {
        v["trace"]["warmup_steps"] = json!(vec![1; share::MAX_ITEMS + 1])
    });
    add(
        "oversized",
        "one long list".into(),
        links::link("ttap2.", &many),
    );
    for mb in [2, 64, 256] {
        let mut z = ZlibEncoder::new(Vec::new(), Compression::best());
        let zeros = vec![b' '; 1 << 20];
        for _ in 0..mb {
            z.write_all(&zeros).unwrap();
        }
        let bomb = format!("ttap2.{}", URL_SAFE_NO_PAD.encode(z.finish().unwrap()));
        add("compression bombs", format!("{mb} MiB"), bomb);
    }
    for depth in [17, 100, 10_000, 1_000_000] {
        let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        add(
            "deep nesting",
            format!("{depth} arrays"),
            links::link("ttap2.", deep.as_bytes()),
        );
        let objects = forge(&v2, &|v| {
            let mut inner = json!(1);
            for _ in 0..depth.min(200) {
                inner = json!({ "a": inner });
            }
            v["findings"][0]["evidence"] = json!([inner]);
        });
        add(
            "deep nesting",
            format!("{depth} objects in a finding"),
            links::link("ttap2.", &objects),
        );
    }
    let text = serde_json::to_string(&v2).unwrap();
    for (k, number) in [
        "1e400",
        "-1e400",
        "18446744073709551616",
        "1e308",
        "-0",
        "123456789012345678901234567890",
    ]
    .into_iter()
    .enumerate()
    {
        for field in [
            "impact_ms_per_step",
            "confidence",
            "steady_steps",
            "count",
            "fix",
            "start_ms",
        ] {
            let pattern = format!("\"{field}\":");
            if let Some(at) = text.find(&pattern) {
                let from = at + pattern.len();
                let to = from + text[from..].find([',', '}']).unwrap();
                let changed = format!("{}{number}{}", &text[..from], &text[to..]);
                add(
                    "huge numbers",
                    format!("{field} = {number} ({k})"),
                    links::link("ttap2.", changed.as_bytes()),
                );
            }
        }
    }
    for nan in ["NaN", "Infinity", "-Infinity", "\"NaN\"", "null"] {
        let changed = text.replacen(
            "\"impact_ms_per_step\":",
            &format!("\"impact_ms_per_step\":{nan},\"x\":"),
            1,
        );
        add("NaN", nan.into(), links::link("ttap2.", changed.as_bytes()));
    }
    let mut paths = Vec::new();
    strings(&v2, "$".into(), &mut paths);
    let paths: Vec<String> = paths.into_iter().map(|(p, _)| p).collect();
    for (k, hostile) in HOSTILE_TEXT.iter().enumerate() {
        // Every text field at once, and each one alone.
        let every = forge(&v2, &|v| {
            for path in &paths {
                if let Some(slot) = pointer(v, path) {
                    *slot = json!(hostile);
                }
            }
            v["selected_finding"] = json!(hostile);
            v["findings"][0]["title"] = json!(hostile);
            v["findings"][0]["fix_snippet"] = json!(hostile);
        });
        add(
            "markup and hidden characters",
            format!("every field, text {k}"),
            links::link("ttap2.", &every),
        );
        for path in &paths {
            let one = forge(&v2, &|v| {
                if let Some(slot) = pointer(v, path) {
                    *slot = json!(hostile);
                }
            });
            add(
                "markup and hidden characters",
                format!("{path}, text {k}"),
                links::link("ttap2.", &one),
            );
        }
        let old = forge(&legacy, &|v| {
            for f in v["report"]["findings"].as_array_mut().unwrap() {
                for key in [
                    "title",
                    "summary",
                    "fix",
                    "fix_snippet",
                    "impact_method",
                    "severity",
                ] {
                    f[key] = json!(hostile);
                }
            }
        });
        add(
            "markup and hidden characters",
            format!("format 1 prose, text {k}"),
            links::link("ttap1.", &old),
        );
    }
    cases
}

/// The value at a `$.a[0].b` path.
fn pointer<'v>(v: &'v mut Value, path: &str) -> Option<&'v mut Value> {
    let pointer: String = path[1..]
        .replace('[', ".")
        .replace(']', "")
        .split('.')
        .filter(|p| !p.is_empty())
        .map(|p| format!("/{p}"))
        .collect();
    v.pointer_mut(&pointer)
}

#[test]
fn forged_and_malformed_links_are_refused_or_shown_safely() {
    let base = shared();
    let cases = hostile_links(&base);
    let mut tally = Tally::default();
    for (kind, name, link) in &cases {
        let case = format!("{kind}: {name}");
        let got = timed(&case, Duration::from_secs(5), || share::decode(link));
        let refused = match got {
            Ok(shared) => {
                assert_safe(&shared, &case);
                false
            }
            Err(e) => {
                let message = e.to_string();
                assert!(message.len() > 40, "{case}: {message}");
                assert!(!message.chars().any(is_hidden), "{case}: {message:?}");
                true
            }
        };
        tally.add(kind, refused);
    }
    tally.print("hostile links", "shown safely");
    let refused_all = |kind: &str| tally.0.iter().any(|(k, n, r)| *k == kind && n == r);
    for kind in [
        "wrong version",
        "unknown ids",
        "oversized",
        "compression bombs",
    ] {
        assert!(refused_all(kind), "every {kind} case is refused");
    }
}

/// A Kineto trace around `events` (JSON objects, comma-separated).
fn trace(events: &str) -> String {
    format!(
        r#"{{"deviceProperties": [{{"id": 0, "name": "NVIDIA A100"}}], "traceEvents": [
{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000}},
{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 100, "args": {{"device": 0, "stream": 7}}}},
{events}]}}"#
    )
}

/// Hostile traces, by kind: (kind, case name, bytes).
fn hostile_traces() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut cases: Vec<(&'static str, String, Vec<u8>)> = Vec::new();
    let x = |name: &str, ts: &str, dur: &str, args: &str| {
        format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": {name}, "pid": 1, "tid": 1, "ts": {ts}, "dur": {dur}, "args": {args}}}"#
        )
    };
    for mb in [1, 8, 60] {
        let name = json!("n".repeat(mb << 20)).to_string();
        cases.push((
            "multi-MB names and args",
            format!("{mb} MiB name"),
            trace(&x(&name, "5", "1", "{}")).into_bytes(),
        ));
        let args = format!(r#"{{"a": {}}}"#, json!("<script>".repeat((mb << 20) / 8)));
        cases.push((
            "multi-MB names and args",
            format!("{mb} MiB argument"),
            trace(&x("\"op\"", "5", "1", &args)).into_bytes(),
        ));
    }
    for n in [1_000, 1_000_000] {
        let flows: Vec<String> = (0..n)
            .map(|i| format!(r#"{{"ph": "{}", "cat": "ac2g", "name": "f", "id": 1, "pid": 1, "tid": 1, "ts": {}}}"#, if i % 2 == 0 { "s" } else { "f" }, i % 900))
            .collect();
        cases.push((
            "flows on one id",
            format!("{n} flows"),
            trace(&flows.join(",\n")).into_bytes(),
        ));
    }
    for ts in [
        "9223372036854775808",
        "1e20",
        "-9223372036854775809",
        "99999999999999999999999999",
        "1e400",
        "\"9e18\"",
    ] {
        cases.push((
            "timestamps beyond 2^63",
            ts.into(),
            trace(&x("\"op\"", ts, "1", "{}")).into_bytes(),
        ));
    }
    for dur in ["NaN", "\"NaN\"", "Infinity", "-1", "1e400", "null", "\"x\""] {
        cases.push((
            "NaN durations",
            dur.into(),
            trace(&x("\"op\"", "5", dur, "{}")).into_bytes(),
        ));
    }
    for depth in [1_000, 100_000] {
        let args = format!(r#"{{"a": {}1{}}}"#, "[".repeat(depth), "]".repeat(depth));
        cases.push((
            "deep nesting",
            format!("{depth} levels"),
            trace(&x("\"op\"", "5", "1", &args)).into_bytes(),
        ));
    }
    let dup = r#"{"ph": "X", "ph": "B", "cat": "cpu_op", "name": "a", "name": "<b>b</b>", "pid": 1, "tid": 1, "ts": 5, "ts": -5, "dur": 1, "dur": 2}"#;
    cases.push((
        "duplicate keys",
        "every key twice".into(),
        trace(dup).into_bytes(),
    ));
    let dup_top = format!(r#"{{"traceEvents": [], {}"#, &trace("")[1..]);
    cases.push((
        "duplicate keys",
        "traceEvents twice".into(),
        dup_top.into_bytes(),
    ));
    let plain = trace(&x("\"op\"", "5", "1", "{}"));
    cases.push((
        "BOM",
        "UTF-8 BOM".into(),
        [b"\xef\xbb\xbf".as_slice(), plain.as_bytes()].concat(),
    ));
    let utf16 = |big: bool| -> Vec<u8> {
        let bom: &[u8] = if big { b"\xfe\xff" } else { b"\xff\xfe" };
        let units = plain.encode_utf16().flat_map(|u| {
            if big {
                u.to_be_bytes()
            } else {
                u.to_le_bytes()
            }
        });
        bom.iter().copied().chain(units).collect()
    };
    cases.push(("UTF-16", "little-endian with BOM".into(), utf16(false)));
    cases.push(("UTF-16", "big-endian with BOM".into(), utf16(true)));
    for (k, hostile) in HOSTILE_TEXT.iter().enumerate() {
        let name = json!(hostile).to_string();
        let events = format!(
            "{},\n{}",
            x(&name, "5", "1", "{}"),
            x(
                "\"op\"",
                "6",
                "1",
                &format!(r#"{{"{}": {name}}}"#, hostile.replace('"', ""))
            )
        );
        cases.push((
            "markup and hidden characters",
            format!("text {k}"),
            trace(&events).into_bytes(),
        ));
    }
    cases
}

#[test]
fn hostile_traces_end_in_a_report_or_a_clear_message() {
    let cases = hostile_traces();
    let mut tally = Tally::default();
    for (kind, name, bytes) in &cases {
        let case = format!("{kind}: {name}");
        let refused = timed(&case, Duration::from_secs(120), || {
            match ingest_bytes(bytes, IngestOptions::default()) {
                Ok(ingested) => {
                    // The whole way to what the user sees: findings, report, Markdown, a link.
                    let a = Analysis::new(&ingested.trace);
                    let report = Report::new(&a, &detect::run(&a));
                    let markdown = report.to_markdown(name);
                    assert!(markdown.starts_with("# TorchTraceAP report"), "{case}");
                    let shared = SharedReport::new(report, share::fingerprint(&ingested.trace));
                    let encoded = share::encode(&shared, &ShareOptions::default()).unwrap();
                    assert_safe(&share::decode(&encoded.fragment).unwrap(), &case);
                    false
                }
                Err(e) => {
                    let message = e.to_string();
                    assert!(message.len() > 40, "{case}: {message}");
                    true
                }
            }
        });
        tally.add(kind, refused);
    }
    tally.print("hostile traces", "analyzed");
}

/// An SSE stream of `pieces`, then `[DONE]`.
fn sse(pieces: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in pieces {
        let line = json!({"choices": [{"delta": {"content": p}}]});
        out.extend_from_slice(format!("data: {line}\n\n").as_bytes());
    }
    out.extend_from_slice(b"data: [DONE]\n\n");
    out
}

/// Feeds `bytes` in pieces of `chunk`; the text and how it ended.
fn stream(bytes: &[u8], chunk: usize) -> (String, Result<(), LlmError>) {
    let mut p = StreamParser::new(Protocol::OpenAi);
    let mut text = String::new();
    for piece in bytes.chunks(chunk) {
        match p.feed(piece) {
            Ok(pieces) => text.extend(pieces),
            Err(e) => return (text, Err(e)),
        }
    }
    match p.finish() {
        Ok(pieces) => {
            text.extend(pieces);
            (text, Ok(()))
        }
        Err(e) => (text, Err(e)),
    }
}

#[test]
fn hostile_llm_replies_are_read_as_text_cut_or_refused() {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    let mut count = |kind| match counts.iter_mut().find(|(k, _)| *k == kind) {
        Some(c) => c.1 += 1,
        None => counts.push((kind, 1)),
    };
    // Markup in the answer: kept as the text it is (the page renders it as text).
    for hostile in HOSTILE_TEXT {
        for chunk in [1, 7, 4096] {
            let (text, end) = stream(&sse(&[hostile, " and more"]), chunk);
            assert!(
                end.is_ok() && text == format!("{hostile} and more"),
                "{hostile:?}"
            );
            count("markup in the answer");
        }
        let answer = parse_answer(
            &json!({"anti_pattern": hostile, "fix": hostile, "confidence": 0.5}).to_string(),
        );
        assert_eq!(answer.anti_pattern.as_deref(), Some(hostile.trim()));
        count("markup in the answer");
    }
    // Hundreds of megabytes: cut at the cap, having held at most the cap.
    for (chunk, total) in [(1 << 16, 300usize << 20), (1 << 20, 500 << 20)] {
        let piece = sse(&["y".repeat(chunk).as_str()]);
        let mut p = StreamParser::new(Protocol::OpenAi);
        let fed = timed("a huge reply", Duration::from_secs(30), || {
            (0..total / piece.len()).find(|_| p.feed(&piece).is_err())
        });
        assert!(
            fed.is_some_and(|n| n * piece.len() <= MAX_RESPONSE_BYTES),
            "{chunk}"
        );
        count("a reply of hundreds of MB");
    }
    let whole = format!(
        r#"{{"choices": [{{"message": {{"content": "{}"}}}}]}}"#,
        "z".repeat(MAX_RESPONSE_BYTES)
    );
    assert!(matches!(
        parse_response(Protocol::OpenAi, &whole),
        Err(LlmError::TooLong { .. })
    ));
    count("a reply of hundreds of MB");
    // A stream that never ends: without its end marker it is never a complete answer (the
    // transports' timeout stops the waiting: cli/tests/llm_server.rs, e2e).
    for cut in [0, 10, 100] {
        let full = sse(&["part one ", "part two"]);
        let (_, end) = stream(
            &full[..full.len() - "data: [DONE]\n\n".len() - cut.min(20)],
            5,
        );
        assert!(matches!(end, Err(LlmError::Malformed { .. })), "{end:?}");
        count("a stream that never ends");
    }
    // Invalid UTF-8 mid-stream: refused with a message, what came before kept.
    for bad in [&b"\xff"[..], b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"] {
        let mut bytes = sse(&["before "]);
        bytes.truncate(bytes.len() - "data: [DONE]\n\n".len());
        bytes.extend_from_slice(b"data: {\"choices\":[{\"delta\":{\"content\":\"");
        bytes.extend_from_slice(bad);
        bytes.extend_from_slice(b"\"}}]}\n\ndata: [DONE]\n\n");
        let (text, end) = stream(&bytes, 3);
        assert_eq!(text, "before ");
        let e = end.unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
        count("invalid UTF-8 mid-stream");
    }
    // A JSON answer with extra fields, nested and hostile: the known fields read, the rest
    // ignored.
    for extra in [
        json!({"__proto__": {"polluted": true}}),
        json!({"constructor": "<script>"}),
        json!({"anti_pattern_2": "x", "fix": {"nested": [1, 2]}}),
        json!({"confidence": "250%", "explanation": ["a", "b"]}),
    ] {
        let mut answer = json!({"anti_pattern": "DataLoader", "explanation": "e", "fix": "f", "confidence": 0.5});
        answer
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let got = parse_answer(&format!("Here it is:\n```json\n{answer}\n```"));
        assert_eq!(got.anti_pattern.as_deref(), Some("DataLoader"));
        assert!(
            got.confidence.is_none_or(|c| (0.0..=1.0).contains(&c)),
            "{got:?}"
        );
        count("JSON answer with extra fields");
    }
    // Answers where a JSON object seems to start everywhere: read in bounded time.
    for unit in ["{\"a\":\"", "{\"a\":[", "{{", "{\"a\":{\"b\":1,"] {
        let reply = unit.repeat(MAX_RESPONSE_BYTES / unit.len());
        let got = timed(unit, Duration::from_secs(5), || parse_answer(&reply));
        assert!(got.anti_pattern.is_none() && got.text.len() == reply.len());
        count("JSON answer with extra fields");
    }
    for (kind, n) in &counts {
        eprintln!("hostile LLM replies, {kind}: {n} cases");
    }
}

/// The files of `fuzz/<dir>`, if any.
fn fuzz_files(dir: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz").join(dir);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| {
            (
                e.path().display().to_string(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// The share-link and LLM-answer fuzz targets' seeds and regressions, read as the targets read
/// them (`fuzz/fuzz_targets/share_decode.rs`, `llm_answer.rs`): CI replays what the campaigns
/// keep, without nightly Rust.
#[test]
fn the_fuzz_seeds_and_regressions_replay() {
    let mut replayed = 0;
    for dir in ["share_seeds", "regressions/share_decode"] {
        for (name, bytes) in fuzz_files(dir) {
            let Some((&control, payload)) = bytes.split_first() else {
                continue;
            };
            let text = String::from_utf8_lossy(payload);
            let link = match control % 4 {
                0 => text.into_owned(),
                1 => format!("ttap2.{text}"),
                2 => links::link("ttap2.", payload),
                _ => format!("ttap2.{}", URL_SAFE_NO_PAD.encode(payload)),
            };
            if let Ok(shared) = timed(&name, Duration::from_secs(5), || share::decode(&link)) {
                assert_safe(&shared, &name);
            }
            replayed += 1;
        }
    }
    for dir in ["llm_seeds", "regressions/llm_answer"] {
        for (name, bytes) in fuzz_files(dir) {
            let Some((&control, payload)) = bytes.split_first() else {
                continue;
            };
            let protocol = [Protocol::OpenAi, Protocol::Ollama][usize::from(control & 1)];
            timed(&name, Duration::from_secs(5), || {
                let mut parser = StreamParser::new(protocol);
                for piece in payload.chunks(usize::from(control >> 1) + 1) {
                    if parser.feed(piece).is_err() {
                        break;
                    }
                }
                parse_answer(&String::from_utf8_lossy(payload))
            });
            replayed += 1;
        }
    }
    assert!(replayed >= 8, "{replayed} seeds: fuzz/ is missing");
}
