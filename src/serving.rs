//! A serving capture's iterations, typed and measured: each iteration (`ingest::serving` cut
//! them as steps) is prefill, decode or mixed by what its engine's annotation says of the batch
//! (`ingest::serving::batch_of`), else by the batch's shape: the token ids the model's first
//! `aten::embedding` reads, `[batch, 1]` in decode and `[batch, prompt]` in prefill. Per kind:
//! the iterations, their time with its spread, the main GPU's busy share, the host's time
//! between an iteration's model run and the next one's (the scheduler's), graph replays per
//! iteration, and tokens per second where every iteration of the kind records its tokens.

use serde::{Deserialize, Serialize};

use crate::graphs;
use crate::ingest::serving::{batch_of, Batch, IterationKind};
use crate::metrics::{pct, Spread};
use crate::model::{EventKind, StepSource, Trace, NONE};

/// How an iteration's kind was told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TypedBy {
    /// The engine's annotation names the batch.
    Annotation,
    /// The token ids' shape: `[batch, 1]` decodes, `[batch, n > 1]` prefills.
    Shapes,
    /// Neither tells: left untyped.
    Nothing,
}

/// One iteration: what it ran and what it took.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Iteration {
    /// The step's number.
    pub number: i64,
    /// `None`: untyped.
    pub kind: Option<IterationKind>,
    pub typed_by: TypedBy,
    pub requests: Option<u64>,
    pub tokens: Option<u64>,
    /// From its start to the next iteration's (the last: to the end of its GPU work).
    pub ms: f64,
    /// The main GPU's busy time, as a share of the iteration.
    pub gpu_busy_pct: f64,
    /// From the end of its model runner's range to the next iteration's start; `None` for the
    /// last.
    pub host_gap_ms: Option<f64>,
    pub graph_replays: u64,
}

/// The iterations of one kind, together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KindFigures {
    /// `None`: the untyped iterations.
    pub kind: Option<IterationKind>,
    /// Time per iteration (`n`: the iterations).
    pub time: Spread,
    /// The main GPU's busy time over these iterations' time.
    pub gpu_busy_pct: f64,
    /// Host time between one of them and the next iteration; `None` when only the last
    /// iteration is of this kind.
    pub host_gap: Option<Spread>,
    pub graph_replays_per_iteration: f64,
    /// Tokens per second of these iterations' time, where each records its tokens.
    pub tokens_per_s: Option<f64>,
}

/// What the texts call a step: a serving capture's steps are the engine's iterations.
pub fn step_word(serving: Option<&Serving>) -> &'static str {
    if serving.is_some() {
        "iteration"
    } else {
        "step"
    }
}

/// A serving capture's iterations and their figures per kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Serving {
    /// Prefill, decode, mixed, then untyped: the kinds present.
    pub kinds: Vec<KindFigures>,
    pub iterations: Vec<Iteration>,
}

impl Serving {
    /// The iterations of a serving capture (`None` for any other), with the main GPU's busy
    /// time in each step (`busy_ns`, in step order).
    pub fn of(t: &Trace, busy_ns: &[i64]) -> Option<Serving> {
        if t.step_source != StepSource::ServingIterations {
            return None;
        }
        let replays = graphs::launches(t);
        let e = &t.events;
        let iterations: Vec<Iteration> = t
            .steps
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let (batch, typed_by) = batch(t, s.event as usize);
                let dur = s.end - s.start;
                let host_end = if s.event == NONE {
                    s.end
                } else {
                    e.end(s.event as usize)
                };
                let calls = |at: i64| replays.partition_point(|&i| e.start[i as usize] < at);
                Iteration {
                    number: s.number,
                    kind: batch.kind,
                    typed_by,
                    requests: batch.requests,
                    tokens: batch.tokens,
                    ms: dur as f64 / 1e6,
                    gpu_busy_pct: pct(busy_ns.get(k).copied().unwrap_or(0), dur),
                    host_gap_ms: t
                        .steps
                        .get(k + 1)
                        .map(|next| (next.start - host_end).max(0) as f64 / 1e6),
                    graph_replays: (calls(s.end) - calls(s.start)) as u64,
                }
            })
            .collect();
        let kinds = [
            Some(IterationKind::Prefill),
            Some(IterationKind::Decode),
            Some(IterationKind::Mixed),
            None,
        ]
        .into_iter()
        .filter_map(|kind| figures(kind, &iterations))
        .collect();
        Some(Serving { kinds, iterations })
    }

    /// The iterations counted by kind (a link carries the kinds, not each iteration).
    pub fn count(&self) -> usize {
        self.kinds.iter().map(|k| k.time.n).sum()
    }

    /// Indices of the decode iterations among the steps.
    pub fn decode_steps(&self) -> Vec<usize> {
        (0..self.iterations.len())
            .filter(|&k| self.iterations[k].kind == Some(IterationKind::Decode))
            .collect()
    }
}

/// The figures of the iterations of `kind`, if any.
fn figures(kind: Option<IterationKind>, all: &[Iteration]) -> Option<KindFigures> {
    let these: Vec<&Iteration> = all.iter().filter(|i| i.kind == kind).collect();
    if these.is_empty() {
        return None;
    }
    let ms: Vec<f64> = these.iter().map(|i| i.ms).collect();
    let total_ms: f64 = ms.iter().sum();
    let busy_ms: f64 = these.iter().map(|i| i.ms * i.gpu_busy_pct / 100.0).sum();
    let gaps: Vec<f64> = these.iter().filter_map(|i| i.host_gap_ms).collect();
    let tokens: Option<u64> = these.iter().map(|i| i.tokens).sum();
    Some(KindFigures {
        kind,
        time: Spread::of(&ms),
        gpu_busy_pct: if total_ms > 0.0 {
            100.0 * busy_ms / total_ms
        } else {
            0.0
        },
        host_gap: (!gaps.is_empty()).then(|| Spread::of(&gaps)),
        graph_replays_per_iteration: these.iter().map(|i| i.graph_replays).sum::<u64>() as f64
            / these.len() as f64,
        tokens_per_s: tokens
            .filter(|_| total_ms > 0.0)
            .map(|n| n as f64 / (total_ms / 1e3)),
    })
}

/// What the iteration marked by `marker` ran: the first annotation in it (or itself) that names
/// its batch's kind, else the first embedding's token ids.
fn batch(t: &Trace, marker: usize) -> (Batch, TypedBy) {
    if marker == NONE as usize {
        return (Batch::default(), TypedBy::Nothing);
    }
    let e = &t.events;
    let inside = || std::iter::once(marker).chain(t.nested_in(marker));
    let annotated = inside()
        .filter(|&i| e.kind[i] == EventKind::UserAnnotation)
        .filter_map(|i| batch_of(t.name_of(i)))
        .find(|b| b.kind.is_some());
    if let Some(b) = annotated {
        return (b, TypedBy::Annotation);
    }
    inside()
        .find(|&i| {
            e.kind[i] == EventKind::CpuOp
                && t.name_of(i) == "aten::embedding"
                && e.detail[i] != NONE
        })
        .and_then(|i| t.details.op(e.detail[i]).input_dims)
        .and_then(|dims| of_shape(t.strings.get(dims)))
        .map_or((Batch::default(), TypedBy::Nothing), |b| {
            (b, TypedBy::Shapes)
        })
}

/// The batch `aten::embedding`'s `Input Dims` tell (`[[vocab, hidden], [batch, tokens]]`): a
/// token per request decodes; more prefill. Flattened ids (`[tokens]`) tell nothing.
fn of_shape(dims: &str) -> Option<Batch> {
    let shapes: Vec<Vec<u64>> = serde_json::from_str(dims).ok()?;
    match shapes.get(1)?.as_slice() {
        &[batch, tokens] if batch > 0 && tokens > 0 => Some(Batch {
            kind: Some(if tokens == 1 {
                IterationKind::Decode
            } else {
                IterationKind::Prefill
            }),
            requests: Some(batch),
            tokens: Some(batch * tokens),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_ids_shape_tells_decode_from_prefill() {
        let of = |dims: &str| of_shape(dims).map(|b| (b.kind, b.requests, b.tokens));
        assert_eq!(
            of("[[32000, 4096], [8, 1]]"),
            Some((Some(IterationKind::Decode), Some(8), Some(8)))
        );
        assert_eq!(
            of("[[32000, 4096], [2, 512]]"),
            Some((Some(IterationKind::Prefill), Some(2), Some(1024)))
        );
        // vLLM's flattened ids, and no ids at all.
        assert_eq!(of("[[32000, 4096], [4096]]"), None);
        assert_eq!(of("[[32000, 4096]]"), None);
        assert_eq!(of("not json"), None);
    }
}
