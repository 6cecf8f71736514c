//! A figure as written: a number at a word boundary, its decimals and its unit (a time, a
//! percentage, bytes, a count), and whether two figures are equal at the precision written
//! (`12.3 ms` is `12.345 ms`, and so is `12345 µs`; `11.8 ms` is not `11.900 ms`). `check`
//! reads a request's and an answer's figures with it.

use std::ops::Range;

/// What a figure measures, with the factor of its unit to the base (ns, bytes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Unit {
    Time(f64),
    Percent,
    Bytes(f64),
    Times,
}

/// Units as written (longest first where one is a prefix of another), each followed by a
/// character that is not a letter or digit.
const UNITS: [(&str, Unit); 27] = [
    ("milliseconds", Unit::Time(1e6)),
    ("millisecond", Unit::Time(1e6)),
    ("microseconds", Unit::Time(1e3)),
    ("microsecond", Unit::Time(1e3)),
    ("nanoseconds", Unit::Time(1.0)),
    ("seconds", Unit::Time(1e9)),
    ("second", Unit::Time(1e9)),
    ("percent", Unit::Percent),
    ("bytes", Unit::Bytes(1.0)),
    ("ms", Unit::Time(1e6)),
    ("µs", Unit::Time(1e3)),
    ("μs", Unit::Time(1e3)),
    ("us", Unit::Time(1e3)),
    ("ns", Unit::Time(1.0)),
    ("s", Unit::Time(1e9)),
    ("%", Unit::Percent),
    ("KiB", Unit::Bytes(1024.0)),
    ("MiB", Unit::Bytes(1048576.0)),
    ("GiB", Unit::Bytes(1073741824.0)),
    ("KB", Unit::Bytes(1e3)),
    ("kB", Unit::Bytes(1e3)),
    ("MB", Unit::Bytes(1e6)),
    ("GB", Unit::Bytes(1e9)),
    ("B", Unit::Bytes(1.0)),
    ("×", Unit::Times),
    ("x", Unit::Times),
    ("times", Unit::Times),
];

pub(super) fn unit_of(written: &str) -> Option<Unit> {
    UNITS.iter().find(|(u, _)| *u == written).map(|(_, k)| *k)
}

/// A number as written: its value in its unit, its decimals, its unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Number {
    pub(super) value: f64,
    pub(super) decimals: u32,
    pub(super) unit: Option<Unit>,
}

impl Number {
    /// Half a unit of the last digit written, in the base unit.
    fn tolerance(&self) -> f64 {
        0.5 * 10f64.powi(-(self.decimals as i32)) * self.factor()
    }

    fn factor(&self) -> f64 {
        match self.unit {
            Some(Unit::Time(f)) | Some(Unit::Bytes(f)) => f,
            _ => 1.0,
        }
    }

    /// Whether `other` (a number sent) is this one (a number cited): in base units when both
    /// have a unit, of the same kind, equal at the coarser precision of the two; by face value
    /// at this one's precision when either has none (`12` is `12.3`, `12.4` is not `12`).
    pub(super) fn matches(&self, other: &Number) -> bool {
        let same_kind = match (self.unit, other.unit) {
            (None, _) | (_, None) => {
                let tol = 0.5 * 10f64.powi(-(self.decimals as i32));
                return (self.value - other.value).abs() <= tol * (1.0 + 1e-9);
            }
            (Some(a), Some(b)) => std::mem::discriminant(&a) == std::mem::discriminant(&b),
        };
        let (a, b) = (self.value * self.factor(), other.value * other.factor());
        let tol = self.tolerance().max(other.tolerance());
        same_kind && (a - b).abs() <= tol * (1.0 + 1e-9)
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The numbers of `text` at word boundaries (not inside `fp32`, `sm80`, `3rd`), each with its
/// byte range (unit included).
pub(super) fn numbers(text: &str) -> Vec<(Range<usize>, Number)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        // A digit is a whole character: `i` is a boundary then.
        if !b[i].is_ascii_digit()
            || text[..i]
                .chars()
                .next_back()
                .is_some_and(|c| is_word(c) || c == '.')
        {
            i += 1;
            continue;
        }
        let start = i;
        let mut digits = String::new();
        while i < b.len() {
            if b[i].is_ascii_digit() {
                digits.push(b[i] as char);
                i += 1;
            } else if b[i] == b','
                && b.len() >= i + 4
                && b[i + 1..i + 4].iter().all(u8::is_ascii_digit)
                && b.get(i + 4).is_none_or(|c| !c.is_ascii_digit())
            {
                // A thousands separator (1,234), not a list (3, 4).
                i += 1;
            } else {
                break;
            }
        }
        let mut decimals = 0;
        if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            digits.push('.');
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                digits.push(b[i] as char);
                decimals += 1;
                i += 1;
            }
        }
        let mut end = i;
        let mut unit = None;
        let gap = usize::from(b.get(i) == Some(&b' '));
        for (u, kind) in UNITS {
            let at = i + gap;
            if text[at.min(text.len())..].starts_with(u)
                && text[at + u.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric())
            {
                unit = Some(kind);
                end = at + u.len();
                break;
            }
        }
        let after = text[end..].chars().next();
        if unit.is_none() && after.is_some_and(is_word) {
            // Part of a word: `8x8`, `2nd`.
            i = end;
            continue;
        }
        if let Ok(value) = digits.parse::<f64>() {
            out.push((
                start..end,
                Number {
                    value,
                    decimals,
                    unit,
                },
            ));
        }
        i = end;
    }
    out
}
