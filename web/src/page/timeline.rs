//! The timeline view: a canvas the worker draws on (its control is handed to the worker as an
//! `OffscreenCanvas`), the keys and pointer gestures Perfetto users know, search, and the
//! selected slice's details. The page only keeps the view (time range, scroll, selection) and
//! posts it whenever it changes; it never holds the trace. The worker draws the latest view on
//! its own animation frames and moves it while W/S/A/D are held (`worker::frames`), so frames
//! never wait for the page. A drawn frame re-renders nothing: the page takes the range drawn
//! back, sets the canvas's `data-*` marks and, at most every [`STATUS_MS`], the status line.
//!
//! One file on purpose: it is one Yew component (`Timeline`) whose state (the view, the
//! drag, the selection, the worker's replies) every key, gesture and reply changes in one `update`,
//! read together with its `view`; the drawing is the worker's (`worker::draw`).
//!
//! Keys (on the focused timeline): W/S zoom in and out around the pointer, A/D pan, F fits the
//! selected range, else the selected slice, else the whole trace; Escape clears the selection.
//! Ctrl + wheel zooms, the wheel scrolls the tracks, Shift + wheel pans; dragging pans,
//! Shift + drag selects a time range; a click selects what is under the pointer.

use std::collections::BTreeSet;

use gloo_timers::callback::Timeout;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{
    AddEventListenerOptions, HtmlCanvasElement, HtmlInputElement, KeyboardEvent, WheelEvent,
};
use yew::prelude::*;

use torchtraceap::timeline::inspect::{Details, Place};
use torchtraceap::timeline::layout::CounterPeak;

use super::client::Client;
use super::errors::request_error;
use crate::format::{bytes, duration};
use crate::geometry::{self, GUTTER, HEADER, MIN_SPAN, PAN_RATE, ZOOM_RATE};
use crate::protocol::{
    Drawn, Found, Motion, Opened, Picked, Reply, Request, TimelineReply, TimelineRequest, View,
};

#[derive(Properties, PartialEq)]
pub struct TimelineProps {
    pub file: usize,
    /// The worker's client: requests go through it, replies and frames come back.
    pub client: Client,
    /// A finding to move to, numbered so that asking twice moves twice.
    pub focus: Option<(u32, String)>,
    /// A finding's band was clicked.
    pub on_finding: Callback<String>,
}

pub enum Msg {
    Reply(Box<TimelineReply>),
    KeyDown(String),
    KeyUp(String),
    /// Time to show the latest frame's status line.
    Status,
    Wheel {
        dx: f64,
        dy: f64,
        x: f64,
        zoom: bool,
    },
    Down {
        x: f64,
        y: f64,
        shift: bool,
    },
    Move {
        x: f64,
        y: f64,
    },
    Up {
        x: f64,
        y: f64,
    },
    Leave,
    SearchText(String),
    Search,
    Step(isize),
    Fit,
    GoTo(Place),
    Resized,
}

struct Drag {
    x: f64,
    y: f64,
    start: f64,
    end: f64,
    scroll: f64,
    select: bool,
    moved: bool,
}

pub struct Timeline {
    /// Where this timeline takes the worker's frames (`Client::listen`): to the timeline alone,
    /// which re-renders on a drawn frame without the rest of the page.
    listener: Callback<Box<TimelineReply>>,
    canvas: NodeRef,
    handed_over: bool,
    opened: Option<Opened>,
    start: f64,
    end: f64,
    scroll: f64,
    collapsed: Vec<u32>,
    selected: Option<u32>,
    /// Scroll to this slice's row on the next draw.
    reveal: Option<u32>,
    range: Option<(f64, f64)>,
    finding: Option<String>,
    /// The number of the last view posted (`View::seq`).
    seq: u64,
    drawn: Option<Drawn>,
    draws: u64,
    /// The status line, set by hand (a frame re-renders nothing), when it was last set (ms) and
    /// the timer that sets it to the latest frame's.
    status: NodeRef,
    status_at: f64,
    status_timer: Option<Timeout>,
    details: Option<Box<Details>>,
    /// The memory peak clicked (its track's label and the peak), shown in place of a slice's
    /// details.
    memory_peak: Option<(String, Box<CounterPeak>)>,
    search: String,
    found: Option<Found>,
    found_at: usize,
    held: BTreeSet<String>,
    pointer_x: f64,
    drag: Option<Drag>,
    seen_focus: u32,
    error: Option<String>,
    // Kept alive with the component: the non-passive wheel handler and the resize handler.
    _wheel: Option<Closure<dyn FnMut(WheelEvent)>>,
    _resize: Option<Closure<dyn FnMut()>>,
}

/// The status line changes at most this often while frames come (ms): each change costs the
/// page a layout.
const STATUS_MS: f64 = 250.0;

impl Timeline {
    fn width(&self) -> f64 {
        self.canvas
            .cast::<HtmlCanvasElement>()
            .map_or(800.0, |c| f64::from(c.client_width()).max(GUTTER + 100.0))
    }

    fn height(&self) -> f64 {
        self.canvas
            .cast::<HtmlCanvasElement>()
            .map_or(500.0, |c| f64::from(c.client_height()).max(HEADER + 40.0))
    }

    fn view(&self, file: usize) -> View {
        View {
            file,
            start: self.start,
            end: self.end,
            width: self.width(),
            height: self.height(),
            ratio: web_sys::window().map_or(1.0, |w| w.device_pixel_ratio()),
            scroll: self.scroll,
            collapsed: self.collapsed.clone(),
            selected: self.selected,
            reveal: self.reveal,
            range: self.range,
            finding: self.finding.clone(),
            seq: self.seq,
            motion: self.motion(),
        }
    }

    /// How the keys held move the view.
    fn motion(&self) -> Motion {
        let held = |key: &str| f64::from(u8::from(self.held.contains(key)));
        Motion {
            zoom: ZOOM_RATE * (held("s") - held("w")),
            pan: PAN_RATE * (held("d") - held("a")),
            x: self.pointer_x,
        }
    }

    /// Posts the current view, numbered; the worker draws the latest on its next animation
    /// frame, so views posted meanwhile replace each other.
    fn redraw(&mut self, ctx: &Context<Self>) {
        if self.opened.is_none() {
            return;
        }
        self.seq += 1;
        let view = self.view(ctx.props().file);
        self.reveal = None;
        ask(ctx, TimelineRequest::View(view));
    }

    /// Tells the worker how the keys held move the view now.
    fn moved(&self, ctx: &Context<Self>) {
        if self.opened.is_some() {
            ask(
                ctx,
                TimelineRequest::Motion {
                    file: ctx.props().file,
                    motion: self.motion(),
                },
            );
        }
    }

    fn x_to_t(&self, x: f64) -> f64 {
        let px = (self.width() - GUTTER).max(1.0);
        self.start + (x - GUTTER) / px * (self.end - self.start)
    }

    /// Zooms by `factor` (< 1 zooms in) keeping the time under `x` in place ([`geometry::zoom`]).
    fn zoom(&mut self, factor: f64, x: f64) {
        (self.start, self.end) =
            geometry::zoom(self.start, self.end, factor, x, self.width(), self.length());
    }

    fn pan(&mut self, by: f64) {
        self.start += by;
        self.end += by;
    }

    /// The trace's span, ns.
    fn length(&self) -> f64 {
        self.opened
            .as_ref()
            .map_or(0.0, |o| o.span.1.saturating_sub(o.span.0) as f64)
    }

    /// A trace time as the view's offset from the trace's start (exact in integers first).
    fn offset(&self, t: i64) -> f64 {
        t.saturating_sub(self.opened.as_ref().map_or(0, |o| o.span.0)) as f64
    }

    /// Shows offsets `[start, end]` with a margin, at least [`MIN_SPAN`] wide.
    fn show(&mut self, start: f64, end: f64) {
        let centre = (start + end) / 2.0;
        let half = (end - start).max(MIN_SPAN) * 0.6;
        self.start = centre - half;
        self.end = centre + half;
    }

    /// Shows a trace-time range `[start, end]`.
    fn show_times(&mut self, start: i64, end: i64) {
        self.show(self.offset(start), self.offset(end));
    }

    fn fit(&mut self) {
        if let Some((a, b)) = self.range {
            self.show(a.min(b), a.max(b));
        } else if let Some(d) = &self.details {
            let (s, e) = (d.place.start, d.place.start.saturating_add(d.place.dur));
            self.show_times(s, e);
        } else {
            self.show(0.0, self.length());
        }
    }

    fn focus(&mut self, id: &str) {
        let Some(o) = &self.opened else {
            return;
        };
        if let Some(band) = o.bands.iter().find(|b| b.finding == id) {
            let (s, e) = (band.start, band.end);
            self.finding = Some(id.to_string());
            self.show_times(s, e);
        }
    }

    fn clamp_scroll(&mut self) {
        let content = self.drawn.as_ref().map_or(0.0, |d| d.content_height);
        let room = (self.height() - HEADER).max(0.0);
        self.scroll = self.scroll.min((content - room).max(0.0)).max(0.0);
    }

    /// Takes a reply in; returns whether the view shows something new.
    fn on_reply(&mut self, ctx: &Context<Self>, reply: &TimelineReply) -> bool {
        match reply {
            TimelineReply::Opened(o) if o.file == ctx.props().file => {
                self.opened = Some(o.clone());
                self.error = None;
                self.fit();
                if let Some((n, id)) = &ctx.props().focus {
                    self.seen_focus = *n;
                    self.focus(id);
                }
                self.redraw(ctx);
                self.show_status(ctx);
            }
            TimelineReply::Drawn(d) if d.file == ctx.props().file => {
                self.draws += 1;
                // Drawn from the latest view: the range the held keys moved it to, and the
                // scroll moved to reveal a slice or kept within the tracks, are the view now.
                // An older view's frame changes nothing: the latest is on its way.
                if d.seq == self.seq {
                    (self.start, self.end, self.scroll) = (d.start, d.end, d.scroll);
                }
                record_frame(d);
                let summary = self.range.is_some()
                    && self.drawn.as_ref().map(|o| &o.in_range) != Some(&d.in_range);
                self.drawn = Some(d.clone());
                self.show_status(ctx);
                self.mark();
                return summary;
            }
            TimelineReply::Picked { file, .. } | TimelineReply::Found(Found { file, .. })
                if *file != ctx.props().file => {}
            TimelineReply::Picked {
                picked: Picked::Slice(details),
                ..
            } => {
                self.selected = Some(details.place.event);
                self.details = Some(details.clone());
                self.memory_peak = None;
                self.redraw(ctx);
            }
            TimelineReply::Picked {
                picked: Picked::MemoryPeak { track, peak },
                ..
            } => {
                self.selected = None;
                self.details = None;
                self.memory_peak = Some((track.clone(), peak.clone()));
                self.redraw(ctx);
            }
            TimelineReply::Picked {
                picked: Picked::Group { index },
                ..
            } => {
                match self.collapsed.iter().position(|g| g == index) {
                    Some(k) => {
                        self.collapsed.remove(k);
                    }
                    None => self.collapsed.push(*index),
                }
                self.redraw(ctx);
            }
            TimelineReply::Picked {
                picked: Picked::Band { finding },
                ..
            } => {
                ctx.props().on_finding.emit(finding.clone());
            }
            TimelineReply::Picked {
                picked: Picked::Nothing,
                ..
            } => {
                self.selected = None;
                self.details = None;
                self.memory_peak = None;
                self.redraw(ctx);
            }
            TimelineReply::Found(f) => {
                self.found = Some(f.clone());
                self.found_at = 0;
                if let Some(p) = f.places.first() {
                    ctx.link().send_message(Msg::GoTo(p.clone()));
                }
            }
            TimelineReply::Failed { error, .. } => self.error = Some(request_error(error)),
            // Another file's (the user switched files while it was on its way).
            TimelineReply::Opened(_) | TimelineReply::Drawn(_) => return false,
        }
        true
    }

    fn status_text(&self) -> String {
        match (&self.opened, &self.drawn) {
            (Some(o), Some(d)) => format!(
                "{} slices in {} rows · laid out in {:.0} ms · last frame {:.1} ms, {} spans · showing {}",
                o.slices,
                o.rows,
                o.layout_ms,
                d.draw_ms,
                d.spans,
                duration(self.end - self.start)
            ),
            (Some(_), None) => "Drawing…".into(),
            (None, _) => "Laying the timeline out…".into(),
        }
    }

    /// Sets the status line; from one frame's to the next, at most every [`STATUS_MS`] (the
    /// latest frame's is set when that time is up).
    fn show_status(&mut self, ctx: &Context<Self>) {
        if self.status_timer.is_some() {
            return;
        }
        let now = now_ms();
        let wait = self.status_at + STATUS_MS - now;
        if wait > 0.0 && self.drawn.is_some() {
            let link = ctx.link().clone();
            self.status_timer = Some(Timeout::new(wait.ceil() as u32, move || {
                link.send_message(Msg::Status)
            }));
            return;
        }
        // The first frame's status is set at once.
        self.status_at = if self.drawn.is_some() {
            now
        } else {
            f64::NEG_INFINITY
        };
        if let Some(p) = self.status.get() {
            let text = self.status_text();
            if p.text_content().as_deref() != Some(text.as_str()) {
                p.set_text_content(Some(&text));
            }
        }
    }

    /// The canvas's `data-*` marks, for tests and benchmarks: the view drawn and what it
    /// shows. Set on the element itself: a drawn frame re-renders nothing.
    fn mark(&self) {
        let Some(canvas) = self.canvas.cast::<web_sys::Element>() else {
            return;
        };
        let drawn = self.drawn.as_ref();
        let marks = [
            ("data-draws", self.draws.to_string()),
            ("data-view", self.seq.to_string()),
            ("data-drawn-view", drawn.map_or(0, |d| d.seq).to_string()),
            (
                "data-selected",
                self.selected.map(|s| s.to_string()).unwrap_or_default(),
            ),
            (
                "data-selected-box",
                drawn
                    .and_then(|d| d.selected_box)
                    .map(|b| format!("{:.1},{:.1},{:.1},{:.1}", b[0], b[1], b[2], b[3]))
                    .unwrap_or_default(),
            ),
            (
                "data-content-height",
                drawn.map_or(0.0, |d| d.content_height).to_string(),
            ),
            ("data-start", format!("{:.0}", self.start)),
            ("data-end", format!("{:.0}", self.end)),
            ("data-finding", self.finding.clone().unwrap_or_default()),
            (
                "data-memory-peaks",
                drawn
                    .map(|d| {
                        let peaks: Vec<String> = d
                            .memory_peaks
                            .iter()
                            .map(|[x, y]| format!("{x:.1},{y:.1}"))
                            .collect();
                        peaks.join(";")
                    })
                    .unwrap_or_default(),
            ),
        ];
        for (name, value) in marks {
            let _ = canvas.set_attribute(name, &value);
        }
    }
}

fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or_else(js_sys::Date::now, |p| p.now())
}

/// The timeline's key for a key event, by its position on the keyboard (`KeyW` is W on any
/// layout), lower case; `None` for keys it does not use.
fn key_of(e: &KeyboardEvent) -> Option<String> {
    match e.code().as_str() {
        "KeyW" => Some("w"),
        "KeyA" => Some("a"),
        "KeyS" => Some("s"),
        "KeyD" => Some("d"),
        "KeyF" => Some("f"),
        "Escape" => Some("escape"),
        _ => None,
    }
    .map(String::from)
}

/// Asks `request` of the worker; its reply comes back to this timeline.
fn ask(ctx: &Context<Timeline>, request: TimelineRequest) {
    let on_reply = ctx.link().batch_callback(|reply| match reply {
        Reply::Timeline(reply) => Some(Msg::Reply(reply)),
        _ => None,
    });
    let props = ctx.props();
    props
        .client
        .ask(Request::Timeline(request), props.file, on_reply);
}

/// Appends a drawn frame to `window.ttapFrames` where a benchmark created that array: its draw
/// time, when the page got it (ms, the page's clock) and the worker's animation frame it was
/// committed in (ms since 1970).
fn record_frame(drawn: &Drawn) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let frames = js_sys::Reflect::get(&window, &"ttapFrames".into()).unwrap_or(JsValue::UNDEFINED);
    if let Some(frames) = frames.dyn_ref::<js_sys::Array>() {
        frames.push(&js_sys::Array::of3(
            &drawn.draw_ms.into(),
            &now_ms().into(),
            &drawn.frame_at.into(),
        ));
    }
}

impl Component for Timeline {
    type Message = Msg;
    type Properties = TimelineProps;

    fn create(ctx: &Context<Self>) -> Self {
        let listener = ctx.link().callback(Msg::Reply);
        ctx.props().client.listen(listener.clone());
        Timeline {
            listener,
            canvas: NodeRef::default(),
            handed_over: false,
            opened: None,
            start: 0.0,
            end: 1.0,
            scroll: 0.0,
            collapsed: Vec::new(),
            selected: None,
            reveal: None,
            range: None,
            finding: None,
            seq: 0,
            drawn: None,
            draws: 0,
            status: NodeRef::default(),
            status_at: f64::NEG_INFINITY,
            status_timer: None,
            details: None,
            memory_peak: None,
            search: String::new(),
            found: None,
            found_at: 0,
            held: BTreeSet::new(),
            pointer_x: GUTTER,
            drag: None,
            seen_focus: 0,
            error: None,
            _wheel: None,
            _resize: None,
        }
    }

    fn changed(&mut self, ctx: &Context<Self>, old: &TimelineProps) -> bool {
        let props = ctx.props();
        if props.file != old.file {
            *self = Timeline {
                canvas: self.canvas.clone(),
                status: self.status.clone(),
                handed_over: self.handed_over,
                seen_focus: self.seen_focus,
                _wheel: self._wheel.take(),
                _resize: self._resize.take(),
                ..<Timeline as Component>::create(ctx)
            };
            ask(ctx, TimelineRequest::Open { file: props.file });
            self.mark();
            self.show_status(ctx);
        }
        if let Some((n, id)) = &props.focus {
            if *n > self.seen_focus && self.opened.is_some() {
                self.seen_focus = *n;
                let id = id.clone();
                self.focus(&id);
                self.redraw(ctx);
            }
        }
        true
    }

    fn rendered(&mut self, ctx: &Context<Self>, first: bool) {
        if first {
            self.mark();
            self.show_status(ctx);
        }
        if self.handed_over {
            return;
        }
        let Some(canvas) = self.canvas.cast::<HtmlCanvasElement>() else {
            return;
        };
        match canvas.transfer_control_to_offscreen() {
            Ok(offscreen) => {
                self.handed_over = true;
                ctx.props().client.hand_canvas(offscreen);
                ask(
                    ctx,
                    TimelineRequest::Open {
                        file: ctx.props().file,
                    },
                );
            }
            Err(e) => {
                self.error = Some(format!(
                    "This browser cannot hand a canvas to a worker (OffscreenCanvas: {e:?}); \
                     the timeline needs a current Chrome, Edge, Firefox or Safari."
                ));
                ctx.link().send_message(Msg::Resized);
                return;
            }
        }
        // The wheel handler must be able to prevent the page's own zoom and scroll.
        let link = ctx.link().clone();
        let wheel = Closure::<dyn FnMut(WheelEvent)>::new(move |e: WheelEvent| {
            e.prevent_default();
            let zoom = e.ctrl_key() || e.meta_key();
            let (dx, dy) = if e.shift_key() && e.delta_x() == 0.0 {
                (e.delta_y(), 0.0)
            } else {
                (e.delta_x(), e.delta_y())
            };
            link.send_message(Msg::Wheel {
                dx,
                dy,
                x: f64::from(e.offset_x()),
                zoom,
            });
        });
        let options = AddEventListenerOptions::new();
        options.set_passive(false);
        let _ = canvas.add_event_listener_with_callback_and_add_event_listener_options(
            "wheel",
            wheel.as_ref().unchecked_ref(),
            &options,
        );
        self._wheel = Some(wheel);
        let link = ctx.link().clone();
        let resize = Closure::<dyn FnMut()>::new(move || link.send_message(Msg::Resized));
        if let Some(w) = web_sys::window() {
            let _ = w.add_event_listener_with_callback("resize", resize.as_ref().unchecked_ref());
        }
        self._resize = Some(resize);
    }

    fn destroy(&mut self, ctx: &Context<Self>) {
        // A key held while the tab closes would keep the worker drawing a canvas nobody sees.
        if !self.held.is_empty() {
            self.held.clear();
            self.moved(ctx);
        }
        ctx.props().client.stop(&self.listener);
        if let (Some(w), Some(resize)) = (web_sys::window(), &self._resize) {
            let _ =
                w.remove_event_listener_with_callback("resize", resize.as_ref().unchecked_ref());
        }
    }

    fn update(&mut self, ctx: &Context<Self>, msg: Msg) -> bool {
        match msg {
            Msg::Reply(reply) => return self.on_reply(ctx, &reply),
            Msg::KeyDown(key) => match key.as_str() {
                "w" | "s" | "a" | "d" => {
                    if self.held.insert(key) {
                        self.moved(ctx);
                    }
                    return false;
                }
                "f" => {
                    self.fit();
                    self.redraw(ctx);
                }
                "escape" => {
                    self.range = None;
                    self.selected = None;
                    self.details = None;
                    self.memory_peak = None;
                    self.finding = None;
                    self.redraw(ctx);
                }
                _ => return false,
            },
            Msg::KeyUp(key) => {
                if self.held.remove(&key) {
                    self.moved(ctx);
                }
                return false;
            }
            Msg::Status => {
                self.status_timer = None;
                self.show_status(ctx);
                return false;
            }
            Msg::Wheel { dx, dy, x, zoom } => {
                if zoom {
                    self.zoom((dy * 0.002).exp(), x);
                } else {
                    let span = self.end - self.start;
                    self.pan(dx / (self.width() - GUTTER).max(1.0) * span);
                    self.scroll += dy;
                    self.clamp_scroll();
                }
                self.redraw(ctx);
                return false;
            }
            Msg::Down { x, y, shift } => {
                self.drag = Some(Drag {
                    x,
                    y,
                    start: self.start,
                    end: self.end,
                    scroll: self.scroll,
                    select: shift,
                    moved: false,
                });
                if shift {
                    let at = self.x_to_t(x);
                    self.range = Some((at, at));
                }
                return false;
            }
            Msg::Move { x, y } => {
                self.pointer_x = x;
                // W and S zoom around the pointer.
                if self.held.contains("w") || self.held.contains("s") {
                    self.moved(ctx);
                }
                let px = (self.width() - GUTTER).max(1.0);
                let at = self.x_to_t(x);
                let Some(drag) = &mut self.drag else {
                    return false;
                };
                drag.moved |= (x - drag.x).abs() > 3.0 || (y - drag.y).abs() > 3.0;
                if !drag.moved {
                    return false;
                }
                let select = drag.select;
                if select {
                    if let Some(r) = &mut self.range {
                        r.1 = at;
                    }
                } else {
                    let shift = (x - drag.x) / px * (drag.end - drag.start);
                    self.start = drag.start - shift;
                    self.end = drag.end - shift;
                    self.scroll = drag.scroll - (y - drag.y);
                    self.clamp_scroll();
                }
                self.redraw(ctx);
                // A range selection changes its summary below the canvas.
                return select;
            }
            Msg::Up { x, y } => {
                let Some(drag) = self.drag.take() else {
                    return false;
                };
                if !drag.moved {
                    if drag.select {
                        self.range = None;
                    }
                    if let Some(o) = &self.opened {
                        let view = self.view(o.file);
                        ask(ctx, TimelineRequest::Pick { view, x, y });
                    }
                }
                self.redraw(ctx);
            }
            Msg::Leave => {
                self.drag = None;
                if !self.held.is_empty() {
                    self.held.clear();
                    self.moved(ctx);
                }
                return false;
            }
            Msg::SearchText(text) => {
                self.search = text;
                return false;
            }
            Msg::Search => {
                ask(
                    ctx,
                    TimelineRequest::Search {
                        file: ctx.props().file,
                        text: self.search.clone(),
                    },
                );
                return false;
            }
            Msg::Step(by) => {
                if let Some(f) = &self.found {
                    let n = f.places.len() as isize;
                    if n > 0 {
                        self.found_at = (self.found_at as isize + by).rem_euclid(n) as usize;
                        let place = f.places[self.found_at].clone();
                        ctx.link().send_message(Msg::GoTo(place));
                    }
                }
            }
            Msg::Fit => {
                self.fit();
                self.redraw(ctx);
            }
            Msg::GoTo(place) => {
                let s = self.offset(place.start);
                let e = self.offset(place.start.saturating_add(place.dur));
                let keep = (self.end - self.start).min(((e - s) * 8.0).max(10_000.0));
                let centre = (s + e) / 2.0;
                self.start = centre - keep / 2.0;
                self.end = centre + keep / 2.0;
                self.selected = Some(place.event);
                self.reveal = Some(place.event);
                // The slice's group may be collapsed: show every group so its row is there.
                self.collapsed.clear();
                self.redraw(ctx);
                ask(
                    ctx,
                    TimelineRequest::Details {
                        file: ctx.props().file,
                        event: place.event,
                    },
                );
            }
            Msg::Resized => self.redraw(ctx),
        }
        true
    }

    fn view(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let onkeydown = link.batch_callback(|e: KeyboardEvent| {
            // Keys with Ctrl, Cmd or Alt are the browser's (find, save, …).
            if e.ctrl_key() || e.meta_key() || e.alt_key() {
                return None;
            }
            let key = key_of(&e)?;
            e.prevent_default();
            Some(Msg::KeyDown(key))
        });
        let onkeyup = link.batch_callback(|e: KeyboardEvent| key_of(&e).map(Msg::KeyUp));
        let onmousedown = link.callback(|e: MouseEvent| {
            let target: HtmlCanvasElement = e.target_unchecked_into();
            let _ = target.focus();
            Msg::Down {
                x: f64::from(e.offset_x()),
                y: f64::from(e.offset_y()),
                shift: e.shift_key(),
            }
        });
        let onmousemove = link.callback(|e: MouseEvent| Msg::Move {
            x: f64::from(e.offset_x()),
            y: f64::from(e.offset_y()),
        });
        let onmouseup = link.callback(|e: MouseEvent| Msg::Up {
            x: f64::from(e.offset_x()),
            y: f64::from(e.offset_y()),
        });
        let onmouseleave = link.callback(|_: MouseEvent| Msg::Leave);
        // Keys released elsewhere never reach the canvas: stop moving when it loses focus.
        let onblur = link.callback(|_: FocusEvent| Msg::Leave);
        let oninput = link.callback(|e: InputEvent| {
            let input: HtmlInputElement = e.target_unchecked_into();
            Msg::SearchText(input.value())
        });
        let onsearch = link.callback(|e: SubmitEvent| {
            e.prevent_default();
            Msg::Search
        });
        let found = self.found.as_ref().map(|f| {
            if f.total == 0 {
                format!("no slice named like “{}”", f.text)
            } else if f.total > f.places.len() {
                format!(
                    "{} of {} (first {} listed)",
                    self.found_at + 1,
                    f.total,
                    f.places.len()
                )
            } else {
                format!("{} of {}", self.found_at + 1, f.total)
            }
        });
        html! {
            <section class="timeline">
                <div class="timeline-bar">
                    <form class="timeline-search" onsubmit={onsearch}>
                        <input type="search" id="timeline-search" placeholder="Find slices by name"
                            value={self.search.clone()} {oninput} />
                        <button class="button" type="submit">{"Find"}</button>
                        <button class="button" type="button" title="Previous match"
                            onclick={link.callback(|_| Msg::Step(-1))}>{"◀"}</button>
                        <button class="button" type="button" title="Next match"
                            onclick={link.callback(|_| Msg::Step(1))}>{"▶"}</button>
                        if let Some(found) = found {
                            <span class="timeline-found">{found}</span>
                        }
                    </form>
                    <button class="button" id="timeline-fit" onclick={link.callback(|_| Msg::Fit)}>{"Fit (F)"}</button>
                    <span class="timeline-help">{"W/S zoom · A/D pan · drag to pan · Shift+drag selects a range · Ctrl+wheel zooms · click a slice"}</span>
                </div>
                if let Some(e) = &self.error {
                    <p class="notice" role="alert">{e}</p>
                }
                // Its `data-*` marks are set by `mark`, the status line by `show_status`.
                <canvas ref={self.canvas.clone()} class="timeline-canvas" tabindex="0"
                    {onkeydown} {onkeyup} {onmousedown} {onmousemove} {onmouseup} {onmouseleave} {onblur}></canvas>
                <p ref={self.status.clone()} class="timeline-status"></p>
                { self.view_range() }
                { self.view_details(ctx) }
            </section>
        }
    }
}

impl Timeline {
    fn view_range(&self) -> Html {
        let Some((a, b)) = self.range else {
            return Html::default();
        };
        let rows = self.drawn.as_ref().map_or(&[][..], |d| &d.in_range[..]);
        html! {
            <div class="timeline-range">
                <strong>{format!("Selected range: {}", duration((b - a).abs()))}</strong>
                <ul>
                    { for rows.iter().map(|(kind, n, ns)| html! {
                        <li>{format!("{kind}: {n} slice(s), {} inside the range", duration(*ns as f64))}</li>
                    }) }
                </ul>
            </div>
        }
    }

    /// The clicked memory peak: its device, bytes and the op (and module) that reached it.
    fn view_memory_peak(&self, track: &str, p: &CounterPeak) -> Html {
        let origin = self.opened.as_ref().map_or(0, |o| o.span.0);
        let or_unknown = |v: &Option<String>| v.clone().unwrap_or_else(|| "not recorded".into());
        html! {
            <div class="timeline-details memory-peak">
                <h3>{format!("Peak of {track}")}</h3>
                <dl>
                    <dt>{"Allocated"}</dt><dd class="peak-bytes">{bytes(p.allocated.max(0) as u64)}</dd>
                    <dt>{"Reserved"}</dt><dd>{p.reserved.map_or_else(|| "not recorded".into(), |r| bytes(r.max(0) as u64))}</dd>
                    if let Some(c) = p.capacity {
                        <dt>{"Of the device"}</dt><dd>{format!("{:.1}% of {}", 100.0 * p.allocated as f64 / c.max(1) as f64, bytes(c))}</dd>
                    }
                    <dt>{"Operator"}</dt><dd class="peak-op">{or_unknown(&p.op)}</dd>
                    <dt>{"Module"}</dt><dd>{or_unknown(&p.module)}</dd>
                    <dt>{"At"}</dt><dd>{duration((p.at - origin) as f64)}</dd>
                </dl>
            </div>
        }
    }

    fn view_details(&self, ctx: &Context<Self>) -> Html {
        if let Some((track, peak)) = &self.memory_peak {
            return self.view_memory_peak(track, peak);
        }
        let Some(d) = &self.details else {
            return html! { <p class="timeline-details empty">{"Click a slice to see its details."}</p> };
        };
        let origin = self.opened.as_ref().map_or(0, |o| o.span.0);
        let link = ctx.link();
        let go = |p: &Place| {
            let p = p.clone();
            let label = format!("{} ({}, {})", p.name, p.lane, duration(p.dur as f64));
            html! {
                <button class="link-button" onclick={link.callback(move |_| Msg::GoTo(p.clone()))}>{label}</button>
            }
        };
        html! {
            <div class="timeline-details">
                <h3 class="slice-name">{&d.place.name}</h3>
                <dl>
                    <dt>{"Where"}</dt><dd>{format!("{} · {}", d.place.group, d.place.lane)}</dd>
                    <dt>{"Start"}</dt><dd>{duration((d.place.start - origin) as f64)}</dd>
                    <dt>{"Duration"}</dt><dd>{duration(d.place.dur as f64)}</dd>
                    <dt>{"Self time"}</dt><dd>{duration(d.self_time as f64)}</dd>
                    <dt>{"Kind"}</dt><dd>{format!("{} (category {})", d.kind, d.category)}</dd>
                    { for d.args.iter().map(|(k, v)| html! { <><dt>{k}</dt><dd>{v}</dd></> }) }
                </dl>
                if let Some(by) = &d.launched_by {
                    <p class="launched-by">{"Launched by: "}{go(by)}</p>
                }
                if let Some(graph) = &d.graph {
                    <p class="graph-launch">{format!("CUDA/HIP graph: {graph}")}</p>
                }
                if !d.launched.is_empty() {
                    <p class="launched">{"Launched: "}{ for d.launched.iter().map(go) }</p>
                }
                if !d.stack.is_empty() {
                    <div class="stack"><span>{"Stack (outermost first):"}</span>
                        <ol>{ for d.stack.iter().map(|p| html! { <li>{go(p)}</li> }) }</ol>
                    </div>
                }
            </div>
        }
    }
}
