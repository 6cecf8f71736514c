//! A serving engine's iterations: vLLM, SGLang and TGI captures hold no `ProfilerStep#`, but
//! each scheduler iteration runs the model once inside a range the engine names: the model
//! runner's annotation (vLLM's and SGLang's `execute_<tokens>_context_<n>(…)_generation_<n>(…)`,
//! SGLang's `step[DECODE bs=32]`) or its Python frame (`gpu_model_runner.py(…): execute_model`,
//! SGLang's `run_batch`, `forward_batch_generation`, TGI's `generate_token`). On the CPU thread
//! holding the most of them, the outermost ones mark the iterations: each runs from its start to
//! the next one's, the last to the end of its range and of the GPU work launched in it. What an
//! annotation says of the batch (prefill, decode or mixed; requests; tokens) is read by
//! [`batch_of`].

use serde::{Deserialize, Serialize};

use crate::model::{EventKind, Events, Launch, Step, Strings, Track, NONE};

/// What an iteration ran: new prompts' tokens, one token per running request, or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IterationKind {
    Prefill,
    Decode,
    Mixed,
}

impl IterationKind {
    /// The name reports carry.
    pub fn label(self) -> &'static str {
        match self {
            IterationKind::Prefill => "prefill",
            IterationKind::Decode => "decode",
            IterationKind::Mixed => "mixed",
        }
    }

    /// From the requests in prefill and in decode.
    fn of(prefill: u64, decode: u64) -> Option<IterationKind> {
        match (prefill > 0, decode > 0) {
            (true, true) => Some(IterationKind::Mixed),
            (true, false) => Some(IterationKind::Prefill),
            (false, true) => Some(IterationKind::Decode),
            (false, false) => None,
        }
    }
}

/// What an engine's annotation says of its batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Batch {
    pub kind: Option<IterationKind>,
    /// Requests in the batch.
    pub requests: Option<u64>,
    /// Tokens the iteration ran through the model (prompt tokens, plus one per decoding request).
    pub tokens: Option<u64>,
}

/// The leading decimal digits of `s` as a number, and the rest.
fn number(s: &str) -> Option<(u64, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    Some((s[..digits].parse().ok()?, &s[digits..]))
}

/// `<n>(<detail>)` of vLLM's annotation: the requests and their query tokens (`sq<tokens>sk…`,
/// or before 0.11 `<tokens>_<squares>` and, for generation, `<tokens>`).
fn requests_and_tokens(s: &str) -> Option<(u64, u64, &str)> {
    let (requests, rest) = number(s)?;
    let inner = rest.strip_prefix('(')?;
    let (tokens, rest) = number(inner.strip_prefix("sq").unwrap_or(inner))?;
    let close = rest.find(')')?;
    Some((requests, tokens, &rest[close + 1..]))
}

/// The batch an engine's annotation describes: vLLM's (and SGLang's)
/// `execute_8192_context_9(sq8155sk8430…)_generation_37(sq37sk34489…)` (9 requests in
/// prefill with 8155 tokens, 37 decoding) and its older `execute_context_1(888_788544)_generation_0(0)`;
/// SGLang's `step[EXTEND bs=4 toks=900]`, `step[DECODE bs=32]`, `step[MIXED bs=8]`.
pub fn batch_of(name: &str) -> Option<Batch> {
    if let Some(rest) = name.strip_prefix("execute_") {
        let rest = number(rest).map_or(rest, |(_, r)| r.strip_prefix('_').unwrap_or(r));
        let rest = rest.strip_prefix("context_")?;
        let (prefill, prefill_tokens, rest) = requests_and_tokens(rest)?;
        let (decode, decode_tokens, _) = requests_and_tokens(rest.strip_prefix("_generation_")?)?;
        return Some(Batch {
            kind: IterationKind::of(prefill, decode),
            requests: Some(prefill + decode),
            tokens: Some(prefill_tokens + decode_tokens),
        });
    }
    let inner = name.strip_prefix("step[")?.strip_suffix(']')?;
    let mut words = inner.split(' ');
    let mode = words.next()?;
    let field = |key: &str| {
        inner
            .split(' ')
            .find_map(|w| w.strip_prefix(key)?.parse::<u64>().ok())
    };
    let requests = field("bs=");
    let kind = if mode == "MIXED" {
        Some(IterationKind::Mixed)
    } else if mode.contains("DECODE") || mode.contains("VERIFY") {
        Some(IterationKind::Decode)
    } else if mode.contains("EXTEND") || mode.contains("PREFILL") {
        Some(IterationKind::Prefill)
    } else {
        None
    };
    let tokens = match kind {
        Some(IterationKind::Decode) => requests,
        _ => field("toks="),
    };
    Some(Batch {
        kind,
        requests,
        tokens,
    })
}

/// The model runner's Python frames that hold one iteration, by engine: the file's path names
/// the engine, the function the frame.
const FRAMES: &[&str] = &[
    "execute_model",
    "run_batch",
    "_run_batch_inner",
    "forward_batch_generation",
    "generate_token",
];
const ENGINES: &[&str] = &["vllm", "sglang", "text_generation_server"];

/// Whether event `i` marks a serving iteration (its range holds the iteration's model run).
pub fn is_marker(strings: &Strings, e: &Events, i: usize) -> bool {
    let name = strings.get(e.name[i]);
    match e.kind[i] {
        EventKind::UserAnnotation => batch_of(name).is_some(),
        EventKind::PythonFunction => name.split_once("): ").is_some_and(|(path, function)| {
            FRAMES.contains(&function) && ENGINES.iter().any(|engine| path.contains(engine))
        }),
        _ => false,
    }
}

/// The iterations, if a CPU thread holds a serving engine's ranges.
pub(super) fn iterations(
    strings: &Strings,
    e: &Events,
    tracks: &[Track],
    launches: &[Launch],
) -> Option<Vec<Step>> {
    let outermost = |t: &Track| -> Vec<usize> {
        t.events
            .clone()
            .map(|i| i as usize)
            .filter(|&i| is_marker(strings, e, i))
            .filter(|&i| {
                let mut p = e.parent[i];
                while p != NONE {
                    if is_marker(strings, e, p as usize) {
                        return false;
                    }
                    p = e.parent[p as usize];
                }
                true
            })
            .collect()
    };
    let markers = tracks
        .iter()
        .filter(|t| !t.gpu)
        .map(outermost)
        .filter(|m| !m.is_empty())
        .max_by_key(|m| (m.len(), std::cmp::Reverse(e.start[m[0]])))?;
    let last = markers[markers.len() - 1];
    let end = super::iterations::gpu_end(e, launches, e.start[last], e.end(last));
    Some(
        markers
            .iter()
            .enumerate()
            .map(|(k, &i)| Step {
                number: k as i64 + 1,
                start: e.start[i],
                end: markers.get(k + 1).map_or(end, |&next| e.start[next]),
                event: i as u32,
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(kind: IterationKind, requests: u64, tokens: Option<u64>) -> Option<Batch> {
        Some(Batch {
            kind: Some(kind),
            requests: Some(requests),
            tokens,
        })
    }

    #[test]
    fn the_engines_annotations_say_their_batch() {
        use IterationKind::*;
        // vLLM 0.11+ (and SGLang's outer range), from the shared traces.
        assert_eq!(
            batch_of("execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37sk34489sqsq37sqsk34489)"),
            batch(Mixed, 46, Some(8192))
        );
        assert_eq!(
            batch_of(
                "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)"
            ),
            batch(Decode, 32, Some(32))
        );
        // Before: the query tokens and their squares.
        assert_eq!(
            batch_of("execute_context_1(888_788544)_generation_0(0)"),
            batch(Prefill, 1, Some(888))
        );
        // SGLang's span names.
        assert_eq!(batch_of("step[DECODE bs=32]"), batch(Decode, 32, Some(32)));
        assert_eq!(
            batch_of("step[EXTEND bs=4 toks=900]"),
            batch(Prefill, 4, Some(900))
        );
        assert_eq!(batch_of("step[MIXED bs=8]"), batch(Mixed, 8, None));
        assert_eq!(
            batch_of("step[IDLE bs=0]"),
            Some(Batch {
                kind: None,
                requests: Some(0),
                tokens: None
            })
        );
        // Not an engine's.
        for name in [
            "execute_model",
            "execute_",
            "step",
            "step[",
            "ProfilerStep#3",
            "train_step",
        ] {
            assert_eq!(batch_of(name), None, "{name}");
        }
    }
}
