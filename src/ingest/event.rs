//! One event as written in the JSON, borrowed from the input bytes, and the lenient readers
//! for its values.
//!
//! Values are kept as raw JSON text (`&RawValue`) and read on demand, because traces write the
//! same field in many ways: numbers as strings (`"ts": "2097962447511.067"`), integers beyond
//! 64 bits, fractional microseconds with nanosecond digits, `attr` instead of `args`.

use serde::Deserialize;
use serde_json::value::RawValue;

/// The fields of an event that the model uses; all others are skipped while parsing.
#[derive(Deserialize)]
pub struct RawEvent<'a> {
    #[serde(borrow)]
    pub ph: Option<&'a RawValue>,
    #[serde(borrow)]
    pub name: Option<&'a RawValue>,
    #[serde(borrow)]
    pub cat: Option<&'a RawValue>,
    #[serde(borrow)]
    pub ts: Option<&'a RawValue>,
    #[serde(borrow)]
    pub dur: Option<&'a RawValue>,
    #[serde(borrow)]
    pub pid: Option<&'a RawValue>,
    #[serde(borrow)]
    pub tid: Option<&'a RawValue>,
    #[serde(borrow)]
    pub id: Option<&'a RawValue>,
    #[serde(borrow, alias = "attr")]
    pub args: Option<RawArgs<'a>>,
}

/// The arguments the analyses need, under every spelling the eras use.
#[derive(Deserialize, Default)]
pub struct RawArgs<'a> {
    // Metadata (`ph: M`) events.
    #[serde(borrow)]
    pub name: Option<&'a RawValue>,
    // GPU activities and runtime calls.
    #[serde(borrow)]
    pub correlation: Option<&'a RawValue>,
    #[serde(borrow)]
    pub device: Option<&'a RawValue>,
    #[serde(borrow)]
    pub stream: Option<&'a RawValue>,
    #[serde(borrow)]
    pub grid: Option<&'a RawValue>,
    #[serde(borrow)]
    pub block: Option<&'a RawValue>,
    #[serde(borrow, rename = "registers per thread")]
    pub registers: Option<&'a RawValue>,
    #[serde(borrow, rename = "shared memory")]
    pub shared_memory: Option<&'a RawValue>,
    #[serde(borrow, rename = "est. achieved occupancy %", alias = "theoretical occupancy %")]
    pub occupancy: Option<&'a RawValue>,
    #[serde(borrow, rename = "blocks per SM")]
    pub blocks_per_sm: Option<&'a RawValue>,
    #[serde(borrow, rename = "warps per SM")]
    pub warps_per_sm: Option<&'a RawValue>,
    #[serde(borrow)]
    pub bytes: Option<&'a RawValue>,
    #[serde(borrow, rename = "memory bandwidth (GB/s)")]
    pub bandwidth: Option<&'a RawValue>,
    // CPU ops.
    #[serde(borrow, rename = "External id", alias = "external id")]
    pub external_id: Option<&'a RawValue>,
    #[serde(borrow, rename = "Sequence number")]
    pub sequence_number: Option<&'a RawValue>,
    #[serde(borrow, rename = "Input Dims", alias = "Input dims")]
    pub input_dims: Option<&'a RawValue>,
    #[serde(borrow, rename = "Input type")]
    pub input_types: Option<&'a RawValue>,
    #[serde(borrow, rename = "Concrete Inputs")]
    pub concrete_inputs: Option<&'a RawValue>,
    // Collectives (record_param_comms and NCCL kernels).
    #[serde(borrow, rename = "Collective name")]
    pub collective_name: Option<&'a RawValue>,
    #[serde(borrow, rename = "In msg nelems")]
    pub in_nelems: Option<&'a RawValue>,
    #[serde(borrow, rename = "Out msg nelems")]
    pub out_nelems: Option<&'a RawValue>,
    #[serde(borrow, rename = "Group size")]
    pub group_size: Option<&'a RawValue>,
    #[serde(borrow)]
    pub dtype: Option<&'a RawValue>,
    #[serde(borrow, rename = "Process Group Name")]
    pub process_group: Option<&'a RawValue>,
    // Allocator ([memory]) events.
    #[serde(borrow, rename = "Bytes")]
    pub alloc_bytes: Option<&'a RawValue>,
    #[serde(borrow, rename = "Total Allocated")]
    pub total_allocated: Option<&'a RawValue>,
    #[serde(borrow, rename = "Total Reserved")]
    pub total_reserved: Option<&'a RawValue>,
    #[serde(borrow, rename = "Device Type")]
    pub device_type: Option<&'a RawValue>,
    #[serde(borrow, rename = "Device Id")]
    pub device_id: Option<&'a RawValue>,
}

/// The text of a JSON string value, or the raw text of any other value (a number used as a
/// name, say). Borrowed unless the string holds escapes.
pub fn text(raw: &RawValue) -> std::borrow::Cow<'_, str> {
    let s = raw.get();
    match s.as_bytes().first() {
        Some(b'"') => {
            let inner = &s[1..s.len() - 1];
            if inner.contains('\\') {
                serde_json::from_str::<String>(s)
                    .map(std::borrow::Cow::Owned)
                    .unwrap_or(std::borrow::Cow::Borrowed(inner))
            } else {
                std::borrow::Cow::Borrowed(inner)
            }
        }
        _ => std::borrow::Cow::Borrowed(s),
    }
}

/// The digits of a number, whether written bare or inside a string.
fn number_text(raw: &RawValue) -> &str {
    let s = raw.get();
    s.strip_prefix('"').and_then(|s| s.strip_suffix('"')).unwrap_or(s).trim()
}

/// Reads a time in microseconds (`"ts"`, `"dur"`) as integer nanoseconds, exactly for decimal
/// input (no rounding through `f64` for the usual `1234567.891` form).
pub fn micros_to_ns(raw: &RawValue) -> Option<i64> {
    decimal_micros_to_ns(number_text(raw))
}

/// Exact decimal parsing of `[-]digits[.digits]`; anything else (exponents) goes through `f64`.
pub fn decimal_micros_to_ns(s: &str) -> Option<i64> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let plain = !int.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit());
    if !plain {
        let v: f64 = s.parse().ok()?;
        let ns = (v * 1000.0).round();
        return (ns.is_finite() && ns.abs() < MAX_TIME_NS as f64).then_some(ns as i64);
    }
    let mut ns: i64 = 0;
    for b in int.bytes() {
        ns = ns.checked_mul(10)?.checked_add(i64::from(b - b'0'))?;
    }
    ns = ns.checked_mul(1000)?;
    let fb = frac.as_bytes();
    let mut sub: i64 = 0;
    for k in 0..3 {
        sub = sub * 10 + fb.get(k).map_or(0, |&b| i64::from(b - b'0'));
    }
    // Round half up on the fourth fractional digit (sub-nanosecond).
    if fb.get(3).is_some_and(|&b| b >= b'5') {
        sub += 1;
    }
    ns = ns.checked_add(sub)?;
    (ns < MAX_TIME_NS).then_some(if neg { -ns } else { ns })
}

/// Times beyond this (about 146 years in nanoseconds) are treated as corrupt.
pub const MAX_TIME_NS: i64 = 1 << 62;

/// Reads an unsigned integer, written as a number or a string; fractions are truncated, values
/// beyond 64 bits saturate (they are ids, compared only for equality within one trace).
pub fn uint(raw: &RawValue) -> Option<u64> {
    let s = number_text(raw);
    if let Ok(v) = s.parse::<u64>() {
        return Some(v);
    }
    if s.bytes().all(|b| b.is_ascii_digit()) && !s.is_empty() {
        return Some(u64::MAX);
    }
    let v: f64 = s.parse().ok()?;
    (v >= 0.0 && v.is_finite()).then(|| v as u64)
}

/// Reads a signed integer, written as a number or a string.
pub fn int(raw: &RawValue) -> Option<i64> {
    let s = number_text(raw);
    if let Ok(v) = s.parse::<i64>() {
        return Some(v);
    }
    let v: f64 = s.parse().ok()?;
    v.is_finite().then(|| v as i64)
}

/// Reads a float, written as a number or a string.
pub fn float(raw: &RawValue) -> Option<f32> {
    number_text(raw).parse::<f64>().ok().filter(|v| v.is_finite()).map(|v| v as f32)
}

/// Reads `[x, y, z]` launch dimensions.
pub fn dim3(raw: &RawValue) -> Option<[u32; 3]> {
    let v: Vec<u64> = serde_json::from_str(raw.get()).ok()?;
    match v.as_slice() {
        [x, y, z] => Some([(*x).try_into().ok()?, (*y).try_into().ok()?, (*z).try_into().ok()?]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_string()).unwrap()
    }

    #[test]
    fn fractional_microseconds_become_exact_nanoseconds() {
        assert_eq!(micros_to_ns(&raw("5387313686629.708")), Some(5_387_313_686_629_708));
        assert_eq!(micros_to_ns(&raw("12")), Some(12_000));
        assert_eq!(micros_to_ns(&raw("0.01")), Some(10));
        assert_eq!(micros_to_ns(&raw("1.0005")), Some(1_001));
        assert_eq!(micros_to_ns(&raw("-3.5")), Some(-3_500));
        assert_eq!(micros_to_ns(&raw("1.5e3")), Some(1_500_000));
    }

    #[test]
    fn numbers_written_as_strings_are_read() {
        assert_eq!(micros_to_ns(&raw("\"2097962447511.067\"")), Some(2_097_962_447_511_067));
        assert_eq!(uint(&raw("\"3620872431\"")), Some(3_620_872_431));
        assert_eq!(int(&raw("\"-7\"")), Some(-7));
        assert_eq!(float(&raw("\"0.5\"")), Some(0.5));
    }

    #[test]
    fn integers_beyond_64_bits_do_not_fail() {
        assert_eq!(uint(&raw("10159970886766084423")), Some(10_159_970_886_766_084_423));
        assert_eq!(uint(&raw("340282366920938463463374607431768211456")), Some(u64::MAX));
        assert_eq!(micros_to_ns(&raw("99999999999999999999999999")), None);
        assert_eq!(micros_to_ns(&raw("7.6e18")), None);
    }

    #[test]
    fn text_unescapes_only_when_needed() {
        assert!(matches!(text(&raw("\"aten::mm\"")), std::borrow::Cow::Borrowed("aten::mm")));
        assert_eq!(text(&raw(r#""a\"b\u00e9""#)), "a\"bé");
        assert_eq!(text(&raw("42")), "42");
    }

    #[test]
    fn launch_dimensions_are_read() {
        assert_eq!(dim3(&raw("[128, 1, 1]")), Some([128, 1, 1]));
        assert_eq!(dim3(&raw("[1, 2]")), None);
    }
}
