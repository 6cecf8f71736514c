//! The timeline canvas's geometry, which page and worker share: the worker draws and picks
//! with it, the page turns pointer positions into times with it and zooms a view the way the
//! worker's frames do ([`zoom`]).

/// Width of the label gutter left of the tracks, CSS pixels.
pub const GUTTER: f64 = 200.0;
/// Heights of the fixed header's strips: the time ruler, the steps, the window detector's heat
/// strip and the flagged windows' bands.
pub const RULER_H: f64 = 20.0;
pub const STEPS_H: f64 = 16.0;
pub const HEAT_H: f64 = 8.0;
pub const BANDS_H: f64 = 14.0;
/// Height of the fixed header above the tracks.
pub const HEADER: f64 = RULER_H + STEPS_H + HEAT_H + BANDS_H;

/// The narrowest span a view zooms to, ns.
pub const MIN_SPAN: f64 = 100.0;
/// Zoom per millisecond while W or S is held (the span halves in about 170 ms).
pub const ZOOM_RATE: f64 = 0.004;
/// Pan per millisecond while A or D is held, as a share of the span shown.
pub const PAN_RATE: f64 = 0.0012;

/// `[start, end]` scaled by `factor` (< 1 zooms in) keeping the time under `x` (CSS pixels on a
/// canvas `width` wide) in place, between [`MIN_SPAN`] and ten times the trace's `length`.
pub fn zoom(start: f64, end: f64, factor: f64, x: f64, width: f64, length: f64) -> (f64, f64) {
    let px = (width - GUTTER).max(1.0);
    let at = start + (x.max(GUTTER) - GUTTER) / px * (end - start);
    let most = (10.0 * length).max(1e6);
    let span = ((end - start) * factor).clamp(MIN_SPAN, most);
    let share = (at - start) / (end - start).max(1e-9);
    let start = at - share * span;
    (start, start + span)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn zoom_stays_between_its_bounds() {
        let (s, e) = zoom(0.0, 1000.0, 1e-6, GUTTER, GUTTER + 100.0, 1e9);
        assert_eq!((s, e), (0.0, MIN_SPAN));
        let (s, e) = zoom(0.0, 1e9, 1e6, GUTTER, GUTTER + 100.0, 1e9);
        assert_eq!((s, e), (0.0, 1e10));
    }
}
