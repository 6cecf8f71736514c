//! A summary's line (its text, and the importance a budget drops it by) and the formatting the
//! lines share: names cut to [`MAX_NAME`] characters, nanoseconds written as milliseconds.
//! Below `summary` and `contents`, which both write lines.

use serde::{Deserialize, Serialize};

/// Names (kernels are C++ templates) are cut to this many characters.
const MAX_NAME: usize = 120;
/// Nanoseconds per millisecond.
const NS_PER_MS: f64 = 1e6;

/// One line of a summary: lower `importance` is kept longer (0: never dropped).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Line {
    pub(crate) importance: u8,
    pub text: String,
}

/// `name` cut to [`MAX_NAME`] characters, with `…` where it was cut.
pub(super) fn cut(name: &str) -> String {
    match name.char_indices().nth(MAX_NAME) {
        Some((i, _)) => format!("{}…", &name[..i]),
        None => name.to_string(),
    }
}

/// Nanoseconds as milliseconds.
pub(super) fn ms(ns: i64) -> f64 {
    ns as f64 / NS_PER_MS
}
