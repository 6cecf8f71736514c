//! What a figure stands for, read from the words around it.
//!
//! A request states each figure in a fixed phrase of its own (`summary`): "about 12.35 ms per
//! step", "(27.407 ms long)" on the window's line, "0.246 ms into the step", "a 30.000 ms
//! step", "162 kernels", "(110)". An answer says what it takes a figure for in the words it puts
//! around it ("the GPU idles 27.407 ms per step"). `check` marks a cited figure *misread* when
//! the request holds its value only as quantities other than the one the answer gives it: a
//! window's length cited as the time lost per step, an event count cited as milliseconds.
//!
//! Only phrases that say one thing are read; a figure in any other phrase stands for nothing
//! known, and a citation that matches one of those is never called misread.

use std::ops::Range;

use serde::{Deserialize, Serialize};

/// A quantity a figure can stand for, where its phrase says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Quantity {
    /// Time lost in each step: what a finding claims per step, GPU idle or waiting per step.
    PerStep,
    /// A window's length.
    WindowLength,
    /// A step's length.
    StepLength,
    /// A moment, as a time into the step.
    Offset,
    /// How many events, calls or kernels.
    Count,
}

impl Quantity {
    /// The quantity in words, as a sentence about a misreading says it.
    pub fn label(self) -> &'static str {
        match self {
            Quantity::PerStep => "time lost per step",
            Quantity::WindowLength => "the window's length",
            Quantity::StepLength => "the step's length",
            Quantity::Offset => "a time into the step",
            Quantity::Count => "a count",
        }
    }
}

/// The words that follow a bare integer of a request that counts something.
const COUNTED: [&str; 12] = [
    "kernels",
    "launch",
    "synchronize",
    "aten::item",
    "device",
    "frees",
    "more",
    "steady-state",
    "HostToDevice",
    "DeviceToHost",
    "DeviceToDevice",
    "calls",
];

/// What the request's figure at `at` (its unit included) in `sent` stands for, as the phrase
/// `summary` writes it in says; `count` when the figure is a bare integer or a `×` count.
pub(super) fn in_request(sent: &str, at: &Range<usize>, count: bool) -> Option<Quantity> {
    let after = &sent[at.end..];
    let line = &sent[sent[..at.start].rfind('\n').map_or(0, |k| k + 1)..];
    let before = &sent[..at.start];
    let into = |rest: &str| rest.starts_with(" into ");
    if after.starts_with(" per step") || after.starts_with(" per iteration") {
        Some(Quantity::PerStep)
    } else if into(after)
        || after.strip_prefix('–').is_some_and(|range_end| {
            // `0.246–4.088 ms into the step`: the range's start is a moment too.
            let end = range_end.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
            into(end.trim_start_matches(" ms"))
        })
    {
        Some(Quantity::Offset)
    } else if after.starts_with(" long)") && line.starts_with("Window:") {
        Some(Quantity::WindowLength)
    } else if [" step", " iteration"].iter().any(|w| after.starts_with(w))
        || ["mean step ", "mean iteration "]
            .iter()
            .any(|w| before.ends_with(w))
    {
        Some(Quantity::StepLength)
    } else if count
        && ((before.ends_with('(') && after.starts_with(')'))
            || sent[at.clone()].ends_with('×')
            || COUNTED.iter().any(|w| after.trim_start().starts_with(w)))
    {
        Some(Quantity::Count)
    } else {
        None
    }
}

/// How far around a cited figure the answer's words are read, in bytes.
const NEAR: usize = 40;

/// What the answer's figure at `at` in `text` is given as, by the words near it in its clause.
pub(super) fn in_answer(text: &str, at: &Range<usize>) -> Option<Quantity> {
    let head = &text[..at.start];
    let clause_start = head
        .char_indices()
        .rev()
        .find(|&(k, c)| ends_clause(head, k, c))
        .map_or(0, |(k, _)| k + 1);
    let from = floor_boundary(text, at.start.saturating_sub(NEAR).max(clause_start));
    let before = text[from..at.start].to_lowercase();
    let rest = &text[at.end..];
    let clause_end = rest
        .char_indices()
        .find(|&(k, c)| ends_clause(rest, k, c))
        .map_or(rest.len(), |(k, _)| k);
    let after = rest[..floor_boundary(rest, clause_end.min(NEAR))].to_lowercase();
    let window_words = [
        "window of",
        "window is",
        "window lasts",
        "window spans",
        "window length",
        "window duration",
    ];
    let counted = [
        " events",
        " calls",
        " kernels",
        " launches",
        " ops",
        " operators",
        " copies",
        " allocations",
        " mallocs",
    ];
    if counted.iter().any(|w| after.starts_with(w)) {
        Some(Quantity::Count)
    } else if after.starts_with(" long") || window_words.iter().any(|w| before.contains(w)) {
        Some(Quantity::WindowLength)
    } else if after.starts_with(" into") {
        Some(Quantity::Offset)
    } else if [" step", " iteration"].iter().any(|w| after.starts_with(w))
        || [
            "step of ",
            "step takes ",
            "step lasts ",
            "step time of ",
            "step duration of ",
            "mean step ",
            "iteration of ",
            "iteration takes ",
            "iteration lasts ",
            "mean iteration ",
        ]
        .iter()
        .any(|w| before.ends_with(w))
    {
        Some(Quantity::StepLength)
    } else if [
        " per step",
        " each step",
        " every step",
        " per iteration",
        " each iteration",
        " every iteration",
        " of idle",
        " idle",
    ]
    .iter()
    .any(|w| after.starts_with(w))
        || ["idle", "stall", "wait", "lose", "lost", "cost", "blocked"]
            .iter()
            .any(|w| before.contains(w))
    {
        Some(Quantity::PerStep)
    } else {
        None
    }
}

/// Whether `c` at `k` in `s` ends a clause: `;`, a line's end, or a full stop (not a decimal
/// point: a full stop is followed by a space or the end).
fn ends_clause(s: &str, k: usize, c: char) -> bool {
    match c {
        ';' | '\n' => true,
        '.' => s[k + 1..].chars().next().is_none_or(char::is_whitespace),
        _ => false,
    }
}

/// The largest char boundary of `s` at or below `at`.
fn floor_boundary(s: &str, mut at: usize) -> usize {
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Why a citation given as `said` is misread, when every figure of the request it matches
/// stands for something known and none for `said`; or, where the answer writes it with a unit
/// (`timed`), when the request holds it only as counts.
pub(super) fn misread(
    said: Option<Quantity>,
    timed: bool,
    sent_as: &[Option<Quantity>],
) -> Option<String> {
    let known: Vec<Quantity> = sent_as.iter().copied().collect::<Option<Vec<_>>>()?;
    let as_what = || {
        let mut labels: Vec<&str> = known.iter().map(|q| q.label()).collect();
        labels.dedup();
        labels.join(" or ")
    };
    if known.is_empty() {
        None
    } else if timed && known.iter().all(|&q| q == Quantity::Count) {
        Some(format!(
            "cited with a unit; the request gives this number as {}",
            as_what()
        ))
    } else {
        let said = said?;
        (!known.contains(&said)).then(|| {
            format!(
                "cited as {}; the request gives it as {}",
                said.label(),
                as_what()
            )
        })
    }
}
