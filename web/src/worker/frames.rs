//! The timeline's frames, drawn by the worker on its own animation frames.
//!
//! The page posts its view whenever it changes, and what the held keys do as a [`Motion`]; it
//! never waits for a frame. The worker keeps only the latest view ([`Frames`]) and draws it
//! once per animation frame of its `OffscreenCanvas` (`requestAnimationFrame` in the worker,
//! `worker::request_frame`), moved by the motion over the frame's own time step. So a frame never waits
//! for a round trip to the page or for the page's main thread, and views posted during a slow
//! draw replace each other instead of queueing behind it. The page takes the range drawn back
//! from each `Drawn` (the worker moves the view while keys are held).
//!
//! The zoom is the page's too (the wheel), so both sides scale a view by `geometry::zoom`.

use crate::geometry::zoom;
use crate::protocol::{Motion, View};

/// The step of the first frame of a motion, and the longest step (a frame late by more does
/// not jump the view), ms.
const FIRST_STEP: f64 = 16.0;
const MAX_STEP: f64 = 100.0;

impl Motion {
    /// Whether it moves the view at all.
    pub fn moves(&self) -> bool {
        self.zoom != 0.0 || self.pan != 0.0
    }
}

/// `view` moved by `motion` over `dt` ms: panned by the span shown, then zoomed.
pub fn advance(view: &mut View, motion: &Motion, dt: f64, length: f64) {
    let span = view.end - view.start;
    view.start += span * motion.pan * dt;
    view.end += span * motion.pan * dt;
    (view.start, view.end) = zoom(
        view.start,
        view.end,
        (motion.zoom * dt).exp(),
        motion.x,
        view.width,
        length,
    );
}

/// The worker's latest view and what still has to be drawn of it.
#[derive(Default)]
pub struct Frames {
    /// The view to draw: the page's latest, moved by the motion so far.
    view: Option<View>,
    /// It changed since it was last drawn.
    changed: bool,
    /// The time of the last frame drawn while moving, ms.
    last: Option<f64>,
    /// An animation frame is asked for.
    pub requested: bool,
}

impl Frames {
    /// The page's new view replaces the one drawn (and its motion). A slice the replaced view
    /// asked to reveal, and no frame drew yet, is still revealed.
    pub fn show(&mut self, mut view: View) {
        if self.changed && view.reveal.is_none() {
            view.reveal = self.view.as_ref().and_then(|v| v.reveal);
        }
        if !view.motion.moves() {
            self.last = None;
        }
        self.view = Some(view);
        self.changed = true;
    }

    /// The keys held changed: the view drawn moves by `motion` from where it got to.
    pub fn set_motion(&mut self, file: usize, motion: Motion) {
        let Some(view) = self.view.as_mut().filter(|v| v.file == file) else {
            return;
        };
        if !motion.moves() {
            self.last = None;
        }
        view.motion = motion;
    }

    /// Whether the next animation frame has something to draw.
    pub fn pending(&self) -> bool {
        self.view
            .as_ref()
            .is_some_and(|v| self.changed || v.motion.moves())
    }

    /// The file of the view drawn.
    pub fn file(&self) -> Option<usize> {
        self.view.as_ref().map(|v| v.file)
    }

    /// The view to draw in the animation frame at `t` (ms), moved by its motion since the last
    /// frame (for a trace `length` ns long); `None` when nothing changed.
    pub fn next(&mut self, t: f64, length: f64) -> Option<View> {
        if !self.pending() {
            return None;
        }
        let view = self.view.as_mut()?;
        if view.motion.moves() {
            let dt = self
                .last
                .map_or(FIRST_STEP, |last| (t - last).clamp(0.0, MAX_STEP));
            self.last = Some(t);
            let motion = view.motion.clone();
            advance(view, &motion, dt, length);
        }
        self.changed = false;
        let drawn = view.clone();
        // A slice is revealed once: later frames keep the scroll it was drawn with.
        view.reveal = None;
        Some(drawn)
    }

    /// The scroll the frame was drawn with (moved to reveal a slice, kept within the tracks).
    pub fn drawn(&mut self, scroll: f64) {
        if let Some(view) = &mut self.view {
            view.scroll = scroll;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::{GUTTER, PAN_RATE, ZOOM_RATE};
    use wasm_bindgen_test::wasm_bindgen_test;

    fn view(seq: u64) -> View {
        View {
            file: 0,
            start: 0.0,
            end: 1e6,
            width: GUTTER + 1000.0,
            height: 600.0,
            ratio: 1.0,
            scroll: 0.0,
            collapsed: Vec::new(),
            selected: None,
            reveal: Some(3),
            range: None,
            finding: None,
            seq,
            motion: Motion::default(),
        }
    }

    /// Views posted between two frames replace each other: the frame draws the last, once.
    #[wasm_bindgen_test]
    fn a_frame_draws_the_latest_view_once() {
        let mut frames = Frames::default();
        assert!(frames.next(0.0, 1e6).is_none());
        for seq in 1..=5 {
            frames.show(view(seq));
        }
        let drawn = frames.next(16.0, 1e6).expect("a frame");
        assert_eq!((drawn.seq, drawn.reveal), (5, Some(3)));
        frames.drawn(120.0);
        assert!(!frames.pending() && frames.next(33.0, 1e6).is_none());
        let unrevealed = |seq| View {
            reveal: None,
            ..view(seq)
        };
        frames.show(unrevealed(6));
        let again = frames.next(50.0, 1e6).expect("a frame");
        assert_eq!((again.seq, again.reveal), (6, None), "revealed once");
        // A view posted before the frame that would reveal a slice still reveals it.
        frames.show(view(7));
        frames.show(unrevealed(8));
        let revealed = frames.next(66.0, 1e6).expect("a frame");
        assert_eq!((revealed.seq, revealed.reveal), (8, Some(3)));
    }

    /// A held key moves the view by the frames' own time steps, around the pointer, and stops
    /// where it got to when released; a later view replaces it.
    #[wasm_bindgen_test]
    fn held_keys_move_the_view_by_frame_time() {
        let mut frames = Frames::default();
        frames.show(view(1));
        let x = GUTTER + 250.0;
        frames.set_motion(
            0,
            Motion {
                zoom: -ZOOM_RATE,
                pan: 0.0,
                x,
            },
        );
        let first = frames.next(1000.0, 1e6).expect("moving");
        assert_eq!(first.reveal, Some(3));
        let second = frames.next(1100.0, 1e6).expect("moving");
        assert_eq!(second.reveal, None, "revealed once");
        let span = second.end - second.start;
        let expected = 1e6 * (-ZOOM_RATE * (FIRST_STEP + 100.0)).exp();
        assert!(
            (span - expected).abs() < 1e-6 * expected,
            "{span} vs {expected}"
        );
        // The time under the pointer (a quarter of the width) stays put.
        assert!((second.start + 0.25 * span - 250_000.0).abs() < 1e-6);
        frames.set_motion(0, Motion::default());
        assert!(
            frames.next(1200.0, 1e6).is_none(),
            "nothing moves, nothing changed"
        );
        frames.set_motion(
            0,
            Motion {
                zoom: 0.0,
                pan: PAN_RATE,
                x,
            },
        );
        let panned = frames.next(5000.0, 1e6).expect("moving");
        let step = span * PAN_RATE * FIRST_STEP;
        assert!((panned.start - second.start - step).abs() < 1e-6 * span);
        frames.show(view(2));
        assert_eq!(frames.next(5016.0, 1e6).expect("a frame").start, 0.0);
    }
}
