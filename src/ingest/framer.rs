//! Splits a JSON trace, arriving in chunks of any size, into the byte ranges of its events.
//!
//! One file on purpose: one byte-level state machine (`Framer::push`, `structural`, the carry
//! buffer) whose states are read together; its unit tests cover every chunk size giving the same
//! frames, stray delimiters, malformed, cut and non-JSON input, and oversized values.
//!
//! The framer knows just enough JSON to find value boundaries (strings, escapes, brackets); it
//! never builds a tree and never holds more than one event, so memory stays bounded whatever the
//! input size. Each object element of the `traceEvents` array (or of a top-level array) is given
//! to the consumer's event reader, straight from the chunk when it lies inside it, from a small
//! carry buffer when it straddles chunks; other elements are handed on as slices. Top-level keys
//! other than `traceEvents` are reported by name, and their values are handed on only when the
//! consumer asks for them.
//!
//! Where an event ends is decided by [`delimit`] from the event's bytes alone, never from where
//! a chunk ends, so any chunking of the same input gives the same events, malformed ones
//! included.

use memchr::{memchr, memchr2, memchr3};
use serde::{Deserialize, Serialize};

use super::event::{is_ws, Stop, Stopped};

/// Largest single event (or captured top-level value) that is kept; larger ones are skipped and
/// counted, so a corrupted file cannot make memory grow without bound.
pub(crate) const MAX_VALUE_BYTES: usize = 64 << 20;
/// Longest top-level key kept for matching and messages.
const MAX_KEY_BYTES: usize = 256;

/// What the framer found, in input order.
pub(crate) enum Frame<'a> {
    /// The top-level value opened: `true` for an object, `false` for an array.
    TopLevel { object: bool },
    /// A key of the top-level object.
    Key(&'a [u8]),
    /// The value of a top-level key that the consumer wanted (see [`Framer::push`]).
    Value { key: &'a [u8], bytes: &'a [u8] },
    /// One complete element of the event array that is not an object.
    Element(&'a [u8]),
    /// An object element the event reader found malformed (already delimited).
    Malformed,
    /// An element (or wanted value) larger than [`MAX_VALUE_BYTES`], skipped.
    Oversized,
}

/// Receives what the framer finds.
pub(crate) trait Consumer {
    /// Whether the value of this top-level key is wanted (as a [`Frame::Value`]).
    fn wants_value(&self, key: &[u8]) -> bool;
    fn frame(&mut self, frame: Frame<'_>);
    /// Reads the object element at the start of `bytes` (which may run past it) and, when it is
    /// well formed and complete, takes it and returns its length; otherwise says why not and
    /// where the reader stopped. Reading must not depend on bytes after the element.
    fn element_in_place(&mut self, bytes: &[u8]) -> Result<usize, Stopped>;
}

/// Where the input stopped, when it stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// Nothing but whitespace.
    Empty,
    /// Inside an event, after `complete` whole events of the array.
    InsideEvent,
    /// Between events of the array.
    InsideEventArray,
    /// Inside the top-level object, outside the event array.
    InsideTopLevel,
}

/// A structural error: the input is not JSON (or stops being JSON) at a given byte.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub offset: u64,
    pub expected: &'static str,
    pub found: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum State {
    Start,
    ObjExpectKey,
    ObjKey,
    ObjExpectColon,
    ObjExpectValue,
    ObjAfterValue,
    ArrExpectElement,
    ArrAfterElement,
    InValue,
    /// An object element that began in an earlier chunk, kept in `carry` until it can be
    /// delimited.
    CarryEvent,
    End,
}

/// The scan of one value: its shape and where the scan is inside it.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct ValueScan {
    shape: Shape,
    depth: u32,
    in_string: bool,
    escape: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum Shape {
    Object,
    Array,
    Str,
    Bare,
}

/// What the value being scanned is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum ValueRole {
    /// An element of the event array.
    Element,
    /// The value of a top-level key.
    TopValue,
}

/// Serializable: a block's framer travels between the web app's workers (`blocks`).
#[derive(Serialize, Deserialize)]
pub(crate) struct Framer {
    state: State,
    /// Decoded bytes consumed before the current chunk.
    offset: u64,
    /// True when the event array sits inside a top-level object (rather than being the top level).
    array_in_object: bool,
    key: Vec<u8>,
    key_escape: bool,
    role: ValueRole,
    value: ValueScan,
    /// Whether the bytes of the current value are kept.
    keep: bool,
    /// Whether the current value's bytes so far are in `carry` (it began in an earlier chunk).
    carried: bool,
    oversized: bool,
    carry: Vec<u8>,
    trailing: bool,
    /// Stream offset of the first byte of the event in `carry`.
    carry_origin: u64,
    /// `carry`'s length when it was last tried: it is tried again once it has doubled, so a long
    /// event costs linear time however small the chunks.
    carry_tried: usize,
}

impl Default for Framer {
    fn default() -> Self {
        Framer {
            state: State::Start,
            offset: 0,
            array_in_object: false,
            key: Vec::new(),
            key_escape: false,
            role: ValueRole::Element,
            value: ValueScan::start(b' '),
            keep: false,
            carried: false,
            oversized: false,
            carry: Vec::new(),
            trailing: false,
            carry_origin: 0,
            carry_tried: 0,
        }
    }
}

/// The position of the next newline at or after `from` that is followed (after whitespace) by
/// `{`, the start of the next event in line-per-event or pretty-printed traces.
fn next_line_object(chunk: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let nl = from + memchr(b'\n', chunk.get(from..)?)?;
        let next = chunk[nl..].iter().position(|&b| !is_ws(b))?;
        if chunk[nl + next] == b'{' {
            return Some(nl);
        }
        from = nl + 1;
    }
}

/// Where an object element that starts at `bytes[0]` ends, as far as `bytes` tells.
#[derive(Debug, PartialEq, Eq)]
enum Delimited {
    /// Well formed, and taken by the consumer: its length.
    Read(usize),
    /// Malformed: it ends at the first newline after the point where the reader broke that
    /// starts a line with `{` (one broken event, such as an unescaped quote in a name, must not
    /// swallow the next ones), or where its braces close if that comes first.
    Malformed(usize),
    /// `bytes` end before that can be told.
    Unknown,
}

/// Delimits the object element at `bytes[0]`. The answer depends only on the element's own
/// bytes (and, for a malformed one, those up to where it is cut), never on how much more
/// `bytes` holds, so every chunking of the input gives the same elements.
fn delimit(bytes: &[u8], out: &mut dyn Consumer) -> Delimited {
    match out.element_in_place(bytes) {
        Ok(n) => Delimited::Read(n),
        Err((Stop::Incomplete, _)) => Delimited::Unknown,
        Err((Stop::Malformed, at)) => {
            let braces = bracket_end(bytes);
            let limit = braces.unwrap_or(bytes.len());
            match next_line_object(&bytes[..limit], at.max(1)) {
                Some(line) => Delimited::Malformed(line),
                None => braces.map_or(Delimited::Unknown, Delimited::Malformed),
            }
        }
    }
}

/// Where the braces of the object at `bytes[0]` close (strings skipped), if inside `bytes`.
fn bracket_end(bytes: &[u8]) -> Option<usize> {
    ValueScan::inside_object().scan(bytes, 1)
}

impl ValueScan {
    /// The scan of a value whose first byte is `first`.
    fn start(first: u8) -> ValueScan {
        let shape = match first {
            b'{' => Shape::Object,
            b'[' => Shape::Array,
            b'"' => Shape::Str,
            _ => Shape::Bare,
        };
        ValueScan {
            shape,
            depth: 0,
            in_string: false,
            escape: false,
        }
    }

    /// The scan of an object just past its opening brace.
    fn inside_object() -> ValueScan {
        ValueScan {
            depth: 1,
            ..ValueScan::start(b'{')
        }
    }

    /// Advances through the value; returns the index just past its end if it ends inside `c`.
    fn scan(&mut self, c: &[u8], mut i: usize) -> Option<usize> {
        loop {
            if self.escape {
                if i >= c.len() {
                    return None;
                }
                self.escape = false;
                i += 1;
            }
            if self.in_string {
                let p = i + memchr2(b'"', b'\\', c.get(i..)?)?;
                if c[p] == b'\\' {
                    self.escape = true;
                    i = p + 1;
                    continue;
                }
                self.in_string = false;
                i = p + 1;
                if self.shape == Shape::Str {
                    return Some(i);
                }
                continue;
            }
            let (open, close) = match self.shape {
                Shape::Object => (b'{', b'}'),
                Shape::Array => (b'[', b']'),
                Shape::Bare => {
                    let rest = c.get(i..)?;
                    let j = rest
                        .iter()
                        .position(|&b| matches!(b, b',' | b']' | b'}') || is_ws(b))?;
                    return Some(i + j);
                }
                Shape::Str => unreachable!("a string value is always inside its string"),
            };
            let p = i + memchr3(b'"', open, close, c.get(i..)?)?;
            i = p + 1;
            match c[p] {
                b'"' => self.in_string = true,
                b if b == open => self.depth += 1,
                _ => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        return Some(i);
                    }
                }
            }
        }
    }
}

impl Framer {
    /// A framer for input that starts `offset` bytes into the document, between two elements
    /// of the event array (inside a top-level object when `array_in_object`): how a block of a
    /// parallel ingest is framed on the guess that it starts there (`blocks::merge` checks the guess
    /// against [`Framer::between_elements`] of the block before).
    pub fn between(offset: u64, array_in_object: bool) -> Framer {
        Framer {
            state: State::ArrExpectElement,
            offset,
            array_in_object,
            ..Framer::default()
        }
    }

    /// `Some(array_in_object)` when the framer stands between two elements of the event array
    /// with nothing carried: then a [`Framer::between`] at this offset frames what follows
    /// exactly as this framer would (no other field is read before it is set again).
    pub(crate) fn between_elements(&self) -> Option<bool> {
        matches!(self.state, State::ArrExpectElement | State::ArrAfterElement)
            .then_some(self.array_in_object)
    }

    /// Decoded bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// True once non-whitespace bytes were seen after the top-level value.
    pub(crate) fn has_trailing_data(&self) -> bool {
        self.trailing
    }

    /// Feeds one chunk.
    pub fn push(&mut self, chunk: &[u8], out: &mut dyn Consumer) -> Result<(), SyntaxError> {
        let mut i = 0;
        let len = chunk.len();
        while i < len {
            match self.state {
                State::CarryEvent => {
                    i = self.carry_event(chunk, i, out)?;
                }
                State::InValue => {
                    let begin = i;
                    match self.value.scan(chunk, i) {
                        Some(end) => {
                            self.finish_value(chunk, begin, end, out);
                            i = end;
                        }
                        None => {
                            self.keep_partial(&chunk[begin..]);
                            i = len;
                        }
                    }
                }
                State::ObjKey if self.key_escape => {
                    self.key_escape = false;
                    self.push_key_byte(chunk[i]);
                    i += 1;
                }
                State::ObjKey => match memchr2(b'"', b'\\', &chunk[i..]) {
                    None => {
                        self.push_key_bytes(&chunk[i..]);
                        i = len;
                    }
                    Some(j) => {
                        let p = i + j;
                        self.push_key_bytes(&chunk[i..p]);
                        if chunk[p] == b'\\' {
                            self.push_key_byte(b'\\');
                            self.key_escape = true;
                        } else {
                            out.frame(Frame::Key(&self.key));
                            self.state = State::ObjExpectColon;
                        }
                        i = p + 1;
                    }
                },
                _ => {
                    let b = chunk[i];
                    if is_ws(b) {
                        i += 1;
                        continue;
                    }
                    i = self.structural(chunk, i, out)?;
                }
            }
        }
        self.offset += len as u64;
        Ok(())
    }

    /// Handles one non-whitespace byte outside any value; returns the next index.
    fn structural(
        &mut self,
        chunk: &[u8],
        i: usize,
        out: &mut dyn Consumer,
    ) -> Result<usize, SyntaxError> {
        let b = chunk[i];
        let error = |expected| SyntaxError {
            offset: self.offset + i as u64,
            expected,
            found: b,
        };
        match self.state {
            State::Start => match b {
                // A UTF-8 byte-order mark (EF BB BF) before the JSON.
                0xEF if self.offset + (i as u64) < 3 => Ok(i + 1),
                0xBB | 0xBF if self.offset + (i as u64) < 3 => Ok(i + 1),
                b'{' => {
                    out.frame(Frame::TopLevel { object: true });
                    self.state = State::ObjExpectKey;
                    Ok(i + 1)
                }
                b'[' => {
                    out.frame(Frame::TopLevel { object: false });
                    self.array_in_object = false;
                    self.state = State::ArrExpectElement;
                    Ok(i + 1)
                }
                _ => Err(error("'{' or '[' (the start of a JSON trace)")),
            },
            State::ObjExpectKey => match b {
                b'"' => {
                    self.key.clear();
                    self.state = State::ObjKey;
                    Ok(i + 1)
                }
                b'}' => {
                    self.state = State::End;
                    Ok(i + 1)
                }
                b',' => Ok(i + 1),
                _ => Err(error("a key of the top-level object")),
            },
            State::ObjExpectColon => match b {
                b':' => {
                    self.state = State::ObjExpectValue;
                    Ok(i + 1)
                }
                _ => Err(error("':' after a key")),
            },
            State::ObjExpectValue => {
                if self.key == b"traceEvents" && b == b'[' {
                    self.array_in_object = true;
                    self.state = State::ArrExpectElement;
                    return Ok(i + 1);
                }
                let keep = out.wants_value(&self.key);
                self.begin_value(ValueRole::TopValue, b, keep);
                Ok(self.begin_scan(chunk, i, out))
            }
            State::ObjAfterValue => match b {
                b',' => {
                    self.state = State::ObjExpectKey;
                    Ok(i + 1)
                }
                b'}' => {
                    self.state = State::End;
                    Ok(i + 1)
                }
                _ => Err(error("',' or '}' in the top-level object")),
            },
            State::ArrExpectElement | State::ArrAfterElement => match b {
                b',' => {
                    self.state = State::ArrExpectElement;
                    Ok(i + 1)
                }
                b']' => {
                    self.state = if self.array_in_object {
                        State::ObjAfterValue
                    } else {
                        State::End
                    };
                    Ok(i + 1)
                }
                _ => {
                    if b == b'{' {
                        match delimit(&chunk[i..], out) {
                            Delimited::Read(n) => {
                                self.state = State::ArrAfterElement;
                                return Ok(i + n);
                            }
                            Delimited::Malformed(n) => {
                                out.frame(Frame::Malformed);
                                self.state = State::ArrAfterElement;
                                return Ok(i + n);
                            }
                            Delimited::Unknown => {
                                self.carry.clear();
                                self.carry.extend_from_slice(
                                    &chunk[i..chunk.len().min(i + MAX_VALUE_BYTES)],
                                );
                                self.carry_origin = self.offset + i as u64;
                                self.carry_tried = self.carry.len();
                                self.state = State::CarryEvent;
                                return Ok(i + self.carry.len());
                            }
                        }
                    }
                    // A value where a comma was due is taken as the next element: old writers
                    // sometimes drop commas, and the element itself is checked later.
                    self.begin_value(ValueRole::Element, b, true);
                    Ok(self.begin_scan(chunk, i, out))
                }
            },
            State::End => {
                self.trailing = true;
                Ok(chunk.len())
            }
            State::InValue | State::ObjKey | State::CarryEvent => unreachable!("handled by push"),
        }
    }

    fn begin_value(&mut self, role: ValueRole, first: u8, keep: bool) {
        self.role = role;
        self.value = ValueScan::start(first);
        self.keep = keep;
        self.carried = false;
        self.oversized = false;
        self.state = State::InValue;
    }

    /// Scans a value that starts at `chunk[i]`; returns the next index.
    fn begin_scan(&mut self, chunk: &[u8], i: usize, out: &mut dyn Consumer) -> usize {
        let from = match self.value.shape {
            Shape::Object | Shape::Array => {
                self.value.depth = 1;
                i + 1
            }
            Shape::Str => {
                self.value.in_string = true;
                i + 1
            }
            // The first byte belongs to the value even if it is a stray delimiter such as
            // `}`: a value is never empty, so the framer always moves on.
            Shape::Bare => i + 1,
        };
        match self.value.scan(chunk, from) {
            Some(end) => {
                self.finish_value(chunk, i, end, out);
                end
            }
            None => {
                self.keep_partial(&chunk[i..]);
                chunk.len()
            }
        }
    }

    /// Adds bytes from `chunk[i..]` to the carried event, up to twice its size, and delimits it
    /// once the carry has doubled since the last try (or is full); returns the next index in
    /// `chunk`.
    fn carry_event(
        &mut self,
        chunk: &[u8],
        i: usize,
        out: &mut dyn Consumer,
    ) -> Result<usize, SyntaxError> {
        // Take just enough to double the carry: the bytes after the event are framed again,
        // so taking more would only copy them twice.
        let want = self.carry.len().max(64);
        let take = (chunk.len() - i)
            .min(want)
            .min(MAX_VALUE_BYTES - self.carry.len());
        self.carry.extend_from_slice(&chunk[i..i + take]);
        let full = self.carry.len() >= MAX_VALUE_BYTES;
        if full || self.carry.len() >= 2 * self.carry_tried {
            self.carry_tried = self.carry.len();
            if !self.decide_carried(out)? && full {
                // Too large to keep: skip it by its braces, like any oversized value.
                let mut scan = ValueScan::inside_object();
                let ended = scan.scan(&self.carry, 1);
                debug_assert!(
                    ended.is_none(),
                    "closed braces would have delimited the event"
                );
                self.begin_value(ValueRole::Element, b'{', true);
                self.value = scan;
                self.oversized = true;
                self.carry = Vec::new();
            }
        }
        Ok(i + take)
    }

    /// Delimits the carried event if its bytes tell; the bytes after it are framed again.
    /// Returns whether it was delimited.
    fn decide_carried(&mut self, out: &mut dyn Consumer) -> Result<bool, SyntaxError> {
        let end = match delimit(&self.carry, out) {
            Delimited::Read(n) => n,
            Delimited::Malformed(n) => {
                out.frame(Frame::Malformed);
                n
            }
            Delimited::Unknown => return Ok(false),
        };
        let after = self.carry.split_off(end);
        self.carry.clear();
        if self.carry.capacity() > 1 << 20 {
            self.carry = Vec::new();
        }
        self.state = State::ArrAfterElement;
        let resume = self.offset;
        self.offset = self.carry_origin + end as u64;
        let framed = self.push(&after, out);
        self.offset = resume;
        framed.map(|()| true)
    }

    fn keep_partial(&mut self, bytes: &[u8]) {
        if !self.keep || self.oversized {
            return;
        }
        if self.carry.len() + bytes.len() > MAX_VALUE_BYTES {
            self.oversized = true;
            self.carry = Vec::new();
            return;
        }
        self.carry.extend_from_slice(bytes);
        self.carried = true;
    }

    fn finish_value(&mut self, chunk: &[u8], begin: usize, end: usize, out: &mut dyn Consumer) {
        if self.keep {
            if !self.oversized && self.carried && self.carry.len() + (end - begin) > MAX_VALUE_BYTES
            {
                self.oversized = true;
            }
            if self.oversized {
                out.frame(Frame::Oversized);
            } else {
                let bytes = if self.carried {
                    self.carry.extend_from_slice(&chunk[begin..end]);
                    &self.carry[..]
                } else {
                    &chunk[begin..end]
                };
                match self.role {
                    ValueRole::Element => out.frame(Frame::Element(bytes)),
                    ValueRole::TopValue => out.frame(Frame::Value {
                        key: &self.key,
                        bytes,
                    }),
                }
            }
        }
        self.carry.clear();
        if self.carry.capacity() > 1 << 20 {
            self.carry = Vec::new();
        }
        self.carried = false;
        self.state = match self.role {
            ValueRole::Element => State::ArrAfterElement,
            ValueRole::TopValue => State::ObjAfterValue,
        };
    }

    fn push_key_bytes(&mut self, bytes: &[u8]) {
        let room = MAX_KEY_BYTES.saturating_sub(self.key.len());
        self.key.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn push_key_byte(&mut self, b: u8) {
        self.push_key_bytes(&[b]);
    }

    /// Called at the end of input: delimits a carried event if its bytes tell (framing what
    /// follows it, which may fail like any input), then says where the input stopped if it
    /// stopped early. A bare value at the very end (`[1, 2` cut after `2`) is complete only if
    /// the input really ends there, so it is not counted as an element.
    pub fn finish(&mut self, out: &mut dyn Consumer) -> Result<Result<(), Cut>, SyntaxError> {
        while self.state == State::CarryEvent && self.decide_carried(out)? {}
        Ok(self.end_state())
    }

    fn end_state(&self) -> Result<(), Cut> {
        match self.state {
            State::End => Ok(()),
            State::Start => Err(Cut::Empty),
            State::InValue if self.role == ValueRole::Element => Err(Cut::InsideEvent),
            State::CarryEvent => Err(Cut::InsideEvent),
            State::ArrExpectElement | State::ArrAfterElement => Err(Cut::InsideEventArray),
            _ => Err(Cut::InsideTopLevel),
        }
    }
}

#[cfg(test)]
mod tests;
