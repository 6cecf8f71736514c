//! Draws a view of the timeline on the worker's `OffscreenCanvas`, and says what lies under a
//! point of it. Both read the same [`Geometry`], so what is picked is what was drawn.
//!
//! One file on purpose: drawing and picking share `Geometry` and `Scale`, so that what is picked
//! is what was drawn; its unit tests cover the ruler's ticks and label fitting.
//!
//! The canvas, top to bottom: a fixed header (time ruler, steps, the window detector's heat
//! strip, the flagged windows' bands), then the tracks, scrolled: per group a header row, then
//! its lanes' rows and its counters. Labels sit in a gutter on the left.

use std::cell::RefCell;
use std::f64::consts::PI;

use torchtraceap::model::{StrId, Trace};
use torchtraceap::timeline::bands::{Band, Score};
use torchtraceap::timeline::layout::Counter;
use torchtraceap::timeline::steps::StepStrip;
use torchtraceap::timeline::{inspect, lod, Layout};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::OffscreenCanvasRenderingContext2d as Context;

use crate::format::{bytes, duration};
use crate::geometry::{BANDS_H, GUTTER, HEADER, HEAT_H, RULER_H, STEPS_H};
use crate::protocol::{Drawn, Picked, View};

const GROUP_H: f64 = 20.0;
const ROW_H: f64 = 18.0;
const COUNTER_H: f64 = 36.0;
/// The most ticks the ruler draws (a wide canvas has about 20).
const MAX_TICKS: usize = 200;
/// Approximate width of one character of the 11px label font.
const CHAR_W: f64 = 6.2;
/// Slices drawn at least this wide (so zero-duration ones show).
const MIN_W: f64 = 1.0;

/// A laid-out trace with its diagnosis, as the worker keeps it for drawing.
pub struct Timeline {
    pub layout: Layout,
    pub bands: Vec<Band>,
    pub scores: Vec<Score>,
    /// The steps and their labels.
    pub steps: StepStrip,
    /// Per finding id, the names its evidence cites (interned ids): outlined while it is focused.
    pub evidence: Vec<(String, Vec<StrId>)>,
    /// The last selected range's contents: each draw reports them, and a range kept while the
    /// view pans and zooms is counted once.
    pub in_range: RefCell<Option<(i64, i64, InRange)>>,
    /// The heat strip's fill styles, made once ([`heat_colours`]).
    pub heat_colours: Vec<String>,
}

/// Slices in a range by kind: `(kind label, count, ns inside the range)`.
type InRange = Vec<(String, u64, i64)>;

/// One horizontal strip of the tracks area.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Strip {
    Group(u32),
    /// A row of slices: the row index, and whether it is its lane's first (labelled) row.
    Row {
        row: u32,
        lane: u32,
        first: bool,
    },
    Counter(u32),
}

/// Where each strip is, top to bottom (`y` from the top of the tracks area, unscrolled).
struct Geometry {
    strips: Vec<(f64, f64, Strip)>,
    height: f64,
}

impl Geometry {
    fn of(layout: &Layout, collapsed: &[u32]) -> Geometry {
        let mut strips = Vec::new();
        let mut y = 0.0;
        let mut push = |h: f64, s: Strip| {
            strips.push((y, h, s));
            y += h;
        };
        for (g, group) in layout.groups.iter().enumerate() {
            push(GROUP_H, Strip::Group(g as u32));
            if collapsed.contains(&(g as u32)) {
                continue;
            }
            for lane in group.lanes.clone() {
                for row in layout.lanes[lane as usize].rows.clone() {
                    let first = row == layout.lanes[lane as usize].rows.start;
                    push(ROW_H, Strip::Row { row, lane, first });
                }
            }
            for c in group.counters.clone() {
                push(COUNTER_H, Strip::Counter(c));
            }
        }
        Geometry { strips, height: y }
    }

    /// The strips visible in a viewport of `height` scrolled by `scroll`.
    fn visible(&self, scroll: f64, height: f64) -> impl Iterator<Item = (f64, f64, Strip)> + '_ {
        let from = self.strips.partition_point(|s| s.0 + s.1 <= scroll);
        self.strips[from..]
            .iter()
            .take_while(move |s| s.0 < scroll + height)
            .copied()
    }
}

/// Maps time to x and back for a view. Trace times are integer ns on the trace's clock, often
/// about 1.7e18 (ns since 1970), where an `f64` steps by 256 ns; so the view's times are offsets
/// from the trace's start (`origin`), and a trace time becomes an offset in integers first.
struct Scale {
    origin: i64,
    start: f64,
    end: f64,
    ns_per_px: f64,
}

impl Scale {
    fn of(v: &View, origin: i64) -> Scale {
        let px = (v.width - GUTTER).max(1.0);
        Scale {
            origin,
            start: v.start,
            end: v.end,
            ns_per_px: ((v.end - v.start) / px).max(1e-6),
        }
    }

    /// The x of a trace time.
    fn x_of_time(&self, t: i64) -> f64 {
        self.x_of_offset(t.saturating_sub(self.origin) as f64)
    }

    /// The x of an offset from the trace's start.
    fn x_of_offset(&self, offset: f64) -> f64 {
        GUTTER + (offset - self.start) / self.ns_per_px
    }

    /// The trace time at `x`.
    fn time_at(&self, x: f64) -> i64 {
        let offset = (self.start + (x - GUTTER) * self.ns_per_px).round();
        // `as` saturates: a view panned far away stays far away.
        self.origin.saturating_add(offset as i64)
    }

    /// The trace times at the view's left and right edges.
    fn range(&self) -> (i64, i64) {
        let end = self.origin.saturating_add(self.end.ceil() as i64);
        (self.time_at(GUTTER), end)
    }
}

/// Half the width of a memory peak's marker, and how near a click picks it, CSS pixels.
const PEAK_MARK: f64 = 5.0;

/// The height of a memory track's bar for `value` in a strip `h` high.
fn counter_bar(counter: &Counter, h: f64, value: i64) -> f64 {
    (h - 4.0) * (value as f64 / counter.max.max(1) as f64)
}

/// Where a memory track in the strip at `top` marks its peak (the top of its bar), if the
/// peak is in view.
fn peak_at(counter: &Counter, scale: &Scale, v: &View, top: f64, h: f64) -> Option<[f64; 2]> {
    let p = counter.peak.as_ref()?;
    let x = scale.x_of_time(p.at);
    (GUTTER..=v.width)
        .contains(&x)
        .then(|| [x, top + h - 2.0 - counter_bar(counter, h, p.allocated)])
}

/// 24 hues; a slice's is chosen by its interned name, so one name has one colour in a trace.
const PALETTE: [&str; 24] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac", "#5778a4", "#e49444", "#d1615d", "#85b6b2", "#6a9f58", "#e7ca60",
    "#a87c9f", "#f1a2a9", "#967662", "#b8b0ac", "#3b6b9c", "#c96f1f", "#b94a48", "#5a9a94",
];
/// The colour of merged runs of sub-pixel slices.
const MERGED: &str = "#8a94a6";

/// Levels of the heat strip's opacity: a probability is drawn at one of these many steps.
const HEAT_LEVELS: usize = 93;

/// The heat strip's colour at each level: opacity 0.08 for probability 0, 1.0 for 1.
pub fn heat_colours() -> Vec<String> {
    (0..HEAT_LEVELS)
        .map(|k| format!("rgba(200, 30, 30, {:.2})", 0.08 + k as f64 / 100.0))
        .collect()
}

/// Runs of equal values: `(first index, length)` of each, in order.
fn runs<T: PartialEq>(values: &[T]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut k = 0;
    std::iter::from_fn(move || {
        let first = values.get(k)?;
        let start = k;
        k += values[k..].iter().take_while(|x| *x == first).count();
        Some((start, k - start))
    })
}

/// The level of a probability in [`heat_colours`].
fn heat_level(probability: f32) -> usize {
    ((f64::from(probability).clamp(0.0, 1.0) * 0.92 * 100.0).round() as usize).min(HEAT_LEVELS - 1)
}

fn colour_of(name: StrId) -> usize {
    (name.wrapping_mul(2_654_435_761) >> 8) as usize % PALETTE.len()
}

/// A band's colour: red for a finding, purple for a region no finding explains.
fn band_colour(finding: &str) -> &'static str {
    if finding.starts_with("unexplained:") {
        "rgba(128, 0, 160, 0.28)"
    } else {
        "rgba(220, 50, 32, 0.22)"
    }
}

/// A tick step of 1, 2 or 5 × 10^k ns giving ticks at least `min_px` apart.
fn tick_step(ns_per_px: f64, min_px: f64) -> f64 {
    let raw = ns_per_px * min_px;
    let mut step = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if step * m >= raw {
            step *= m;
            break;
        }
    }
    step
}

/// `text` cut to fit `width` pixels, or `None` when not even a few characters fit.
fn fit(text: &str, width: f64) -> Option<String> {
    let room = ((width - 6.0) / CHAR_W).floor() as usize;
    if room < 3 {
        return None;
    }
    if text.chars().count() <= room {
        return Some(text.to_string());
    }
    let cut: String = text.chars().take(room - 1).collect();
    Some(format!("{cut}…"))
}

impl Timeline {
    /// Draws the view; `ctx` belongs to a canvas already sized to it.
    pub fn draw(&self, t: &Trace, ctx: &Context, v: &View) -> Result<Drawn, JsValue> {
        let started = now();
        let scale = Scale::of(v, self.layout.span.0);
        let geometry = Geometry::of(&self.layout, &v.collapsed);
        let body_h = (v.height - HEADER).max(0.0);
        let v = &View {
            scroll: self.scroll_for(v, &geometry, body_h),
            ..v.clone()
        };
        ctx.set_transform(v.ratio, 0.0, 0.0, v.ratio, 0.0, 0.0)?;
        ctx.set_fill_style_str("#ffffff");
        ctx.fill_rect(0.0, 0.0, v.width, v.height);
        ctx.set_font("11px system-ui, sans-serif");
        ctx.set_text_baseline("middle");
        let mut spans = 0u64;
        // The tracks, clipped below the header.
        ctx.save();
        ctx.begin_path();
        ctx.rect(0.0, HEADER, v.width, body_h);
        ctx.clip();
        for (y, h, strip) in geometry.visible(v.scroll, body_h) {
            let top = HEADER + y - v.scroll;
            spans += self.draw_strip(t, ctx, v, &scale, strip, top, h)?;
        }
        let selected_box = self.draw_overlays(t, ctx, v, &scale, &geometry)?;
        ctx.restore();
        self.draw_header(ctx, v, &scale)?;
        let origin = self.layout.span.0;
        let in_range = v
            .range
            .map(|(a, b)| {
                let at = |offset: f64| origin.saturating_add(offset.round() as i64);
                self.in_range_cached(t, at(a.min(b)), at(a.max(b)))
            })
            .unwrap_or_default();
        Ok(Drawn {
            file: v.file,
            seq: v.seq,
            start: v.start,
            end: v.end,
            // The frame's time is the caller's (`Session::frame`).
            frame_at: 0.0,
            draw_ms: now() - started,
            content_height: geometry.height,
            scroll: v.scroll,
            spans,
            selected_box,
            in_range,
            memory_peaks: self.memory_peaks(v, &scale, &geometry),
        })
    }

    /// The view's scroll, moved so the slice to reveal shows, and kept within the tracks.
    fn scroll_for(&self, v: &View, geometry: &Geometry, body_h: f64) -> f64 {
        let mut scroll = v.scroll;
        let row = v
            .reveal
            .and_then(|e| self.layout.row_of.get(e as usize).copied());
        let strip = row.and_then(|row| {
            geometry
                .strips
                .iter()
                .find(|s| matches!(s.2, Strip::Row { row: r, .. } if r == row))
        });
        if let Some(&(y, h, _)) = strip {
            if y < scroll || y + h > scroll + body_h {
                scroll = y - body_h / 3.0;
            }
        }
        scroll.min(geometry.height - body_h).max(0.0)
    }

    #[allow(clippy::too_many_arguments)]
    fn draw_strip(
        &self,
        t: &Trace,
        ctx: &Context,
        v: &View,
        scale: &Scale,
        strip: Strip,
        top: f64,
        h: f64,
    ) -> Result<u64, JsValue> {
        let layout = &self.layout;
        match strip {
            Strip::Group(g) => {
                let group = &layout.groups[g as usize];
                ctx.set_fill_style_str(if group.gpu { "#e8eef7" } else { "#eef3ea" });
                ctx.fill_rect(0.0, top, v.width, h);
                ctx.set_fill_style_str("#222");
                let arrow = if v.collapsed.contains(&g) {
                    "▸"
                } else {
                    "▾"
                };
                ctx.fill_text(&format!("{arrow} {}", group.label), 6.0, top + h / 2.0)?;
                Ok(0)
            }
            Strip::Row { row, lane, first } => {
                if first {
                    ctx.set_fill_style_str("#d0d4da");
                    ctx.fill_rect(0.0, top, v.width, 1.0);
                    ctx.set_fill_style_str("#333");
                    if let Some(label) = fit(&layout.lanes[lane as usize].label, GUTTER - 14.0) {
                        ctx.fill_text(&label, 14.0, top + h / 2.0)?;
                    }
                }
                let (from, to) = scale.range();
                let r = &layout.rows[row as usize];
                let spans = lod::spans(t, &r.events, &r.levels, from, to, scale.ns_per_px);
                let cited: &[StrId] = v
                    .finding
                    .as_deref()
                    .and_then(|id| self.evidence.iter().find(|e| e.0 == id))
                    .map_or(&[], |e| &e.1);
                let mut texts = Vec::new();
                let mut outlined = Vec::new();
                // Rectangles by colour (the palette's, then merged runs): one fill style each.
                let mut by_colour: Vec<Vec<(f64, f64)>> = vec![Vec::new(); PALETTE.len() + 1];
                for s in &spans {
                    let x0 = scale.x_of_time(s.start).max(GUTTER);
                    let x1 = scale.x_of_time(s.end).min(v.width);
                    let w = (x1 - x0).max(MIN_W);
                    let name = t.events.name[s.event as usize];
                    if s.merged > 1 {
                        by_colour[PALETTE.len()].push((x0, w));
                        continue;
                    }
                    by_colour[colour_of(name)].push((x0, w));
                    if cited.contains(&name) {
                        outlined.push((x0, w));
                    }
                    if w > 3.0 * CHAR_W + 6.0 {
                        if let Some(label) = fit(t.strings.get(name), w) {
                            texts.push((x0 + 3.0, label));
                        }
                    }
                }
                for (k, rects) in by_colour.iter().enumerate() {
                    if rects.is_empty() {
                        continue;
                    }
                    ctx.set_fill_style_str(PALETTE.get(k).copied().unwrap_or(MERGED));
                    for &(x, w) in rects {
                        ctx.fill_rect(x, top + 1.0, w, h - 2.0);
                    }
                }
                ctx.set_fill_style_str("#111");
                for (x, label) in texts {
                    ctx.fill_text(&label, x, top + h / 2.0)?;
                }
                // The focused finding's evidence.
                ctx.set_stroke_style_str("#d62728");
                ctx.set_line_width(2.0);
                for (x, w) in outlined {
                    ctx.stroke_rect(x, top + 1.0, w, h - 2.0);
                }
                Ok(spans.len() as u64)
            }
            Strip::Counter(c) => {
                let counter = &layout.counters[c as usize];
                ctx.set_fill_style_str("#333");
                if let Some(label) = fit(&counter.label, GUTTER - 14.0) {
                    ctx.fill_text(&label, 14.0, top + 10.0)?;
                }
                if let Some(p) = &counter.peak {
                    let peak = format!("peak {}", bytes(p.allocated.max(0) as u64));
                    ctx.fill_text(&peak, 14.0, top + 24.0)?;
                }
                let columns = (v.width - GUTTER).max(0.0).ceil() as usize;
                // Reserved behind, allocated in front: one rectangle per run of equal columns.
                for (points, colour) in
                    [(&counter.reserved, "#cfe3c8"), (&counter.points, "#6a9f58")]
                {
                    let values =
                        lod::counter_columns(points, scale.range().0, scale.ns_per_px, columns);
                    ctx.set_fill_style_str(colour);
                    for (k, run) in runs(&values) {
                        if let Some(value) = values[k] {
                            let bar = counter_bar(counter, h, value);
                            ctx.fill_rect(GUTTER + k as f64, top + h - 2.0 - bar, run as f64, bar);
                        }
                    }
                }
                if let Some([x, y]) = peak_at(counter, scale, v, top, h) {
                    ctx.set_fill_style_str("#d62728");
                    ctx.fill_rect(x - 0.5, y, 1.0, top + h - 2.0 - y);
                    ctx.begin_path();
                    ctx.move_to(x, y);
                    ctx.line_to(x - PEAK_MARK, y - PEAK_MARK);
                    ctx.line_to(x + PEAK_MARK, y - PEAK_MARK);
                    ctx.close_path();
                    ctx.fill();
                }
                Ok(columns as u64)
            }
        }
    }

    /// Where the visible memory tracks' peaks are drawn.
    fn memory_peaks(&self, v: &View, scale: &Scale, geometry: &Geometry) -> Vec<[f64; 2]> {
        let body_h = (v.height - HEADER).max(0.0);
        geometry
            .visible(v.scroll, body_h)
            .filter_map(|(y, h, strip)| match strip {
                Strip::Counter(c) => peak_at(
                    &self.layout.counters[c as usize],
                    scale,
                    v,
                    HEADER + y - v.scroll,
                    h,
                ),
                _ => None,
            })
            .collect()
    }

    /// Bands over the tracks, the range selected, the selected slice and its flows; returns
    /// where the selected slice was drawn.
    fn draw_overlays(
        &self,
        t: &Trace,
        ctx: &Context,
        v: &View,
        scale: &Scale,
        geometry: &Geometry,
    ) -> Result<Option<[f64; 4]>, JsValue> {
        let body_h = v.height - HEADER;
        for band in &self.bands {
            let focused = v.finding.as_deref() == Some(band.finding.as_str());
            if v.finding.is_some() && !focused {
                continue;
            }
            let (x0, x1) = (scale.x_of_time(band.start), scale.x_of_time(band.end));
            if x1 < GUTTER || x0 > v.width {
                continue;
            }
            ctx.set_fill_style_str(if focused {
                "rgba(220, 50, 32, 0.12)"
            } else {
                "rgba(220, 50, 32, 0.05)"
            });
            let x0 = x0.max(GUTTER);
            ctx.fill_rect(x0, HEADER, (x1 - x0).max(MIN_W), body_h);
        }
        if let Some((a, b)) = v.range {
            let (x0, x1) = (
                scale.x_of_offset(a.min(b)).max(GUTTER),
                scale.x_of_offset(a.max(b)),
            );
            ctx.set_fill_style_str("rgba(30, 100, 200, 0.15)");
            ctx.fill_rect(x0, HEADER, (x1 - x0).max(MIN_W), body_h);
        }
        let Some(selected) = v.selected else {
            return Ok(None);
        };
        let centre = |event: u32| -> Option<(f64, f64, f64)> {
            let row = self.layout.row_of.get(event as usize).copied()?;
            let (y, h, _) = geometry
                .strips
                .iter()
                .find(|s| matches!(s.2, Strip::Row { row: r, .. } if r == row))?;
            let s = t.events.start[event as usize];
            let e = t.events.end(event as usize);
            Some((
                scale.x_of_time(s),
                scale.x_of_time(e),
                HEADER + y - v.scroll + h / 2.0,
            ))
        };
        let mut drawn = None;
        if let Some((x0, x1, y)) = centre(selected) {
            let bounds = [x0, y - ROW_H / 2.0 + 1.0, (x1 - x0).max(MIN_W), ROW_H - 2.0];
            ctx.set_stroke_style_str("#000");
            ctx.set_line_width(2.0);
            ctx.stroke_rect(bounds[0], bounds[1], bounds[2], bounds[3]);
            drawn = Some(bounds);
            // Flows: from the launch to the GPU work it queued, whichever end is selected.
            let launch = t.launch_of(selected);
            let pairs: Vec<(u32, u32)> = match launch {
                Some(l) => vec![(l, selected)],
                None => self
                    .layout
                    .launched_by(selected)
                    .map(|g| (selected, g))
                    .collect(),
            };
            ctx.set_stroke_style_str("#c0392b");
            ctx.set_fill_style_str("#c0392b");
            ctx.set_line_width(1.5);
            for (from, to) in pairs {
                if let (Some((a, _, ya)), Some((b, _, yb))) = (centre(from), centre(to)) {
                    arrow(ctx, a, ya, b, yb)?;
                }
            }
        }
        Ok(drawn)
    }

    fn draw_header(&self, ctx: &Context, v: &View, scale: &Scale) -> Result<(), JsValue> {
        ctx.set_fill_style_str("#f6f7f9");
        ctx.fill_rect(0.0, 0.0, v.width, HEADER);
        ctx.set_fill_style_str("#c8ccd2");
        ctx.fill_rect(0.0, HEADER - 1.0, v.width, 1.0);
        // Ruler: ticks at multiples of the step from the trace's start, counted (never summed:
        // a step below the precision of the offsets would not move).
        let step = tick_step(scale.ns_per_px, 90.0);
        let first = (v.start / step).ceil();
        ctx.set_fill_style_str("#555");
        for k in 0..MAX_TICKS {
            let tick = (first + k as f64) * step;
            if tick > v.end {
                break;
            }
            let x = scale.x_of_offset(tick);
            ctx.fill_rect(x, RULER_H - 6.0, 1.0, 6.0);
            ctx.fill_text(&duration(tick), x + 3.0, RULER_H / 2.0)?;
        }
        ctx.fill_text(&format!("{} / tick", duration(step)), 6.0, RULER_H / 2.0)?;
        // Steps.
        let y = RULER_H;
        ctx.fill_text(self.steps.heading, 6.0, y + STEPS_H / 2.0)?;
        for (k, step) in self.steps.marks.iter().enumerate() {
            let (x0, x1) = (
                scale.x_of_time(step.start).max(GUTTER),
                scale.x_of_time(step.end),
            );
            if x1 < GUTTER || x0 > v.width {
                continue;
            }
            ctx.set_fill_style_str(if k % 2 == 0 { "#dfe3ea" } else { "#eceff4" });
            ctx.fill_rect(x0, y + 1.0, (x1 - x0).max(MIN_W), STEPS_H - 2.0);
            if x1 - x0 < 3.0 * CHAR_W + 6.0 {
                continue;
            }
            if let Some(label) = fit(&step.label, x1 - x0) {
                ctx.set_fill_style_str("#333");
                ctx.fill_text(&label, x0 + 3.0, y + STEPS_H / 2.0)?;
            }
        }
        // The window detector's probability per window.
        let y = RULER_H + STEPS_H;
        ctx.set_fill_style_str("#555");
        ctx.fill_text("window score", 6.0, y + HEAT_H / 2.0)?;
        let columns = (v.width - GUTTER).max(0.0).ceil() as usize;
        let heat: Vec<Option<usize>> =
            lod::score_columns(&self.scores, scale.range().0, scale.ns_per_px, columns)
                .into_iter()
                .map(|p| p.map(heat_level))
                .collect();
        for (k, run) in runs(&heat) {
            if let Some(level) = heat[k] {
                ctx.set_fill_style_str(&self.heat_colours[level]);
                ctx.fill_rect(GUTTER + k as f64, y + 1.0, run as f64, HEAT_H - 2.0);
            }
        }
        // Flagged windows.
        let y = RULER_H + STEPS_H + HEAT_H;
        ctx.set_fill_style_str("#555");
        ctx.fill_text("flagged windows", 6.0, y + BANDS_H / 2.0)?;
        for band in &self.bands {
            let (x0, x1) = (
                scale.x_of_time(band.start).max(GUTTER),
                scale.x_of_time(band.end),
            );
            if x1 < GUTTER || x0 > v.width {
                continue;
            }
            ctx.set_fill_style_str(band_colour(&band.finding));
            ctx.fill_rect(x0, y + 1.0, (x1 - x0).max(MIN_W + 1.0), BANDS_H - 2.0);
            if let Some(label) = fit(&band.label, x1 - x0) {
                ctx.set_fill_style_str("#5a0f08");
                ctx.fill_text(&label, x0 + 3.0, y + BANDS_H / 2.0)?;
            }
        }
        if let Some((a, b)) = v.range {
            let (x0, x1) = (
                scale.x_of_offset(a.min(b)).max(GUTTER),
                scale.x_of_offset(a.max(b)),
            );
            ctx.set_fill_style_str("rgba(30, 100, 200, 0.85)");
            ctx.fill_rect(x0, 0.0, (x1 - x0).max(MIN_W), 3.0);
            ctx.fill_text(&duration((b - a).abs()), x0 + 3.0, RULER_H - 6.0)?;
        }
        Ok(())
    }

    /// Slices meeting `[from, to]`, by kind: count and time inside the range.
    fn in_range_cached(&self, t: &Trace, from: i64, to: i64) -> InRange {
        let mut cache = self.in_range.borrow_mut();
        match &*cache {
            Some((f, e, found)) if (*f, *e) == (from, to) => found.clone(),
            _ => {
                let found = self.in_range(t, from, to);
                *cache = Some((from, to, found.clone()));
                found
            }
        }
    }

    fn in_range(&self, t: &Trace, from: i64, to: i64) -> InRange {
        let e = &t.events;
        let mut by_kind: InRange = Vec::new();
        for row in &self.layout.rows {
            let first = row.events.partition_point(|&x| e.end(x as usize) < from);
            for &x in row.events[first..]
                .iter()
                .take_while(|&&x| e.start[x as usize] <= to)
            {
                let i = x as usize;
                let inside = e.end(i).min(to) - e.start[i].max(from);
                let kind = e.kind[i].label();
                match by_kind.iter_mut().find(|k| k.0 == kind) {
                    Some(k) => {
                        k.1 += 1;
                        k.2 += inside.max(0);
                    }
                    None => by_kind.push((kind.to_string(), 1, inside.max(0))),
                }
            }
        }
        by_kind.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
        by_kind
    }

    /// What lies under `(x, y)` in the view.
    pub fn pick(&self, t: &Trace, v: &View, x: f64, y: f64) -> Picked {
        let scale = Scale::of(v, self.layout.span.0);
        if y < HEADER {
            let bands_top = RULER_H + STEPS_H + HEAT_H;
            if y >= bands_top && x >= GUTTER {
                let at = scale.time_at(x);
                let slop = (2.0 * scale.ns_per_px).ceil() as i64;
                if let Some(band) = self.bands.iter().find(|b| {
                    b.start.saturating_sub(slop) <= at && at <= b.end.saturating_add(slop)
                }) {
                    return Picked::Band {
                        finding: band.finding.clone(),
                    };
                }
            }
            return Picked::Nothing;
        }
        let geometry = Geometry::of(&self.layout, &v.collapsed);
        let within = y - HEADER + v.scroll;
        let Some(&(geometry_top, _, strip)) = geometry
            .strips
            .iter()
            .find(|s| s.0 <= within && within < s.0 + s.1)
        else {
            return Picked::Nothing;
        };
        match strip {
            Strip::Group(index) => Picked::Group { index },
            Strip::Counter(c) => {
                let counter = &self.layout.counters[c as usize];
                let top = HEADER + geometry_top - v.scroll;
                match (&counter.peak, peak_at(counter, &scale, v, top, COUNTER_H)) {
                    (Some(p), Some([px, _])) if (x - px).abs() <= PEAK_MARK => Picked::MemoryPeak {
                        track: counter.label.clone(),
                        peak: Box::new(p.clone()),
                    },
                    _ => Picked::Nothing,
                }
            }
            Strip::Row { row, .. } if x >= GUTTER => {
                let at = scale.time_at(x);
                let slop = (2.0 * scale.ns_per_px).ceil() as i64;
                match self.layout.hit(t, row, at, slop) {
                    Some(event) => {
                        Picked::Slice(Box::new(inspect::details(t, &self.layout, event)))
                    }
                    None => Picked::Nothing,
                }
            }
            _ => Picked::Nothing,
        }
    }
}

/// A line from `(x0, y0)` to `(x1, y1)` with an arrowhead at the end.
fn arrow(ctx: &Context, x0: f64, y0: f64, x1: f64, y1: f64) -> Result<(), JsValue> {
    ctx.begin_path();
    ctx.move_to(x0, y0);
    ctx.line_to(x1, y1);
    ctx.stroke();
    let angle = (y1 - y0).atan2(x1 - x0);
    ctx.begin_path();
    ctx.move_to(x1, y1);
    for side in [-1.0, 1.0] {
        let a = angle + PI - side * 0.4;
        ctx.line_to(x1 + 8.0 * a.cos(), y1 + 8.0 * a.sin());
    }
    ctx.close_path();
    ctx.fill();
    Ok(())
}

fn now() -> f64 {
    js_sys::global()
        .dyn_into::<web_sys::WorkerGlobalScope>()
        .ok()
        .and_then(|w| w.performance())
        .map_or_else(js_sys::Date::now, |p| p.now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn ticks_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(tick_step(1.0, 90.0), 100.0);
        assert_eq!(tick_step(1000.0, 90.0), 100_000.0);
        assert_eq!(tick_step(3.0, 90.0), 500.0);
        assert_eq!(tick_step(1.2, 90.0), 200.0);
    }

    #[wasm_bindgen_test]
    fn labels_are_cut_to_fit_or_left_out() {
        assert_eq!(fit("aten::conv2d", 200.0).as_deref(), Some("aten::conv2d"));
        assert_eq!(fit("aten::conv2d", 40.0).as_deref(), Some("aten…"));
        assert_eq!(fit("aten::conv2d", 20.0), None);
    }

    #[wasm_bindgen_test]
    fn runs_cover_the_columns_once_in_order() {
        let columns = [None, Some(3), Some(3), Some(5), None, None];
        let found: Vec<_> = runs(&columns).collect();
        assert_eq!(found, vec![(0, 1), (1, 2), (3, 1), (4, 2)]);
        assert_eq!(runs::<u8>(&[]).count(), 0);
        assert_eq!(heat_level(0.0), 0);
        assert_eq!(heat_colours()[heat_level(1.0)], "rgba(200, 30, 30, 1.00)");
    }
}
