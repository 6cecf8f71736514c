//! Retraining's reply: the traces rescored by a new window model, and the windows that moved.

use serde::{Deserialize, Serialize};
use torchtraceap::report::Report;

use super::errors::LeftOut;

/// The traces rescored by a retrained model (or the bundled one again).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Retrained {
    /// The retrained model's file (`ml::Model` as JSON, the form of
    /// `models/window-forest.json`); `None` for the bundled model.
    pub model: Option<String>,
    /// The kept labels fitted on, and why each of the others was left out.
    pub used: usize,
    pub left_out: Vec<LeftOut>,
    /// Windows of the base set fitted on.
    pub base_windows: usize,
    /// Time to fetch and read the base set (0 once cached), and to fit, ms.
    pub base_ms: f64,
    pub fit_ms: f64,
    pub files: Vec<Rescored>,
}

/// One trace rescored: its report with the new scores, and the windows whose score moved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rescored {
    pub file: usize,
    pub report: Report,
    pub changes: Vec<WindowChange>,
}

/// A window whose score moved, in window order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WindowChange {
    pub step: i64,
    pub phase: String,
    /// The window's index among its step's windows.
    pub window: usize,
    pub before: f32,
    pub after: f32,
    pub flagged_before: bool,
    pub flagged_after: bool,
    /// The pattern of the kept label for this window, if any.
    pub label: Option<String>,
}
