//! The bounds a link is read within, checked before anything is trusted: the prefix and
//! version, base64 (errors at their offset in the fragment), inflation capped at
//! [`MAX_JSON_BYTES`] and needing the stream's end, nesting, text and list lengths (naming the
//! JSON path that fails), and the format names.

use flate2::{Decompress, FlushDecompress, Status};
use serde_json::Value;

use super::{quoted, LinkKind, ShareError, MAX_DEPTH, MAX_ITEMS, MAX_JSON_BYTES, MAX_TEXT_BYTES};

/// Checks the prefix and version of a link of `kind`; returns the base64 text after
/// `<prefix><version>.`.
pub(super) fn payload_of<'f>(fragment: &'f str, kind: &LinkKind) -> Result<&'f str, ShareError> {
    let not_a_link = || ShareError::NotALink {
        start: fragment.chars().take(12).collect(),
        expected: format!("{}{}.", kind.prefix, kind.newest),
    };
    let rest = fragment.strip_prefix(kind.prefix).ok_or_else(not_a_link)?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || rest.as_bytes().get(digits) != Some(&b'.') {
        return Err(not_a_link());
    }
    let version = &rest[..digits];
    check_version(version.parse().ok(), version, kind)?;
    Ok(&rest[digits + 1..])
}

/// A link format version of `kind`: one this version reads, an older one (none was ever
/// written), or a newer one (`None`: too large a number to read).
pub(super) fn check_version(
    version: Option<u64>,
    text: &str,
    kind: &LinkKind,
) -> Result<u32, ShareError> {
    match version {
        Some(v) if (u64::from(kind.oldest)..=u64::from(kind.newest)).contains(&v) => Ok(v as u32),
        Some(v) if v < u64::from(kind.oldest) => Err(ShareError::Unsupported {
            version: text.to_string(),
            why: "no TorchTraceAP ever wrote it (format 1 is the first): the link is damaged or was not made by TorchTraceAP",
        }),
        _ => Err(ShareError::Newer {
            what: kind.what,
            version: text.to_string(),
            reads: kind.newest,
        }),
    }
}

/// A base64 error, its offset counted from the fragment's start.
pub(super) fn base64_detail(e: &base64::DecodeError, offset: usize) -> String {
    use base64::DecodeError as E;
    match *e {
        E::InvalidByte(at, byte) => format!(
            "the character {:?} at position {} is not one of A-Z a-z 0-9 - _",
            char::from(byte),
            at + offset
        ),
        E::InvalidLength(n) => {
            format!("{n} characters is not a possible length: characters are missing or extra")
        }
        E::InvalidLastSymbol(at, byte) => format!(
            "the last character {:?} at position {} has bits set that no encoder writes",
            char::from(byte),
            at + offset
        ),
        E::InvalidPadding => "the '=' padding is wrong".to_string(),
    }
}

/// zlib decompression that stops at [`MAX_JSON_BYTES`] of output and insists on the stream's end
/// (and its checksum).
pub(super) fn inflate(compressed: &[u8]) -> Result<Vec<u8>, ShareError> {
    let mut z = Decompress::new(true);
    let mut out = Vec::with_capacity(compressed.len().saturating_mul(4).min(MAX_JSON_BYTES + 1));
    loop {
        let before = (z.total_in(), z.total_out());
        let input = &compressed[z.total_in() as usize..];
        let status = z
            .decompress_vec(input, &mut out, FlushDecompress::None)
            .map_err(|e| ShareError::Corrupt {
                at: z.total_in(),
                detail: e.to_string(),
            })?;
        if out.len() > MAX_JSON_BYTES {
            return Err(ShareError::TooBig);
        }
        if status == Status::StreamEnd {
            let extra = compressed.len() - z.total_in() as usize;
            if extra > 0 {
                return Err(ShareError::Corrupt {
                    at: z.total_in(),
                    detail: format!("{extra} bytes follow the end of the compressed data"),
                });
            }
            return Ok(out);
        }
        if out.len() == out.capacity() {
            out.reserve_exact(out.len().clamp(4096, MAX_JSON_BYTES + 1 - out.len()));
        } else if (z.total_in(), z.total_out()) == before || input.is_empty() {
            return Err(ShareError::Truncated {
                bytes: compressed.len(),
            });
        }
    }
}

/// Caps nesting, text and list lengths, naming the place (`$.report.findings[0].summary`).
pub(super) fn check_limits(v: &Value, path: &mut String, depth: usize) -> Result<(), ShareError> {
    use std::fmt::Write as _;
    if depth > MAX_DEPTH {
        return Err(ShareError::TooDeep { path: path.clone() });
    }
    let too_large = |path: &String, what, len, max| {
        Err(ShareError::TooLarge {
            path: path.clone(),
            what,
            len,
            max,
        })
    };
    match v {
        Value::String(s) if s.len() > MAX_TEXT_BYTES => {
            too_large(path, "text", s.len(), MAX_TEXT_BYTES)
        }
        Value::Array(items) if items.len() > MAX_ITEMS => {
            too_large(path, "list", items.len(), MAX_ITEMS)
        }
        Value::Array(items) => items.iter().enumerate().try_for_each(|(i, item)| {
            let len = path.len();
            let _ = write!(path, "[{i}]");
            check_limits(item, path, depth + 1)?;
            path.truncate(len);
            Ok(())
        }),
        Value::Object(fields) => fields.iter().try_for_each(|(key, item)| {
            if key.len() > MAX_TEXT_BYTES {
                return too_large(path, "key", key.len(), MAX_TEXT_BYTES);
            }
            let len = path.len();
            let _ = write!(path, ".{key}");
            check_limits(item, path, depth + 1)?;
            path.truncate(len);
            Ok(())
        }),
        _ => Ok(()),
    }
}

/// The payload's own format name and version, before its shape is read: a newer payload says so
/// rather than failing on a field it does not know. Returns the version (format 1 when it is not
/// a whole number: the typed reading then says what is wrong).
pub(super) fn check_format(v: &Value, kind: &LinkKind) -> Result<u32, ShareError> {
    match v.get("format").and_then(Value::as_str) {
        Some(format) if format == kind.format => {}
        Some(other) => {
            return Err(ShareError::WrongFormat {
                found: quoted(other),
                expected: kind.format,
            })
        }
        None => {
            return Err(ShareError::Shape {
                detail: "no \"format\" field at the top level".to_string(),
            })
        }
    }
    match v.get("version").and_then(Value::as_u64) {
        Some(version) => check_version(Some(version), &version.to_string(), kind),
        None => Ok(kind.oldest),
    }
}
