//! The timeline's requests and the worker's replies: views to draw, picks, details, search.

use serde::{Deserialize, Serialize};
use torchtraceap::timeline::bands::Band;
use torchtraceap::timeline::inspect::{Details, Place};
use torchtraceap::timeline::layout::CounterPeak;

use super::errors::RequestError;

/// What the timeline asks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TimelineRequest {
    /// Lay out the file's timeline; answered by `Opened`.
    Open { file: usize },
    /// Draw this view from now on, moved by its `motion`; answered by a `Drawn` per animation
    /// frame that shows a new image (`worker::frames`): views posted before the next frame
    /// replace each other, never queue.
    View(View),
    /// The keys held changed: move the view drawn (wherever its motion got to) by `motion`
    /// from now on; answered by the frames drawn, like a `View`.
    Motion { file: usize, motion: Motion },
    /// What lies at `(x, y)` (CSS pixels on the canvas) in this view; answered by `Picked`.
    Pick { view: View, x: f64, y: f64 },
    /// One slice's details; answered by `Picked`.
    Details { file: usize, event: u32 },
    /// Slices whose name contains `text`, ignoring case; answered by `Found`.
    Search { file: usize, text: String },
}

/// The worker's answers to the timeline's requests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TimelineReply {
    Opened(Opened),
    Drawn(Drawn),
    Picked {
        file: usize,
        picked: Picked,
    },
    Found(Found),
    /// A request the worker could not answer (a file it has no trace of, a canvas it cannot
    /// draw on); `drawing` when it was a `View`.
    Failed {
        error: RequestError,
        drawing: bool,
    },
}

/// A view of the timeline: the time range shown, the canvas size and what is selected.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct View {
    pub file: usize,
    /// Nanoseconds from the trace's start (`Opened::span.0`): offsets, because the trace's own
    /// times (often ns since 1970) lose precision as `f64`; fractional while zooming.
    pub start: f64,
    pub end: f64,
    /// CSS pixels, and device pixels per CSS pixel.
    pub width: f64,
    pub height: f64,
    pub ratio: f64,
    /// Vertical scroll of the tracks, in CSS pixels.
    pub scroll: f64,
    /// Indices of the collapsed groups.
    pub collapsed: Vec<u32>,
    pub selected: Option<u32>,
    /// Scroll so that this slice's row shows (a search match, a followed flow).
    pub reveal: Option<u32>,
    /// A time range selected with the box, ns from the trace's start.
    pub range: Option<(f64, f64)>,
    /// The finding whose bands are highlighted.
    pub finding: Option<String>,
    /// The page numbers its views: a `Drawn` says which one it moved from, and the page takes
    /// the range drawn as its own only from a reply to its latest view.
    pub seq: u64,
    /// How the held keys move the view, per millisecond of the worker's frames.
    pub motion: Motion,
}

/// How the view moves while W/S/A/D are held (`worker::frames::advance`): per millisecond,
/// the span is scaled by `exp(zoom)` around the time under `x`, then moved by `pan` spans.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Motion {
    pub zoom: f64,
    pub pan: f64,
    /// The pointer's x on the canvas, CSS pixels.
    pub x: f64,
}

/// A file's timeline is laid out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Opened {
    pub file: usize,
    /// Earliest start and latest end, ns.
    pub span: (i64, i64),
    pub slices: u64,
    pub rows: u64,
    /// The flagged windows, for moving to a finding.
    pub bands: Vec<Band>,
    /// Time to lay the timeline out, ms.
    pub layout_ms: f64,
}

/// A view was drawn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Drawn {
    pub file: usize,
    /// The `seq` of the page's view this frame was moved from.
    pub seq: u64,
    /// The range drawn (the view's, moved by its motion), ns from the trace's start.
    pub start: f64,
    pub end: f64,
    /// The animation frame the image was committed in: its time (ms since 1970, from the
    /// worker's `performance.timeOrigin`), so that the interval between frames shown can be
    /// measured.
    pub frame_at: f64,
    /// Time to draw it, ms.
    pub draw_ms: f64,
    /// Height of all tracks as shown (for scrolling), CSS pixels.
    pub content_height: f64,
    /// The vertical scroll drawn (the view's, moved to reveal a slice, kept in bounds).
    pub scroll: f64,
    /// Spans drawn (after level-of-detail merging).
    pub spans: u64,
    /// Where the selected slice was drawn, `[x, y, width, height]` in CSS pixels, if it shows.
    pub selected_box: Option<[f64; 4]>,
    /// Slices in the selected range, when there is one: `(kind label, count, total ns)`.
    pub in_range: Vec<(String, u64, i64)>,
    /// Where the memory tracks' peaks were drawn, `[x, y]` in CSS pixels, those that show.
    pub memory_peaks: Vec<[f64; 2]>,
}

/// What lies under a point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Picked {
    Slice(Box<Details>),
    /// A group's header (to collapse or expand it).
    Group {
        index: u32,
    },
    /// A flagged window's band: the finding's id.
    Band {
        finding: String,
    },
    /// A memory track's peak: the track's label (`memory, cuda:0`) and the peak.
    MemoryPeak {
        track: String,
        peak: Box<CounterPeak>,
    },
    Nothing,
}

/// Search results, at most [`MAX_FOUND`] of them, in time order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Found {
    pub file: usize,
    pub text: String,
    /// How many slices match, all told.
    pub total: usize,
    pub places: Vec<Place>,
}

/// Search results sent back, at most.
pub const MAX_FOUND: usize = 1000;
