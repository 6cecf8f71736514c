//! The answer the app asks a model for and reads back: its JSON schema (an anti-pattern id, an
//! explanation, a fix, a confidence), whether a reply follows it exactly, and the lenient
//! reading of any reply (an object anywhere in it, any key spelling; else its text).
//! `protocol` asks for the schema in a request body; `check` grades what was read.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The ids an answer's `anti_pattern` may take: every detector's, and `none`.
pub(crate) fn anti_pattern_ids() -> Vec<&'static str> {
    let mut ids: Vec<&'static str> = crate::detect::DETECTORS.iter().map(|d| d.id()).collect();
    ids.push(NO_ANTI_PATTERN);
    ids
}

/// The `anti_pattern` of an answer that finds none.
pub(crate) const NO_ANTI_PATTERN: &str = crate::ml::labels::NOT_AN_ANTI_PATTERN;

/// The most characters of the explanation and the fix the schema allows: a paragraph or two (a
/// grammar-constrained server stops the string there, so that a model that rambles still closes
/// its object within `max_tokens`). The bound costs llama.cpp's sampling some speed: 0.39
/// against 0.67 tokens/s unbounded for one 120-token answer of Qwen2.5-Coder-1.5B, on two cores
/// busy with other work (one run each: noisy).
const EXPLANATION_CHARS: usize = 1200;
const FIX_CHARS: usize = 600;

/// The characters the schema's strings may hold, as ranges: printable ASCII but `"` and `\`
/// (text that JSON carries without escapes), Latin (`µ`, `×`), Greek, punctuation (`–`, `’`,
/// `…`), arrows and mathematical signs (`≈`, `≤`). A grammar-constrained server then writes no
/// escape, control character or exotic code point, which some servers' own JSON readers refuse
/// (llama.cpp's server answered HTTP 500 to 9 of 16 replies of the random test model with free
/// strings, and to none of 28 with these characters).
const TEXT_CHARS: [(char, char); 8] = [
    (' ', '!'),
    ('#', '['),
    (']', '~'),
    ('\u{a0}', '\u{24f}'),
    ('\u{370}', '\u{3ff}'),
    ('\u{2010}', '\u{2027}'),
    ('\u{2030}', '\u{205e}'),
    ('\u{2190}', '\u{22ff}'),
];

/// The schema's `pattern` for a string of at most `chars` [`TEXT_CHARS`].
fn text_pattern(chars: usize) -> String {
    let class: String = TEXT_CHARS
        .iter()
        .map(|&(a, b)| {
            let escape = |c: char| match c {
                '[' | ']' | '\\' | '^' | '-' => format!("\\{c}"),
                c if c.is_ascii() => c.to_string(),
                c => format!("\\u{:04x}", c as u32),
            };
            format!("{}-{}", escape(a), escape(b))
        })
        .collect();
    format!("^[{class}]{{0,{chars}}}$")
}

/// Whether `text` is what [`text_pattern`] allows.
fn is_text(text: &str, chars: usize) -> bool {
    text.chars().count() <= chars
        && text
            .chars()
            .all(|c| TEXT_CHARS.iter().any(|&(a, b)| (a..=b).contains(&c)))
}

/// The confidences an answer may give: tenths. A grammar-constrained server writes any number
/// for a bare `number` (llama.cpp ignores `minimum` and `maximum` there; the test model wrote
/// `4.2e6365789816802869`, which no JSON reader takes).
const CONFIDENCES: [f64; 11] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];

/// The JSON schema of the answer the app reads ([`parse_answer`], [`follows_schema`]): the
/// anti-pattern's id, the explanation and the fix (plain text, [`text_pattern`]) and a
/// confidence from 0 to 1 in tenths, all required.
pub(crate) fn answer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "anti_pattern": {"type": "string", "enum": anti_pattern_ids()},
            "explanation": {"type": "string", "pattern": text_pattern(EXPLANATION_CHARS)},
            "fix": {"type": "string", "pattern": text_pattern(FIX_CHARS)},
            "confidence": {"type": "number", "enum": CONFIDENCES},
        },
        "required": ["anti_pattern", "explanation", "fix", "confidence"],
        "additionalProperties": false,
    })
}

/// Whether `text` is exactly an answer in [`answer_schema`] (in a Markdown code fence or
/// not): an object with the four fields of their types, a known anti-pattern id, plain text
/// within its length, a confidence from 0 to 1, and no other field.
pub fn follows_schema(text: &str) -> bool {
    let t = text.trim();
    let t = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|t| t.strip_suffix("```"))
        .unwrap_or(t)
        .trim();
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(t) else {
        return false;
    };
    let string = |k: &str| o.get(k).and_then(Value::as_str);
    o.len() == 4
        && string("anti_pattern").is_some_and(|p| anti_pattern_ids().contains(&p))
        && string("explanation").is_some_and(|e| is_text(e, EXPLANATION_CHARS))
        && string("fix").is_some_and(|f| is_text(f, FIX_CHARS))
        && o.get("confidence")
            .and_then(Value::as_f64)
            .is_some_and(|c| (0.0..=1.0).contains(&c))
}

/// The model's answer, read leniently: the fields of the first JSON object in the text when
/// there is one, and the text itself always.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub anti_pattern: Option<String>,
    pub explanation: Option<String>,
    pub fix: Option<String>,
    /// 0 to 1 when given as a number (or a number in a string; percentages are scaled).
    pub confidence: Option<f32>,
    /// The whole answer as the model wrote it.
    pub text: String,
}

impl Answer {
    /// Whether the model followed the format (an object with at least one known field).
    pub fn structured(&self) -> bool {
        self.anti_pattern.is_some() || self.explanation.is_some() || self.fix.is_some()
    }
}

/// Reads an answer: a JSON object anywhere in it (in a code fence or after prose), with keys
/// in any case and `_`/`-`/camel spelling; free text is kept as is.
pub fn parse_answer(text: &str) -> Answer {
    let mut a = Answer {
        text: text.to_string(),
        ..Answer::default()
    };
    let Some(obj) = first_object(text) else {
        return a;
    };
    for (k, v) in obj {
        let key: String = k
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_lowercase();
        let s = match &v {
            Value::String(s) => Some(s.trim().to_string()),
            Value::Null => None,
            other => Some(other.to_string()),
        };
        match key.as_str() {
            "antipattern" | "pattern" | "issue" => a.anti_pattern = s,
            "explanation" | "reason" | "why" => a.explanation = s,
            "fix" | "suggestion" | "remedy" => a.fix = s,
            "confidence" => {
                let c = v
                    .as_f64()
                    .or_else(|| s.as_deref()?.trim_end_matches('%').trim().parse().ok());
                a.confidence = c
                    .map(|c| if c > 1.0 { c / 100.0 } else { c })
                    .filter(|c| (0.0..=1.0).contains(c))
                    .map(|c| c as f32);
            }
            _ => {}
        }
    }
    a
}

/// Where [`first_object`] looks for the answer's object: at most this many `{`, each with at
/// most this many bytes after it. An answer's object is a few hundred bytes; without the bounds
/// a reply where an object seems to start everywhere (`{"a":[{"a":[…`) costs quadratic time.
const OBJECT_STARTS: usize = 64;
const OBJECT_BYTES: usize = 64 << 10;

/// The first `{…}` in `text` that parses as a JSON object (within [`OBJECT_STARTS`] and
/// [`OBJECT_BYTES`]).
fn first_object(text: &str) -> Option<serde_json::Map<String, Value>> {
    let mut from = 0;
    for _ in 0..OBJECT_STARTS {
        let start = from + text[from..].find('{')?;
        let end = text.floor_char_boundary(start.saturating_add(OBJECT_BYTES));
        let mut stream = serde_json::Deserializer::from_str(&text[start..end]).into_iter::<Value>();
        if let Some(Ok(Value::Object(m))) = stream.next() {
            return Some(m);
        }
        from = start + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_leniently() {
        let a = parse_answer(
            "Sure! ```json\n{\"anti_pattern\": \"host sync\", \"Explanation\": \"item() each step\", \"fix\": \"drop .item()\", \"confidence\": 0.8}\n```",
        );
        assert_eq!(a.anti_pattern.as_deref(), Some("host sync"));
        assert_eq!(a.explanation.as_deref(), Some("item() each step"));
        assert_eq!(a.fix.as_deref(), Some("drop .item()"));
        assert_eq!(a.confidence, Some(0.8));
        assert!(a.structured());
        let b = parse_answer("{\"antiPattern\": \"x\", \"confidence\": \"85%\"}");
        assert_eq!(b.anti_pattern.as_deref(), Some("x"));
        assert_eq!(b.confidence, Some(0.85));
        let c = parse_answer("the window {is} slow because of { the loader");
        assert!(!c.structured());
        assert_eq!(c.text, "the window {is} slow because of { the loader");
        assert_eq!(parse_answer("").text, "");
    }

    #[test]
    fn answers_follow_the_schema_or_not() {
        let ok =
            r#"{"anti_pattern":"host-device-sync","explanation":"e","fix":"f","confidence":0.5}"#;
        assert!(follows_schema(ok));
        assert!(follows_schema(&format!("```json\n{ok}\n```")));
        assert!(follows_schema(
            r#"{"anti_pattern":"none","explanation":"5.2 µs × 3 ≈ 16 µs – ‘ok’","fix":"","confidence":1}"#
        ));
        assert_eq!(
            text_pattern(10),
            r"^[ -!#-\[\]-~\u00a0-\u024f\u0370-\u03ff\u2010-\u2027\u2030-\u205e\u2190-\u22ff]{0,10}$"
        );
        for bad in [
            r#"{"anti_pattern":"host sync","explanation":"e","fix":"f","confidence":0.5}"#,
            r#"{"anti_pattern":"none","explanation":"e","fix":"f","confidence":5}"#,
            r#"{"anti_pattern":"none","explanation":"e","fix":"f"}"#,
            r#"{"anti_pattern":"none","explanation":"e","fix":"f","confidence":0.5,"x":1}"#,
            r#"Sure: {"anti_pattern":"none","explanation":"e","fix":"f","confidence":0.5}"#,
            r#"{"anti_pattern":"none","explanation":"a \"quote\"","fix":"f","confidence":0.5}"#,
        ] {
            assert!(!follows_schema(bad), "{bad}");
        }
    }
}
