//! An answer checked against what was sent: every figure and event name its explanation cites,
//! found in the request's text or not ("not in the evidence"), and whether the anti-pattern it
//! names is the finding's. Pure; the CLI (`ttap explain`, `ttap-dev llm-eval`) and the page use it.
//!
//! **Figures** are numbers at a word boundary with an optional unit: times (`ns`, `µs`/`us`,
//! `ms`, `s`, and the words), percentages, bytes (`B` to `GiB`) or none (counts, `×`). One is
//! found when the request holds a number of the same kind that equals it at the precision
//! written (`12.3 ms` matches `12.345 ms`, not `12.4 ms`; `12345 µs` matches `12.345 ms`),
//! or either of the two has no unit and they are equal by face value (the request writes
//! `compute 10.100` for milliseconds). **Names** are the tokens that look like a trace's
//! events: `aten::mm`, `cudaStreamSynchronize`, `ncclAllReduce`, kernel names (`…kernel…`,
//! `…gemm…`, `…Functor…`), `ProfilerStep#3`, `Optimizer.step`, and any code span without
//! spaces or `=`; one is found when the request holds it (case aside).
//!
//! Only the explanation is checked: it is what the answer is asked to back with the numbers;
//! the fix proposes new values (`num_workers=8`) that no trace holds.

use std::ops::Range;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::answer::{anti_pattern_ids, follows_schema, Answer, NO_ANTI_PATTERN};
use super::figure::{numbers, unit_of, Number, Unit};
use super::quantity::{self, Quantity};

/// What a citation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    Figure,
    Name,
}

/// One figure or name the explanation cites.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Citation {
    pub kind: Kind,
    /// As written, with its unit.
    pub text: String,
    /// Its bytes in the explanation.
    pub at: Range<usize>,
    /// Whether the request's text holds it.
    pub found: bool,
    /// Where the request holds the figure only as another quantity than the one the answer
    /// gives it (`quantity`): what it was cited as and what the request gives it as.
    #[serde(default)]
    pub misread: Option<String>,
}

/// An answer checked against its request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// The explanation's citations, in order, not overlapping.
    pub citations: Vec<Citation>,
    /// The anti-pattern the answer names, as a detector id (or `none`) when it names one of
    /// them, else as written; `None` when it names none.
    pub anti_pattern: Option<String>,
    /// The finding's id, when the request is about a finding.
    pub expected: Option<String>,
    /// The answer names an anti-pattern other than the finding's.
    pub differs: bool,
    /// The answer is exactly the schema's object (`answer::follows_schema`).
    pub valid: bool,
    /// Whether the answer's fix names a change the finding's own fix names (its
    /// `detect::Fix::terms`): `None` when the request is about no finding, or the answer has
    /// no fix.
    #[serde(default)]
    pub fix_named: Option<bool>,
    /// Whether the answer names the user's line of code the request gives (its file and line,
    /// from the trace's Python stack: `summary`'s "to apply at `train.py(41): main`"): `None`
    /// when the request gives none.
    #[serde(default)]
    pub call_site_named: Option<bool>,
}

impl Check {
    /// The citations the request's text does not hold.
    pub fn not_found(&self) -> impl Iterator<Item = &Citation> {
        self.citations.iter().filter(|c| !c.found)
    }

    /// The figures cited as another quantity than the request gives them as.
    pub fn misread(&self) -> impl Iterator<Item = &Citation> {
        self.citations.iter().filter(|c| c.misread.is_some())
    }

    /// How many citations the request's text holds.
    pub fn found(&self) -> usize {
        self.citations.iter().filter(|c| c.found).count()
    }

    /// Whether the explanation cites `figure` (a value in `unit`, sent at `decimals`).
    pub fn cites(&self, figure: f64, unit: &str, decimals: u32) -> bool {
        let Some(key) = unit_of(unit) else {
            return false;
        };
        let sent = Number {
            value: figure,
            decimals,
            unit: Some(key),
        };
        self.citations
            .iter()
            .filter(|c| c.kind == Kind::Figure)
            .filter_map(|c| numbers(&c.text).into_iter().next())
            .any(|(_, n)| n.unit.is_some() && n.matches(&sent))
    }
}

/// The request key of a finding's question (`finding:<id>`) → its id.
pub fn expected_of(key: &str) -> Option<&str> {
    key.strip_prefix("finding:")
}

/// The user messages of a request body, joined: the evidence the answer may cite (the system
/// message holds only instructions).
pub fn sent_text(body: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return String::new();
    };
    let Some(messages) = v.get("messages").and_then(Value::as_array) else {
        return String::new();
    };
    messages
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .filter_map(|m| m.get("content").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks `answer` (whose raw text is `answer.text`) against `sent` (what the request's user
/// messages said), for a finding `expected` when there is one.
pub fn check(sent: &str, answer: &Answer, expected: Option<&str>) -> Check {
    let anti_pattern = answer.anti_pattern.as_deref().map(|said| {
        pattern_id(said)
            .map(str::to_string)
            .unwrap_or_else(|| said.to_string())
    });
    let differs = match (&anti_pattern, expected) {
        (Some(said), Some(e)) => said != e,
        _ => false,
    };
    Check {
        citations: answer
            .explanation
            .as_deref()
            .map(|e| citations(sent, e))
            .unwrap_or_default(),
        anti_pattern,
        fix_named: expected
            .zip(answer.fix.as_deref())
            .map(|(id, fix)| names_the_fix(id, fix)),
        call_site_named: call_site_sent(sent).map(|(file, line)| {
            let said = format!(
                "{} {}",
                answer.explanation.as_deref().unwrap_or_default(),
                answer.fix.as_deref().unwrap_or_default()
            );
            let base = file.rsplit('/').next().unwrap_or(file);
            said.contains(base)
                && numbers(&said)
                    .iter()
                    .any(|(_, n)| n.value == f64::from(line))
        }),
        expected: expected.map(str::to_string),
        differs,
        valid: follows_schema(&answer.text),
    }
}

/// The file and line of the user's code the request gives (`to apply at `file.py(41): f``).
fn call_site_sent(sent: &str) -> Option<(&str, u32)> {
    let (_, rest) = sent.split_once("to apply at `")?;
    let (site, _) = rest.split_once('`')?;
    super::call_site::frame(site)
}

/// Whether `fix` names one of the changes the fixes of detector `id` name (case aside).
fn names_the_fix(id: &str, fix: &str) -> bool {
    let fix = fix.to_lowercase();
    crate::detect::DETECTORS
        .iter()
        .filter(|d| d.id() == id)
        .flat_map(|d| d.fixes())
        .flat_map(|f| f.terms)
        .any(|term| fix.contains(&term.to_lowercase()))
}

/// The detector id (or `none`) that `said` names: an id in any case or spelling
/// (`Host_Device_Sync`), else words the ML labels know (`ml::labels::pattern_of`).
pub(crate) fn pattern_id(said: &str) -> Option<&'static str> {
    let spelled: String = said
        .trim()
        .to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '-' })
        .collect();
    let ids = anti_pattern_ids();
    ids.iter()
        .find(|id| **id == spelled)
        .copied()
        .or_else(|| crate::ml::labels::pattern_of(said))
        .map(|p| {
            if p == crate::ml::labels::NOT_AN_ANTI_PATTERN {
                NO_ANTI_PATTERN
            } else {
                p
            }
        })
}

/// Every name and figure `explanation` cites, each marked found in `sent` or not.
pub fn citations(sent: &str, explanation: &str) -> Vec<Citation> {
    let sent_lower = sent.to_lowercase();
    let evidence: Vec<(Number, Option<Quantity>)> = numbers(sent)
        .into_iter()
        .map(|(at, n)| {
            let count = n.decimals == 0 && matches!(n.unit, None | Some(Unit::Times));
            (n, quantity::in_request(sent, &at, count))
        })
        .collect();
    let spans = code_spans(explanation);
    let mut out: Vec<Citation> = names(explanation, &spans)
        .into_iter()
        .map(|at| {
            let text = explanation[at.clone()].to_string();
            Citation {
                kind: Kind::Name,
                found: sent_lower.contains(&text.to_lowercase()),
                text,
                at,
                misread: None,
            }
        })
        .collect();
    for (at, n) in numbers(explanation) {
        let overlaps = |r: &Range<usize>| r.start < at.end && at.start < r.end;
        if out.iter().any(|c| overlaps(&c.at)) || spans.iter().any(overlaps) {
            continue;
        }
        let sent_as: Vec<Option<Quantity>> = evidence
            .iter()
            .filter(|(e, _)| n.matches(e))
            .map(|(_, q)| *q)
            .collect();
        let timed = matches!(n.unit, Some(Unit::Time(_) | Unit::Percent | Unit::Bytes(_)));
        out.push(Citation {
            kind: Kind::Figure,
            text: explanation[at.clone()].to_string(),
            found: !sent_as.is_empty(),
            misread: quantity::misread(quantity::in_answer(explanation, &at), timed, &sent_as),
            at,
        });
    }
    out.sort_by_key(|c| c.at.start);
    out
}

/// Whether `token` looks like the name of a trace event.
fn looks_like_event(token: &str) -> bool {
    let lower = token.to_lowercase();
    let starts_upper_after = |prefix: &str| {
        token
            .strip_prefix(prefix)
            .and_then(|r| r.chars().next())
            .is_some_and(|c| c.is_ascii_uppercase())
    };
    let dotted = token.split_once('.').is_some_and(|(a, b)| {
        a.starts_with(|c: char| c.is_ascii_uppercase() || c == '_')
            && b.starts_with(|c: char| c.is_alphabetic() || c == '_')
    });
    // An identifier, not a word of prose (`kernels`, `GEMMs`): an underscore, a template, a
    // digit or an inner capital.
    let identifier = token.contains(['_', '<'])
        || token.contains(|c: char| c.is_ascii_digit())
        || (token.chars().skip(1).any(|c| c.is_ascii_uppercase())
            && token.chars().any(|c| c.is_ascii_lowercase()));
    token.contains("::")
        || token.find('#').is_some_and(|k| k > 0)
        || starts_upper_after("cuda")
        || starts_upper_after("cu")
        || starts_upper_after("hip")
        || lower.starts_with("nccl")
        || (identifier
            && ["kernel", "gemm", "functor"]
                .iter()
                .any(|k| lower.contains(k)))
        || dotted
}

/// The code spans of `text` (between backticks), backticks included.
fn code_spans(text: &str) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(open) = text[from..].find('`').map(|k| from + k) {
        let Some(close) = text[open + 1..].find('`').map(|k| open + 1 + k) else {
            break;
        };
        spans.push(open..close + 1);
        from = close + 1;
    }
    spans
}

/// The byte ranges of the names `text` cites: code spans without spaces, `=` or `(`, and
/// tokens outside them that look like events.
fn names(text: &str, spans: &[Range<usize>]) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = spans
        .iter()
        .map(|r| r.start + 1..r.end - 1)
        .filter(|r| {
            let inner = &text[r.clone()];
            !inner.is_empty()
                && !inner.contains(|c: char| c.is_whitespace() || c == '=' || c == '(')
                && numbers(inner)
                    .first()
                    .is_none_or(|(n, _)| n.len() != inner.len())
        })
        .collect();
    let separator = |c: char| c.is_whitespace() || ",;()[]{}\"'`".contains(c);
    let mut start = None;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (start, separator(c)) {
            (None, false) => start = Some(i),
            (Some(s), true) => {
                start = None;
                if spans.iter().any(|r| r.contains(&s)) {
                    continue;
                }
                let token = text[s..i].trim_end_matches(['.', ':', '!', '?']);
                if token.len() > 2 && looks_like_event(token) {
                    out.push(s..s + token.len());
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::answer::parse_answer;

    const SENT: &str = "Flagged by rule `dataloader-bottleneck` (DataLoader bottleneck): the GPU waits for the next batch. Severity high, about 12.35 ms per step (41.2% of the step), confidence 0.90.\n\
Window: step 12, window 1 of 4 (data loading), 0.000–12.345 ms into a 30.000 ms step (12.345 ms long).\n\
GPU 0: busy 0.512 ms (4% of the window; compute 0.400, communication 0.000 of which exposed 0.000, memcpy 0.112, memset 0.000).\n\
Host: 162 kernels (150 under 10 µs, 1.204 ms), median launch delay 5.2 µs, 1 synchronize calls, DataLoader 11.900 ms.\n\
Memory: 2 HostToDevice copies (Pageable host memory): 1536000 bytes, 0.112 ms.\n\
Operator #1: enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__ — 11.900 ms total, 1×\n\
Kernel #1: void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>> — 0.300 ms GPU time launched from the window, 162×\n";

    fn answer(explanation: &str) -> Answer {
        parse_answer(
            &serde_json::json!({
                "anti_pattern": "dataloader-bottleneck",
                "explanation": explanation,
                "fix": "DataLoader(num_workers=8, pin_memory=True)",
                "confidence": 0.8,
            })
            .to_string(),
        )
    }

    fn found(explanation: &str) -> Vec<(String, bool)> {
        check(SENT, &answer(explanation), Some("dataloader-bottleneck"))
            .citations
            .into_iter()
            .map(|c| (c.text, c.found))
            .collect()
    }

    #[test]
    fn figures_sent_are_found_at_the_precision_written() {
        let cited = found(
            "The step waits 12.3 ms (12345 µs, about 41%) in _MultiProcessingDataLoaderIter.__next__; \
             DataLoader takes 11.9 ms of the 30 ms step, 1,536,000 bytes (1.5 MB) copied, 162 kernels.",
        );
        assert_eq!(
            cited,
            [
                ("12.3 ms", true),
                ("12345 µs", true),
                ("41%", true),
                ("_MultiProcessingDataLoaderIter.__next__", true),
                ("11.9 ms", true),
                ("30 ms", true),
                ("1,536,000 bytes", true),
                ("1.5 MB", true),
                ("162", true),
            ]
            .map(|(t, f)| (t.to_string(), f))
        );
    }

    #[test]
    fn a_figure_not_sent_and_a_near_miss_are_not_found() {
        // 11.8 ms is near the DataLoader's 11.900 ms, but not it at the precision written.
        let cited = found(
            "The loader stalls 48.7 ms per step; the DataLoader takes 11.8 ms, 0.0052 ms launch delay.",
        );
        assert_eq!(
            cited,
            [("48.7 ms", false), ("11.8 ms", false), ("0.0052 ms", true)]
                .map(|(t, f)| (t.to_string(), f))
        );
        let c = check(
            SENT,
            &answer("It waits 12.9 ms."),
            Some("dataloader-bottleneck"),
        );
        assert_eq!(
            c.not_found().map(|c| c.text.as_str()).collect::<Vec<_>>(),
            ["12.9 ms"]
        );
        assert!(c.valid && !c.differs);
    }

    #[test]
    fn names_are_found_or_not() {
        let cited = found(
            "`aten::fill_` and FillFunctor<float> kernels, cudaStreamSynchronize() and \
             ncclAllReduce; `dataloader-bottleneck`; torch.cuda.synchronize is not named. Fix `num_workers=8`.",
        );
        assert_eq!(
            cited,
            [
                ("aten::fill_", false),
                ("FillFunctor<float>", true),
                ("cudaStreamSynchronize", false),
                ("ncclAllReduce", false),
                ("dataloader-bottleneck", true),
            ]
            .map(|(t, f)| (t.to_string(), f))
        );
        // Digits inside words are no figures; neither are the words themselves names.
        assert!(found("fp32 sm80 kernels on the 3rd try, 8x8 tiles").is_empty());
    }

    #[test]
    fn the_anti_pattern_is_compared_with_the_finding() {
        let mut a = answer("x");
        a.anti_pattern = Some("Host_Device_Sync".into());
        let c = check(SENT, &a, Some("dataloader-bottleneck"));
        assert_eq!(c.anti_pattern.as_deref(), Some("host-device-sync"));
        assert!(c.differs);
        a.anti_pattern = Some("slow input pipeline".into());
        assert!(!check(SENT, &a, Some("dataloader-bottleneck")).differs);
        a.anti_pattern = Some("cosmic rays".into());
        let c = check(SENT, &a, Some("dataloader-bottleneck"));
        assert!(c.differs);
        assert_eq!(c.anti_pattern.as_deref(), Some("cosmic rays"));
        assert!(
            !check(SENT, &a, None).differs,
            "an unexplained region has no finding"
        );
        a.anti_pattern = None;
        assert!(!check(SENT, &a, Some("dataloader-bottleneck")).differs);
    }

    #[test]
    fn free_text_is_not_valid_and_the_sent_text_is_the_user_messages() {
        let a = parse_answer("The DataLoader is slow: 12.3 ms.");
        let c = check(SENT, &a, Some("dataloader-bottleneck"));
        assert!(!c.valid && c.citations.is_empty());
        let body = serde_json::json!({"messages": [
            {"role": "system", "content": "cite aten::mm"},
            {"role": "user", "content": "12.3 ms"},
        ]})
        .to_string();
        assert_eq!(sent_text(&body), "12.3 ms");
        assert_eq!(sent_text("not json"), "");
    }

    /// A request in the phrases `summary` writes, with the figures of the examples: a
    /// window 27.407 ms long, a finding of 5.20 ms per step, 110 evidence events.
    const WINDOWED: &str = "Flagged by rule `dataloader-bottleneck` (DataLoader bottleneck): the GPU waits. Severity high, about 5.20 ms per step (17.3% of the step), confidence 0.90.\n\
Window: step 4, window 2 of 5 (data loading), 3.100–30.507 ms into a 30.000 ms step (27.407 ms long).\n\
Evidence: GPU idle inside DataLoader ranges (110): enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__\n\
GPU 0: busy 23.307 ms (85% of the window); idle 4.100 ms: before first work 0.000.\n";

    fn misread(explanation: &str) -> Vec<(String, Option<String>)> {
        check(
            WINDOWED,
            &answer(explanation),
            Some("dataloader-bottleneck"),
        )
        .citations
        .into_iter()
        .filter(|c| c.kind == Kind::Figure)
        .map(|c| (c.text, c.misread))
        .collect()
    }

    #[test]
    fn a_figure_cited_as_another_quantity_is_misread() {
        let read = misread(
            "The GPU is idle for 27.407 ms per step. It loses 110 ms of idle time in 110 events.",
        );
        assert_eq!(
            read,
            [
                (
                    "27.407 ms".to_string(),
                    Some(
                        "cited as time lost per step; the request gives it as the window's length"
                            .to_string()
                    )
                ),
                (
                    "110 ms".to_string(),
                    Some("cited with a unit; the request gives this number as a count".to_string())
                ),
                ("110".to_string(), None),
            ]
        );
        // Read as the request gives them: no misreading.
        for right in [
            "The window is 27.407 ms long and the step loses 5.20 ms per step.",
            "The DataLoader stalls the GPU 5.2 ms each step, 17.3% of the 30 ms step.",
            "The GPU is idle 4.100 ms in this window.",
            "Work starts 3.100 ms into the step.",
        ] {
            assert!(
                misread(right).iter().all(|(_, m)| m.is_none()),
                "{right}: {:?}",
                misread(right)
            );
        }
    }

    #[test]
    fn the_call_site_is_named_or_not() {
        let sent = format!("{WINDOWED}The rule's fix, to apply at `scripts/train.py(41): main` (the user's code): raise num_workers.\n");
        let named = |fix: &str| {
            let mut a = answer("The loader stalls.");
            a.fix = Some(fix.to_string());
            check(&sent, &a, Some("dataloader-bottleneck")).call_site_named
        };
        assert_eq!(
            named("In train.py, line 41, pass num_workers=8."),
            Some(true)
        );
        assert_eq!(
            named("In train.py(41): DataLoader(num_workers=8)"),
            Some(true)
        );
        assert_eq!(named("Pass num_workers=8 to the DataLoader."), Some(false));
        assert_eq!(
            named("In train.py, line 14, pass num_workers=8."),
            Some(false)
        );
        assert_eq!(
            check(WINDOWED, &answer("x"), Some("dataloader-bottleneck")).call_site_named,
            None,
            "a request without a call site"
        );
    }

    #[test]
    fn the_fix_is_graded_against_the_rules_fix() {
        let named = |fix: &str, expected: Option<&str>| {
            let mut a = answer("x");
            a.fix = Some(fix.to_string());
            check(WINDOWED, &a, expected).fix_named
        };
        assert_eq!(
            named(
                "DataLoader(num_workers=8, pin_memory=True)",
                Some("dataloader-bottleneck")
            ),
            Some(true)
        );
        assert_eq!(
            named(
                "Optimize the data loading process.",
                Some("dataloader-bottleneck")
            ),
            Some(false)
        );
        assert_eq!(
            named(
                "Remove the cudaStreamSynchronize calls.",
                Some("host-device-sync")
            ),
            Some(false)
        );
        assert_eq!(
            named(
                "Call loss.item() every 100 steps, not in the step.",
                Some("host-device-sync")
            ),
            Some(true)
        );
        assert_eq!(named("num_workers=8", None), None);
    }

    #[test]
    fn the_key_figure_is_cited_or_not() {
        let c = check(SENT, &answer("about 12.35 ms per step"), None);
        assert!(c.cites(12.35, "ms", 2));
        assert!(c.cites(12.349, "ms", 2));
        assert!(!c.cites(13.0, "ms", 2));
        assert!(!check(SENT, &answer("12.35 per step"), None).cites(12.35, "ms", 2));
    }
}
