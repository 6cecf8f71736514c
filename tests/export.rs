//! Exports that cannot be broken out of: the Markdown export of a report whose every string is
//! hostile, read back by a CommonMark parser (GitHub's tables and strikethrough on), has exactly
//! the structure of a benign one and shows each string as typed; the JSON export round-trips
//! exactly.

mod sample;

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use torchtraceap::report::{md_code, md_fence, md_text, visible, Report, UnexplainedEntry};

/// The sample's report, with one unexplained region more.
fn sample_report() -> Report {
    let mut report = sample::sample_report();
    // The sample's windows are all explained: one region more, so that its line is tested too.
    report.unexplained.push(UnexplainedEntry {
        step: 3,
        phase: "forward".into(),
        start_ms: 1.0,
        duration_ms: 2.0,
        anomaly_probability: 0.9,
        predicted_type: "host-device-sync".into(),
    });
    report
}

/// Strings written to break out of wherever they are put.
const HOSTILE: &[&str] = &[
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[click](javascript:alert(1)) ![x](https://evil.example/p.png)",
    "a | b | c",
    "```\n# Heading from a trace\n```",
    "````` fenced",
    "line one\n\n## injected heading\n- injected item",
    "x\r# carriage return heading",
    "*em* **strong** ~~gone~~ _u_ `code` \\ &amp; &lt;",
    "`` two ticks ``` three",
    "\u{202e}evil\u{200b}zero\u{feff}bom",
    "   ",
];

/// The report with every string replaced by hostile text (`k` picks which).
fn hostile_report(k: usize) -> Report {
    let h = |i: usize| HOSTILE[(k + i) % HOSTILE.len()].to_string();
    let mut r = sample_report();
    r.trace.era = h(0);
    r.trace.devices = vec![h(1)];
    for (i, f) in r.findings.iter_mut().enumerate() {
        (f.id, f.title, f.summary, f.severity) = (h(i), h(i + 1), h(i + 2), h(i + 3));
        (f.impact_method, f.fix, f.fix_snippet) = (h(i + 4), h(i + 5), h(i + 6));
        for e in &mut f.evidence {
            e.what = h(i + 7);
            e.events = vec![h(i + 8), h(i + 9)];
        }
    }
    for (i, w) in r.windows.iter_mut().enumerate() {
        w.phase = h(i);
        w.predicted_type = w.predicted_type.as_ref().map(|_| h(i + 1));
    }
    for (i, u) in r.unexplained.iter_mut().enumerate() {
        (u.phase, u.predicted_type) = (h(i), h(i + 1));
    }
    r
}

/// The shape of a Markdown document: its block and inline structure, without the text.
fn shape(markdown: &str) -> Vec<String> {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    Parser::new_ext(markdown, options)
        .filter_map(|e| match e {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(lang))) => {
                Some(format!("code block {lang}"))
            }
            Event::Start(tag) => Some(format!("{tag:?}")),
            Event::End(TagEnd::CodeBlock) => Some("end code block".into()),
            Event::End(tag) => Some(format!("end {tag:?}")),
            Event::Html(h) | Event::InlineHtml(h) => Some(format!("HTML {h}")),
            Event::Text(_) | Event::Code(_) => None,
            other => Some(format!("{other:?}")),
        })
        // Text split differently is the same shape.
        .collect()
}

#[test]
fn hostile_strings_cannot_change_the_markdown_s_structure() {
    let benign = sample_report();
    assert!(!benign.findings.is_empty() && !benign.unexplained.is_empty());
    let want = shape(&benign.to_markdown("trace.json"));
    for (k, title) in HOSTILE.iter().enumerate() {
        let report = hostile_report(k);
        let markdown = report.to_markdown(title);
        let got = shape(&markdown);
        assert_eq!(got, want, "hostile set {k}:\n{markdown}");
        // GitHub splits table cells at every unescaped `|`, code spans included (a reader that
        // does not, like the one above, cannot see that): each row has its header's count.
        let pipes = |line: &str| line.matches('|').count() - line.matches("\\|").count();
        for table in markdown.split("\n\n").filter(|b| b.starts_with('|')) {
            let header = pipes(table.lines().next().unwrap());
            for row in table.lines() {
                assert_eq!(pipes(row), header, "hostile set {k}: {row}");
            }
        }
    }
}

/// The text a parser reads back from `markdown`, code included.
fn read_back(markdown: &str) -> String {
    Parser::new_ext(
        markdown,
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH,
    )
    .filter_map(|e| match e {
        Event::Text(t) | Event::Code(t) => Some(t.into_string()),
        Event::SoftBreak => Some("\n".into()),
        _ => None,
    })
    .collect()
}

#[test]
fn each_escape_reads_back_as_typed() {
    for text in HOSTILE {
        let (mut shown, mut lines) = (String::new(), String::new());
        for c in text.chars() {
            visible(c, &mut shown);
            match c {
                '\n' => lines.push(c),
                _ => visible(c, &mut lines),
            }
        }
        assert_eq!(read_back(&md_text(text)), shown, "text {text:?}");
        if !text.trim().is_empty() {
            assert_eq!(read_back(&md_code(text)), shown, "code {text:?}");
        }
        let fenced = md_fence(text, "python");
        let back: String = Parser::new(&fenced)
            .filter_map(|e| match e {
                Event::Text(t) => Some(t.into_string()),
                _ => None,
            })
            .collect();
        assert_eq!(back, format!("{lines}\n"), "fence {text:?}");
    }
}

#[test]
fn the_json_export_round_trips_exactly() {
    for k in 0..HOSTILE.len() {
        let mut report = hostile_report(k);
        report.trace.mean_step_ms = 0.1 + 0.2;
        if let Some(f) = report.findings.first_mut() {
            f.impact_ms_per_step = f64::MIN_POSITIVE;
            f.impact_pct_of_step = 1e308;
            f.confidence = f32::EPSILON;
        }
        let text = serde_json::to_string_pretty(&report).unwrap();
        let back = Report::from_json(&text).unwrap();
        assert_eq!(back, report, "hostile set {k}");
        assert_eq!(serde_json::to_string_pretty(&back).unwrap(), text);
    }
}
