//! One event as written in the JSON, read in a single pass straight from the input bytes.
//!
//! One file on purpose: the reader's scans (eight bytes at a time) and its key dispatch are read
//! together; its unit tests cover the fields kept and skipped, every argument's spellings, cut
//! and broken events, numbers of every length and form, nested values and escapes.
//!
//! This is the hot loop of ingestion, so it is a small hand-written reader rather than serde:
//! it looks only at the keys the model uses and skips every other value without decoding it,
//! and it keeps each value as its raw text (`Raw`), to be read on demand by the lenient
//! readers below. Traces write the same field in many ways: numbers as strings
//! (`"ts": "2097962447511.067"`), integers beyond 64 bits, fractional microseconds with
//! nanosecond digits, `attr` instead of `args`.

use std::borrow::Cow;

use memchr::memchr2;

/// The raw JSON text of one value (strings keep their quotes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Raw<'a>(pub &'a [u8]);

/// The fields of an event that the model uses.
#[derive(Default)]
pub(crate) struct RawEvent<'a> {
    pub ph: Option<Raw<'a>>,
    pub name: Option<Raw<'a>>,
    pub cat: Option<Raw<'a>>,
    pub ts: Option<Raw<'a>>,
    pub dur: Option<Raw<'a>>,
    pub pid: Option<Raw<'a>>,
    pub tid: Option<Raw<'a>>,
    pub id: Option<Raw<'a>>,
    pub args: RawArgs<'a>,
}

/// The arguments the analyses need, under every spelling the eras use.
#[derive(Default)]
pub(crate) struct RawArgs<'a> {
    /// `name` of metadata (`ph: M`) events.
    pub name: Option<Raw<'a>>,
    pub correlation: Option<Raw<'a>>,
    pub device: Option<Raw<'a>>,
    pub stream: Option<Raw<'a>>,
    pub grid: Option<Raw<'a>>,
    pub block: Option<Raw<'a>>,
    pub registers: Option<Raw<'a>>,
    pub(crate) shared_memory: Option<Raw<'a>>,
    pub occupancy: Option<Raw<'a>>,
    pub bytes: Option<Raw<'a>>,
    pub bandwidth: Option<Raw<'a>>,
    pub external_id: Option<Raw<'a>>,
    pub(crate) sequence_number: Option<Raw<'a>>,
    pub input_dims: Option<Raw<'a>>,
    pub input_types: Option<Raw<'a>>,
    pub concrete_inputs: Option<Raw<'a>>,
    pub(crate) collective_name: Option<Raw<'a>>,
    pub(crate) in_nelems: Option<Raw<'a>>,
    pub(crate) out_nelems: Option<Raw<'a>>,
    pub group_size: Option<Raw<'a>>,
    pub dtype: Option<Raw<'a>>,
    pub(crate) process_group: Option<Raw<'a>>,
    pub(crate) alloc_bytes: Option<Raw<'a>>,
    pub total_allocated: Option<Raw<'a>>,
    pub(crate) total_reserved: Option<Raw<'a>>,
    pub device_type: Option<Raw<'a>>,
    pub device_id: Option<Raw<'a>>,
}

impl<'a> RawArgs<'a> {
    /// Keeps `v` if `key` is one of the arguments above. Keys are told apart by length first,
    /// then as fixed-size arrays (a decision on their bytes): no `memcmp` per candidate.
    fn set(&mut self, key: &[u8], v: Raw<'a>) {
        let slot = match key.len() {
            4 => match fixed::<4>(key) {
                b"name" => &mut self.name,
                b"grid" => &mut self.grid,
                _ => return,
            },
            5 => match fixed::<5>(key) {
                b"block" => &mut self.block,
                b"bytes" => &mut self.bytes,
                b"dtype" => &mut self.dtype,
                b"Bytes" => &mut self.alloc_bytes,
                _ => return,
            },
            6 => match fixed::<6>(key) {
                b"device" => &mut self.device,
                b"stream" => &mut self.stream,
                _ => return,
            },
            9 => match fixed::<9>(key) {
                b"Device Id" => &mut self.device_id,
                _ => return,
            },
            10 => match fixed::<10>(key) {
                b"Input Dims" | b"Input dims" => &mut self.input_dims,
                b"Input type" => &mut self.input_types,
                b"Group size" => &mut self.group_size,
                _ => return,
            },
            11 => match fixed::<11>(key) {
                b"correlation" => &mut self.correlation,
                b"External id" | b"external id" => &mut self.external_id,
                b"Device Type" => &mut self.device_type,
                _ => return,
            },
            13 => match fixed::<13>(key) {
                b"shared memory" => &mut self.shared_memory,
                b"In msg nelems" => &mut self.in_nelems,
                _ => return,
            },
            14 => match fixed::<14>(key) {
                b"Out msg nelems" => &mut self.out_nelems,
                b"Total Reserved" => &mut self.total_reserved,
                _ => return,
            },
            15 => match fixed::<15>(key) {
                b"Sequence number" => &mut self.sequence_number,
                b"Collective name" => &mut self.collective_name,
                b"Total Allocated" => &mut self.total_allocated,
                b"Concrete Inputs" => &mut self.concrete_inputs,
                _ => return,
            },
            18 => match fixed::<18>(key) {
                b"Process Group Name" => &mut self.process_group,
                _ => return,
            },
            20 => match fixed::<20>(key) {
                b"registers per thread" => &mut self.registers,
                _ => return,
            },
            23 => match fixed::<23>(key) {
                b"memory bandwidth (GB/s)" => &mut self.bandwidth,
                b"theoretical occupancy %" => &mut self.occupancy,
                _ => return,
            },
            25 => match fixed::<25>(key) {
                b"est. achieved occupancy %" => &mut self.occupancy,
                _ => return,
            },
            _ => return,
        };
        *slot = Some(v);
    }
}

/// `key` as an array of its length, `N`.
#[inline(always)]
fn fixed<const N: usize>(key: &[u8]) -> &[u8; N] {
    key.try_into().expect("a key of the length matched")
}

/// Why an event could not be read, and where the reader stopped.
pub(crate) type Stopped = (Stop, usize);

/// Why an event could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The bytes end before the event does.
    Incomplete,
    /// The bytes are not a JSON object.
    Malformed,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The eight bytes at `b[i..]`, little-endian (the first byte lowest), if there are eight.
#[inline(always)]
fn word_at(b: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(i..i + 8)?.try_into().ok()?))
}

/// The high bit of each byte of `w` equal to `c`. Exact up to the first such byte (a borrow
/// may mark a byte above it): enough for `trailing_zeros`.
#[inline(always)]
fn bytes_equal(w: u64, c: u8) -> u64 {
    let x = w ^ (ONES * u64::from(c));
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// The index of the lowest byte marked in `mask` (a word of high bits).
#[inline(always)]
fn first_marked(mask: u64) -> usize {
    (mask.trailing_zeros() / 8) as usize
}

/// The first `"` or `\\` at or after `from`, and whether it is a backslash (told by the masks,
/// without reading the byte again). Eight bytes at a time (most strings in a trace are short
/// keys and names, where a vectorised search does not pay for its set-up), then memchr for long
/// strings.
#[inline(always)]
fn find_quote_or_backslash(b: &[u8], from: usize) -> Option<(usize, bool)> {
    let mut i = from;
    let words_end = b.len().min(from + 64);
    while i + 8 <= words_end {
        let w = word_at(b, i)?;
        let backslashes = bytes_equal(w, b'\\');
        let m = bytes_equal(w, b'"') | backslashes;
        if m != 0 {
            let k = first_marked(m);
            return Some((i + k, backslashes >> (8 * k) & 0x80 != 0));
        }
        i += 8;
    }
    let p = i + memchr2(b'"', b'\\', b.get(i..)?)?;
    Some((p, b[p] == b'\\'))
}

/// The high bit of each byte of `w` that is not an ASCII digit: exact up to the first such
/// byte, as [`bytes_equal`].
#[inline(always)]
fn non_digits(w: u64) -> u64 {
    // A byte is a digit when it is >= '0' and adding 0x46 ('0' + 0x46 = 0x76; '9' + 0x46 =
    // 0x7F) does not carry into its high bit.
    let low = w.wrapping_sub(ONES * u64::from(b'0'));
    let high = w.wrapping_add(ONES * 0x46);
    (low | high | w) & HIGHS
}

/// Whether all eight bytes of `w` are ASCII digits.
#[inline(always)]
fn all_digits(w: u64) -> bool {
    non_digits(w) == 0
}

/// The value of eight ASCII digits (little-endian in `w`, the first digit in the lowest byte).
#[inline(always)]
fn eight_digits(w: u64) -> u64 {
    let w = w.wrapping_sub(0x3030_3030_3030_3030);
    let w = (w.wrapping_mul(10) + (w >> 8)) & 0x00FF_00FF_00FF_00FF;
    let w = (w.wrapping_mul(100) + (w >> 16)) & 0x0000_FFFF_0000_FFFF;
    (w.wrapping_mul(10_000) + (w >> 32)) & 0xFFFF_FFFF
}

/// Bytes of numbers and literals, the delimiters that end them, and the rest.
static SCALAR: [Scalar; 256] = {
    let mut t = [Scalar::Invalid; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        if b.is_ascii_alphanumeric() || b == b'.' || b == b'+' || b == b'-' {
            t[c] = Scalar::Part;
        }
        c += 1;
    }
    t[b',' as usize] = Scalar::End;
    t[b'}' as usize] = Scalar::End;
    t[b']' as usize] = Scalar::End;
    t[b' ' as usize] = Scalar::End;
    t[b'\t' as usize] = Scalar::End;
    t[b'\n' as usize] = Scalar::End;
    t[b'\r' as usize] = Scalar::End;
    t
};

/// What a byte is to a number or literal.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scalar {
    /// Digits, letters, `.`, `+`, `-`.
    Part,
    /// A delimiter: the scalar ends before it.
    End,
    /// Anything else (a bracket or quote inside a number): the event is malformed.
    Invalid,
}

/// The end of the number or literal whose bytes continue at `from`: runs of digits are
/// skipped eight at a time (timestamps and ids are long ones), other bytes one by one.
#[inline(always)]
fn scalar_end(b: &[u8], mut i: usize) -> Result<usize, Stop> {
    loop {
        let c = match word_at(b, i) {
            Some(w) => {
                let m = non_digits(w);
                if m == 0 {
                    i += 8;
                    continue;
                }
                let k = first_marked(m);
                i += k;
                (w >> (8 * k)) as u8
            }
            None => *b.get(i).ok_or(Stop::Incomplete)?,
        };
        match SCALAR[c as usize] {
            Scalar::Part => i += 1,
            Scalar::End => return Ok(i),
            Scalar::Invalid => return Err(Stop::Malformed),
        }
    }
}

#[inline(always)]
pub(super) fn is_ws(b: u8) -> bool {
    b <= b' ' && matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    /// The next non-whitespace byte, not consumed.
    #[inline(always)]
    fn peek(&mut self) -> Result<u8, Stop> {
        loop {
            let c = *self.b.get(self.i).ok_or(Stop::Incomplete)?;
            if !is_ws(c) {
                return Ok(c);
            }
            self.i += 1;
        }
    }

    #[inline(always)]
    fn expect(&mut self, c: u8) -> Result<(), Stop> {
        if self.peek()? == c {
            self.i += 1;
            Ok(())
        } else {
            Err(Stop::Malformed)
        }
    }

    /// A string starting at the cursor (`"`), quotes included.
    #[inline(always)]
    fn string(&mut self) -> Result<&'a [u8], Stop> {
        let start = self.i;
        let mut i = self.i + 1;
        loop {
            let (p, backslash) = find_quote_or_backslash(self.b, i).ok_or(Stop::Incomplete)?;
            if backslash {
                i = p + 2;
                continue;
            }
            self.i = p + 1;
            return Ok(&self.b[start..self.i]);
        }
    }

    /// Any value: its raw text.
    #[inline(always)]
    fn value(&mut self) -> Result<Raw<'a>, Stop> {
        let first = self.peek()?;
        let start = self.i;
        match first {
            b'"' => self.string().map(Raw),
            b'{' | b'[' => {
                self.nested()?;
                Ok(Raw(&self.b[start..self.i]))
            }
            b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => {
                self.i = scalar_end(self.b, start + 1)?;
                Ok(Raw(&self.b[start..self.i]))
            }
            _ => Err(Stop::Malformed),
        }
    }

    /// Skips an object or array starting at the cursor. Each closing bracket must match its
    /// opening one (a stack of one bit per level, 128 levels at most: deeper is taken as
    /// malformed), so that the reader and the framer always agree on where an event ends.
    fn nested(&mut self) -> Result<(), Stop> {
        let mut stack: u128 = 0;
        let mut depth = 0u32;
        loop {
            let c = *self.b.get(self.i).ok_or(Stop::Incomplete)?;
            match c {
                b'"' => {
                    self.string()?;
                    continue;
                }
                b'{' | b'[' => {
                    if depth == 128 {
                        return Err(Stop::Malformed);
                    }
                    stack = (stack << 1) | u128::from(c == b'{');
                    depth += 1;
                }
                b'}' | b']' => {
                    if (stack & 1 == 1) != (c == b'}') {
                        return Err(Stop::Malformed);
                    }
                    stack >>= 1;
                    depth -= 1;
                    if depth == 0 {
                        self.i += 1;
                        return Ok(());
                    }
                }
                _ => {}
            }
            self.i += 1;
        }
    }

    /// Reads `{"key": value, …}`, calling `field` for each member; `field` reads the value.
    fn object(
        &mut self,
        mut field: impl FnMut(&mut Self, &'a [u8]) -> Result<(), Stop>,
    ) -> Result<(), Stop> {
        self.expect(b'{')?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Ok(());
        }
        loop {
            if self.peek()? != b'"' {
                return Err(Stop::Malformed);
            }
            let key = self.string()?;
            self.expect(b':')?;
            field(self, &key[1..key.len() - 1])?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(Stop::Malformed),
            }
        }
    }
}

/// Reads the event object at the start of `bytes` into `ev` (which must start empty); returns
/// the number of bytes it spans.
/// On failure, also says where the reader stopped (for a malformed event, where it broke).
pub(crate) fn parse_event<'a>(bytes: &'a [u8], ev: &mut RawEvent<'a>) -> Result<usize, Stopped> {
    let mut c = Cursor { b: bytes, i: 0 };
    let read = c.object(|c, key| {
        let slot = match key {
            b"ph" => &mut ev.ph,
            b"name" => &mut ev.name,
            b"cat" => &mut ev.cat,
            b"ts" => &mut ev.ts,
            b"dur" => &mut ev.dur,
            b"pid" => &mut ev.pid,
            b"tid" => &mut ev.tid,
            b"id" => &mut ev.id,
            b"args" | b"attr" if c.peek()? == b'{' => {
                return c.object(|c, key| {
                    let v = c.value()?;
                    ev.args.set(key, v);
                    Ok(())
                });
            }
            _ => {
                c.value()?;
                return Ok(());
            }
        };
        *slot = Some(c.value()?);
        Ok(())
    });
    read.map(|()| c.i).map_err(|stop| (stop, c.i))
}

/// The text of a JSON string value, or the raw text of any other value (a number used as a
/// name, say). Borrowed unless the string holds escapes or invalid UTF-8 (replaced by U+FFFD).
pub fn text(raw: Raw<'_>) -> Cow<'_, str> {
    let s = raw.0;
    if s.len() >= 2 && s[0] == b'"' {
        let inner = &s[1..s.len() - 1];
        if memchr::memchr(b'\\', inner).is_some() {
            if let Ok(unescaped) = serde_json::from_slice::<String>(s) {
                return Cow::Owned(unescaped);
            }
        }
        return utf8(inner);
    }
    utf8(s)
}

/// Borrowed when valid UTF-8 (the usual case, checked on the fast path), else repaired.
fn utf8(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// The bytes of a number, whether written bare or inside a string.
fn number_bytes(raw: Raw<'_>) -> &[u8] {
    let s = raw.0;
    s.strip_prefix(b"\"")
        .and_then(|s| s.strip_suffix(b"\""))
        .unwrap_or(s)
        .trim_ascii()
}

fn number_text(raw: Raw<'_>) -> &str {
    std::str::from_utf8(number_bytes(raw)).unwrap_or("")
}

/// Reads a time in microseconds (`"ts"`, `"dur"`) as integer nanoseconds, exactly for decimal
/// input (no rounding through `f64` for the usual `1234567.891` form).
pub(crate) fn micros_to_ns(raw: Raw<'_>) -> Option<i64> {
    decimal_micros_to_ns(number_bytes(raw))
}

/// Times beyond this (about 146 years in nanoseconds) are treated as corrupt.
pub(crate) const MAX_TIME_NS: i64 = 1 << 62;

/// Exact decimal parsing of `[-]digits[.digits]`; anything else (exponents) goes through `f64`.
fn decimal_micros_to_ns(s: &[u8]) -> Option<i64> {
    // Whole microseconds (most durations, many timestamps), read eight digits at a time.
    if s.len() <= 18 {
        if let Some(us) = short_digits(s) {
            let ns = (us as i64).checked_mul(1000)?;
            return (ns < MAX_TIME_NS).then_some(ns);
        }
    }
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let mut int: i64 = 0;
    let mut int_digits = 0;
    // Microsecond timestamps have 16 integer digits: take them eight at a time.
    let mut digits = digits;
    while let Some(word) = digits.get(..8) {
        let w = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        if !all_digits(w) {
            break;
        }
        int = int
            .wrapping_mul(100_000_000)
            .wrapping_add(eight_digits(w) as i64);
        int_digits += 8;
        digits = &digits[8..];
    }
    let mut frac: i64 = 0;
    let mut frac_digits = 0;
    let mut round_up = false;
    let mut seen_dot = false;
    for &b in digits {
        match b {
            b'0'..=b'9' if !seen_dot => {
                int = int.wrapping_mul(10).wrapping_add(i64::from(b - b'0'));
                int_digits += 1;
            }
            b'0'..=b'9' => {
                if frac_digits < 3 {
                    frac = frac * 10 + i64::from(b - b'0');
                } else if frac_digits == 3 {
                    // Round half up on the fourth fractional digit (sub-nanosecond).
                    round_up = b >= b'5';
                }
                frac_digits += 1;
            }
            b'.' if !seen_dot => seen_dot = true,
            _ => return float_micros_to_ns(s),
        }
    }
    if int_digits == 0 || int_digits > 18 {
        return float_micros_to_ns(s);
    }
    for _ in frac_digits..3 {
        frac *= 10;
    }
    let ns = int.checked_mul(1000)? + frac + i64::from(round_up);
    (ns < MAX_TIME_NS).then_some(if neg { -ns } else { ns })
}

fn float_micros_to_ns(s: &[u8]) -> Option<i64> {
    let v: f64 = std::str::from_utf8(s).ok()?.parse().ok()?;
    let ns = (v * 1000.0).round();
    (ns.is_finite() && ns.abs() < MAX_TIME_NS as f64).then_some(ns as i64)
}

/// Reads an unsigned integer, written as a number or a string; fractions are truncated, values
/// beyond 64 bits saturate (they are ids, compared only for equality within one trace).
pub(crate) fn uint(raw: Raw<'_>) -> Option<u64> {
    let b = number_bytes(raw);
    if let Some(v) = short_digits(b) {
        return Some(v);
    }
    let s = number_text(raw);
    if let Ok(v) = s.parse::<u64>() {
        return Some(v);
    }
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return Some(u64::MAX);
    }
    let v: f64 = s.parse().ok()?;
    (v >= 0.0 && v.is_finite()).then_some(v as u64)
}

/// The value of 1 to 19 ASCII digits (which cannot overflow), eight at a time; `None` for
/// anything else.
fn short_digits(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 19 {
        return None;
    }
    let mut v = 0u64;
    let mut rest = b;
    while let Some(w) = word_at(rest, 0) {
        if !all_digits(w) {
            return None;
        }
        v = v * 100_000_000 + eight_digits(w);
        rest = &rest[8..];
    }
    rest.iter().try_fold(v, |v, &d| {
        d.is_ascii_digit().then(|| v * 10 + u64::from(d - b'0'))
    })
}

/// Reads a signed integer, written as a number or a string.
pub fn int(raw: Raw<'_>) -> Option<i64> {
    let s = number_text(raw);
    if let Ok(v) = s.parse::<i64>() {
        return Some(v);
    }
    let v: f64 = s.parse().ok()?;
    v.is_finite().then_some(v as i64)
}

/// Reads a float, written as a number or a string.
pub fn float(raw: Raw<'_>) -> Option<f32> {
    number_text(raw)
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .map(|v| v as f32)
}

/// Reads `[x, y, z]` launch dimensions: written `[128,1,1]` (read here without serde_json, which
/// would build a `Vec` per kernel), or in any other JSON form.
pub(crate) fn dim3(raw: Raw<'_>) -> Option<[u32; 3]> {
    compact_dim3(raw.0).or_else(|| {
        let v: Vec<u64> = serde_json::from_slice(raw.0).ok()?;
        match v.as_slice() {
            [x, y, z] => Some([
                (*x).try_into().ok()?,
                (*y).try_into().ok()?,
                (*z).try_into().ok()?,
            ]),
            _ => None,
        }
    })
}

/// `[x,y,z]` without spaces, each a JSON integer (no leading zero) below 2^32.
fn compact_dim3(b: &[u8]) -> Option<[u32; 3]> {
    let inner = b.strip_prefix(b"[")?.strip_suffix(b"]")?;
    let mut parts = inner.split(|&c| c == b',');
    let dim = |part: Option<&[u8]>| {
        let part = part?;
        if part.len() > 1 && part[0] == b'0' {
            return None;
        }
        u32::try_from(short_digits(part)?).ok()
    };
    let xyz = [dim(parts.next())?, dim(parts.next())?, dim(parts.next())?];
    parts.next().is_none().then_some(xyz)
}

/// The raw text as a string (for interning JSON fragments such as `Input Dims`).
pub(crate) fn raw_text(raw: Raw<'_>) -> Cow<'_, str> {
    utf8(raw.0)
}

#[cfg(test)]
mod tests;
