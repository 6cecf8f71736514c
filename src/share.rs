//! Sharing an analysis as a link: the report travels in the URL fragment (`#…`, which browsers
//! never send to a server), never the trace. What a link holds is in `facts`; the bounds it is
//! read within, in `bounds`.
//!
//! Its unit tests cover finding the fragment, the version prefix, the inflate cap and limits
//! naming the place.
//!
//! A link carries facts, not prose. Its fragment is `ttap2.` followed by the base64url (no
//! padding) of the zlib-compressed (best level) JSON of the link's facts: each finding's detector
//! id, the index of its fix in the detector's catalogue, its measured figures and its evidence
//! (step numbers, counts, event names), the per-step and per-window figures, the trace facts, a
//! [`fingerprint`] of the trace, what was left out to fit the size budget, and the sharer's
//! selection. Titles, explanations, fixes and code are never in a link: [`decode`] renders them
//! from this version's own catalogue ([`crate::detect::DETECTORS`]), keyed by detector id and
//! filled with the link's numbers, and refuses a link that names a detector it does not know.
//! Text only the link can hold (device, kernel and operator names) comes back as quoted data
//! ([`quoted`]): length-capped, with control, bidirectional and invisible characters made
//! visible. [`render`] applies the same rule to a saved report opened again. zlib rather than raw
//! deflate: its checksum turns a damaged link into an error instead of a report with altered
//! numbers.
//!
//! [`encode`] keeps the fragment within [`ShareOptions::max_bytes`] (8192 by default) by leaving
//! out the least important parts first ([`Part`], in [`Part::ALL`]'s order) and recording each in
//! [`SharedReport::omitted`], so that the opened link can say what is missing.
//!
//! [`decode`] reads links from any source with bounded work and memory: the fragment's length,
//! the decompressed size ([`MAX_JSON_BYTES`], however well the data compresses), the JSON's
//! nesting, each text's length and each list's length are capped, and every failure is a
//! [`ShareError`] that says what failed, where and what to do.
//!
//! Decoded strings are plain text, exactly as the sharer's report held them (`<script>` stays the
//! eight characters it is): front ends must render them as text, never as HTML.
//!
//! Format history: link format 1 (`ttap1.`) carried the whole [`Report`], prose included; it is
//! still read, its prose ignored (rendered from the catalogue like format 2). Format 2
//! (`ttap2.`) carries facts only. No older format than 1 was ever written.

mod bounds;
mod facts;

use std::fmt;

use base64::alphabet::URL_SAFE;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine as _;
use flate2::write::ZlibEncoder;
use flate2::Compression;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::model::fingerprint::fingerprint;
use crate::report::{self, Report};
use bounds::{base64_detail, check_format, check_limits, inflate, payload_of};
use facts::Facts;

/// The payload's format name; [`decode`] checks it.
pub const FORMAT: &str = "torchtraceap.share";
/// A kind of link: what its fragment starts with before the version, the formats this version
/// reads, and the format name its JSON carries. Reports are [`REPORT_LINK`]; comparisons and
/// run views have their own (made from profiles, a layer up).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LinkKind {
    pub prefix: &'static str,
    pub(crate) oldest: u32,
    /// The format this version writes, and the newest it reads.
    pub(crate) newest: u32,
    /// The JSON's `format` field.
    pub format: &'static str,
    /// What a version number counts, in messages (`link format`).
    pub what: &'static str,
}
/// Links of a report: `ttap2.`.
pub(crate) const REPORT_LINK: LinkKind = LinkKind {
    prefix: PREFIX,
    oldest: OLDEST_VERSION,
    newest: VERSION,
    format: FORMAT,
    what: "link format",
};
/// The link format this version writes: the `2` of `ttap2.`. It also reads format 1.
pub const VERSION: u32 = 2;
/// The oldest link format this version reads.
pub(crate) const OLDEST_VERSION: u32 = 1;
/// What every fragment starts with, before the version.
pub const PREFIX: &str = "ttap";
/// The default size budget of a fragment, in bytes (= characters: the fragment is ASCII).
pub const DEFAULT_MAX_BYTES: usize = 8192;

/// Where the web app is served unless a front end is told otherwise (`ttap share --base-url`).
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8080/";
/// The longest fragment [`decode`] reads.
pub const MAX_LINK_BYTES: usize = 2 << 20;
/// The largest decompressed JSON [`decode`] accepts; decompression stops there.
pub const MAX_JSON_BYTES: usize = 1 << 20;
/// The deepest JSON nesting [`decode`] accepts (a shared report's deepest values, evidence event
/// names, lie 7 deep).
pub(crate) const MAX_DEPTH: usize = 16;
/// The longest text (string or key) [`decode`] accepts, in bytes.
pub const MAX_TEXT_BYTES: usize = 64 << 10;
/// The longest list [`decode`] accepts.
pub const MAX_ITEMS: usize = 100_000;
/// Event names kept per evidence entry once [`Part::EvidenceEvents`] is left out.
pub(crate) const EVIDENCE_EVENTS_KEPT: usize = 3;
/// The longest quoted text ([`quoted`]) shown from a link or a saved report, in characters.
pub const QUOTED_MAX_CHARS: usize = 160;

/// A link's content as the page shows it: the report rendered from the catalogue ([`render`]),
/// the trace's fingerprint, what was left out, and what the sharer had selected. On the wire a
/// link holds only the facts of it (the private `Facts`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SharedReport {
    /// [`FORMAT`].
    pub format: String,
    /// [`VERSION`] (a link of an older format is shown as this one would carry it).
    pub version: u32,
    /// [`fingerprint`] of the trace the report was made from.
    pub fingerprint: String,
    pub report: Report,
    /// The parts left out to fit the size budget, in the order they were left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub omitted: Vec<Omitted>,
    /// The id of the finding the sharer had open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected_finding: Option<String>,
    /// The timeline range the sharer had selected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected_range: Option<TimeRange>,
}

/// A time range in milliseconds from the trace's first event (as `WindowEntry::start_ms`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimeRange {
    pub start_ms: f64,
    pub end_ms: f64,
}

/// One kind of part left out of a link, and how many.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Omitted {
    pub part: Part,
    pub count: u64,
    /// The ids of the findings left out, for [`Part::LowFindings`] and [`Part::MediumFindings`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
}

/// The parts [`encode`] can leave out, least important first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// Every per-window row.
    Windows,
    /// The per-stream breakdown of each step.
    StepStreams,
    /// Every per-step row (the trace facts keep the mean step time).
    Steps,
    /// Findings of low severity.
    LowFindings,
    /// Evidence event names beyond the first [`EVIDENCE_EVENTS_KEPT`] of each list.
    EvidenceEvents,
    /// Every diagnosis (format 1 only: format 2 carries no prose).
    Diagnoses,
    /// The fixes' code snippets (format 1 only: format 2 renders them from the catalogue).
    FixSnippets,
    /// Findings of medium severity.
    MediumFindings,
    /// Every evidence entry.
    Evidence,
    /// A part a newer TorchTraceAP left out.
    #[serde(other)]
    Other,
}

impl Part {
    /// The order in which [`encode`] leaves parts out.
    pub const ALL: [Part; 7] = [
        Part::Windows,
        Part::StepStreams,
        Part::Steps,
        Part::LowFindings,
        Part::EvidenceEvents,
        Part::MediumFindings,
        Part::Evidence,
    ];

    /// Leaves this part out of `s`; returns how many items went, and the ids of findings.
    fn leave_out(self, s: &mut SharedReport) -> (usize, Vec<String>) {
        let r = &mut s.report;
        match self {
            Part::Windows => (std::mem::take(&mut r.windows).len(), Vec::new()),
            Part::StepStreams => (
                r.steps
                    .iter_mut()
                    .map(|st| std::mem::take(&mut st.streams).len())
                    .sum(),
                Vec::new(),
            ),
            Part::Steps => (std::mem::take(&mut r.steps).len(), Vec::new()),
            Part::LowFindings => s.leave_out_findings("low"),
            Part::MediumFindings => s.leave_out_findings("medium"),
            Part::EvidenceEvents => (
                r.findings
                    .iter_mut()
                    .flat_map(|f| &mut f.evidence)
                    .map(|e| {
                        let n = e.events.len();
                        e.events.truncate(EVIDENCE_EVENTS_KEPT);
                        n - e.events.len()
                    })
                    .sum(),
                Vec::new(),
            ),
            Part::Evidence => (
                r.findings
                    .iter_mut()
                    .map(|f| std::mem::take(&mut f.evidence).len())
                    .sum(),
                Vec::new(),
            ),
            Part::Diagnoses | Part::FixSnippets | Part::Other => (0, Vec::new()),
        }
    }
}

impl fmt::Display for Omitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.count;
        let s = if n == 1 { "" } else { "s" };
        let ids = self.ids.join(", ");
        match self.part {
            Part::Windows => write!(f, "{n} per-window row{s}"),
            Part::StepStreams => write!(f, "{n} per-stream row{s} of the steps"),
            Part::Steps => write!(
                f,
                "{n} per-step row{s} (the trace facts keep the mean step time)"
            ),
            Part::LowFindings => write!(f, "{n} low-severity finding{s} ({ids})"),
            Part::EvidenceEvents => write!(
                f,
                "{n} event name{s} of the evidence (the first {EVIDENCE_EVENTS_KEPT} of each list are kept)"
            ),
            Part::Diagnoses => write!(f, "{n} diagnos{}", if n == 1 { "is" } else { "es" }),
            Part::FixSnippets => write!(f, "{n} code snippet{s} of the fixes"),
            Part::MediumFindings => write!(f, "{n} medium-severity finding{s} ({ids})"),
            Part::Evidence => write!(f, "{n} evidence entr{}", if n == 1 { "y" } else { "ies" }),
            Part::Other => write!(f, "{n} part{s} that a newer TorchTraceAP left out"),
        }
    }
}

impl SharedReport {
    /// A link's content for `report`, made from the trace whose [`fingerprint`] is given; no
    /// selection, nothing left out yet.
    pub fn new(report: Report, fingerprint: String) -> SharedReport {
        SharedReport {
            format: FORMAT.to_string(),
            version: VERSION,
            fingerprint,
            report,
            omitted: Vec::new(),
            selected_finding: None,
            selected_range: None,
        }
    }

    /// Leaves out the findings of one severity.
    fn leave_out_findings(&mut self, severity: &str) -> (usize, Vec<String>) {
        let (gone, kept) = std::mem::take(&mut self.report.findings)
            .into_iter()
            .partition(|f| f.severity == severity);
        self.report.findings = kept;
        let ids: Vec<String> = gone.into_iter().map(|f| f.id).collect();
        (ids.len(), ids)
    }
}

/// How [`encode`] sizes a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShareOptions {
    /// The longest fragment to write, in bytes; parts are left out until it fits.
    pub max_bytes: usize,
}

impl Default for ShareOptions {
    fn default() -> ShareOptions {
        ShareOptions {
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// A link's fragment and what it holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Encoded {
    /// The part after `#`, without the `#`.
    pub fragment: String,
    /// The fragment's length in bytes.
    pub bytes: usize,
    /// What the fragment holds (what [`decode`] gives back): the report with its omissions, for
    /// a preview.
    pub kept: SharedReport,
}

impl Encoded {
    /// What was left out to fit the budget, including what the input had already left out.
    pub fn dropped(&self) -> &[Omitted] {
        &self.kept.omitted
    }
}

/// Why a link could not be read or written.
#[derive(Clone, Debug, PartialEq)]
pub enum ShareError {
    /// Nothing after the `#`.
    Empty,
    /// The fragment does not start with `ttap<version>.` (`expected`: the newest such start).
    NotALink { start: String, expected: String },
    /// A link (or a payload) of a format newer than this version reads.
    Newer {
        what: &'static str,
        version: String,
        reads: u32,
    },
    /// A link format this version does not read, and why.
    Unsupported { version: String, why: &'static str },
    /// The fragment is longer than [`MAX_LINK_BYTES`].
    TooLong { bytes: usize },
    /// The characters after the prefix are not base64url.
    Base64 { detail: String },
    /// The compressed data ends before its end marker.
    Truncated { bytes: usize },
    /// The compressed data is damaged.
    Corrupt { at: u64, detail: String },
    /// The data decompresses, but not to what its checksum says: damaged.
    Damaged,
    /// The data decompresses to more than [`MAX_JSON_BYTES`].
    TooBig,
    /// The decompressed data is not UTF-8 text.
    NotText { at: usize },
    /// The decompressed text is not JSON.
    Json { detail: String },
    /// The JSON nests deeper than [`MAX_DEPTH`].
    TooDeep { path: String },
    /// A text or key longer than [`MAX_TEXT_BYTES`], or a list longer than [`MAX_ITEMS`].
    TooLarge {
        path: String,
        what: &'static str,
        len: usize,
        max: usize,
    },
    /// The JSON is not a shared report (a field missing or of the wrong type).
    Shape { detail: String },
    /// The JSON names another format than `expected`.
    WrongFormat {
        found: String,
        expected: &'static str,
    },
    /// A finding or window names a detector this version does not have.
    UnknownDetector { id: String, place: String },
    /// [`encode`]: even with every part left out, the fragment is over the budget.
    CannotFit { bytes: usize, max: usize },
    /// A figure or list outside what any real trace gives (a forged or broken link), at
    /// `place` (`before, step 3`).
    OutOfBounds { place: String, detail: String },
}

impl fmt::Display for ShareError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const RECOPY: &str = "the link was probably cut or changed when it was copied: copy the whole link again from where it was shared";
        match self {
            ShareError::Empty => write!(
                f,
                "the link carries no report (nothing after '#'): copy the whole link, including the part after '#'"
            ),
            ShareError::NotALink { start, expected } => write!(
                f,
                "not a TorchTraceAP link: the part after '#' starts with {start:?}, where '{expected}' is expected; open a link made by TorchTraceAP's Share action or `ttap share`"
            ),
            ShareError::Newer { what, version, reads } => write!(
                f,
                "this link was made by a newer TorchTraceAP ({what} {version}; this version reads {what} {reads} and older): open it with the newer TorchTraceAP, or ask the sharer for the report as JSON"
            ),
            ShareError::Unsupported { version, why } => write!(
                f,
                "link format {version} cannot be opened: {why}"
            ),
            ShareError::TooLong { bytes } => write!(
                f,
                "the link's fragment is {bytes} bytes, more than the {MAX_LINK_BYTES} a TorchTraceAP link can have: it is not a link made by TorchTraceAP"
            ),
            ShareError::Base64 { detail } => write!(
                f,
                "the link's data is not base64url ({detail}); {RECOPY}"
            ),
            ShareError::Truncated { bytes } => write!(
                f,
                "the link's data ends early (the compressed report stops after {bytes} bytes, before its end); {RECOPY}"
            ),
            ShareError::Corrupt { at, detail } => write!(
                f,
                "the link's compressed data is damaged at byte {at} ({detail}); {RECOPY}"
            ),
            ShareError::Damaged => write!(
                f,
                "the link is damaged: its contents do not match the checksum they carry; {RECOPY}"
            ),
            ShareError::TooBig => write!(
                f,
                "the link's data decompresses to more than {MAX_JSON_BYTES} bytes, far more than any shared report: refused without reading further (a hostile or broken link)"
            ),
            ShareError::NotText { at } => write!(
                f,
                "the link's data is not UTF-8 text (invalid byte at {at} of the decompressed data); {RECOPY}"
            ),
            ShareError::Json { detail } => write!(
                f,
                "the link's data is not valid JSON ({detail}); {RECOPY}"
            ),
            ShareError::TooDeep { path } => write!(
                f,
                "the link's JSON nests deeper than {MAX_DEPTH} levels (at {path}), which no shared report does: refused (a hostile or broken link)"
            ),
            ShareError::TooLarge { path, what, len, max } => write!(
                f,
                "the link's JSON has a {what} of {len} {} at {path}, more than the {max} allowed: refused (a hostile or broken link)",
                if *what == "list" { "items" } else { "bytes" }
            ),
            ShareError::Shape { detail } => write!(
                f,
                "the link's JSON is not a shared TorchTraceAP report ({detail}); if it was made by another version of TorchTraceAP, open it with that version"
            ),
            ShareError::WrongFormat { found, expected } => write!(
                f,
                "the link's JSON is a {found:?} document, not a {expected:?} one; open it with the tool that made it"
            ),
            ShareError::UnknownDetector { id, place } => write!(
                f,
                "{place} names the detector {id:?}, which this version of TorchTraceAP does not have, so it cannot show what it means: refused. It was made by a newer version (open it there) or edited"
            ),
            ShareError::OutOfBounds { place, detail } => write!(
                f,
                "{place}: {detail}, which no real trace gives: refused (a forged or broken link)"
            ),
            ShareError::CannotFit { bytes, max } => write!(
                f,
                "the report does not fit in a link of {max} bytes even with every optional part left out ({bytes} bytes); allow a longer link"
            ),
        }
    }
}

impl std::error::Error for ShareError {}

/// base64url, no padding written; padding accepted when reading.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The fragment for `shared`, with parts left out (least important first) until it is at most
/// `options.max_bytes` long.
pub fn encode(shared: &SharedReport, options: &ShareOptions) -> Result<Encoded, ShareError> {
    let mut kept = shared.clone();
    let mut parts = Part::ALL.iter();
    loop {
        let facts = Facts::of(&kept);
        let fragment = pack(&facts);
        if fragment.len() <= options.max_bytes {
            return Ok(Encoded {
                bytes: fragment.len(),
                fragment,
                kept: facts.render()?,
            });
        }
        let Some(&part) = parts.next() else {
            return Err(ShareError::CannotFit {
                bytes: fragment.len(),
                max: options.max_bytes,
            });
        };
        let (count, ids) = part.leave_out(&mut kept);
        if count == 0 {
            continue;
        }
        match kept.omitted.iter_mut().find(|o| o.part == part) {
            Some(o) => {
                o.count += count as u64;
                o.ids.extend(ids);
            }
            None => kept.omitted.push(Omitted {
                part,
                count: count as u64,
                ids,
            }),
        }
    }
}

/// `ttap2.` + base64url(zlib(JSON)).
fn pack(facts: &Facts) -> String {
    pack_value(&REPORT_LINK, facts)
}

/// The key of the checksum a link's JSON object carries: FNV-1a of the object's compact JSON
/// without it (keys sorted). zlib's own checksum lets through some damage (a flipped bit that
/// swaps two letters of a key, which would then read as a missing field); this does not. Links
/// written before it have none and are read as they are.
const CHECK_KEY: &str = "check";

/// The checksum of a link's JSON object (without its [`CHECK_KEY`]).
fn checksum(value: &Value) -> String {
    format!(
        "{:016x}",
        crate::model::fingerprint::fnv1a(value.to_string().as_bytes())
    )
}

/// A link fragment of `kind` carrying `value`: `<prefix><newest>.` + base64url(zlib(JSON)), the
/// JSON with its [`CHECK_KEY`].
pub(crate) fn pack_value<T: Serialize>(kind: &LinkKind, value: &T) -> String {
    use std::io::Write as _;
    let mut value = serde_json::to_value(value).expect("a link's facts serialize");
    let sum = checksum(&value);
    if let Value::Object(fields) = &mut value {
        fields.insert(CHECK_KEY.to_string(), Value::String(sum));
    }
    let json = serde_json::to_vec(&value).expect("a link's facts serialize");
    let mut z = ZlibEncoder::new(Vec::new(), Compression::best());
    z.write_all(&json).expect("writing to memory");
    let compressed = z.finish().expect("writing to memory");
    format!(
        "{}{}.{}",
        kind.prefix,
        kind.newest,
        BASE64.encode(compressed)
    )
}

/// The fragment of a link: what follows the first `#`, or the whole text when it has none;
/// surrounding white space removed.
pub(crate) fn fragment_of(link: &str) -> &str {
    let link = link.trim();
    link.split_once('#').map_or(link, |(_, f)| f.trim())
}

/// Reads a link's fragment (with or without its `#`; a whole link is accepted too).
pub fn decode(fragment: &str) -> Result<SharedReport, ShareError> {
    let (version, value) = unpack(fragment, &REPORT_LINK)?;
    let shape = |e: serde_json::Error| ShareError::Shape {
        detail: e.to_string(),
    };
    let facts = if version == VERSION {
        serde_json::from_value::<Facts>(value).map_err(shape)?
    } else {
        let legacy: SharedReport = serde_json::from_value(value).map_err(shape)?;
        if legacy.report.format != report::FORMAT {
            return Err(ShareError::WrongFormat {
                found: quoted(&legacy.report.format),
                expected: report::FORMAT,
            });
        }
        Facts::of(&legacy)
    };
    if facts.report_version > report::VERSION {
        return Err(ShareError::Newer {
            what: "report format",
            version: facts.report_version.to_string(),
            reads: report::VERSION,
        });
    }
    facts.render()
}

/// The JSON a link of `kind` carries (the fragment with or without its `#`, or a whole link),
/// read within every bound, and the format version its JSON names.
pub(crate) fn unpack(fragment: &str, kind: &LinkKind) -> Result<(u32, Value), ShareError> {
    let fragment = fragment_of(fragment);
    if fragment.is_empty() {
        return Err(ShareError::Empty);
    }
    if fragment.len() > MAX_LINK_BYTES {
        return Err(ShareError::TooLong {
            bytes: fragment.len(),
        });
    }
    let data = payload_of(fragment, kind)?;
    let compressed = BASE64.decode(data).map_err(|e| ShareError::Base64 {
        detail: base64_detail(&e, fragment.len() - data.len()),
    })?;
    let json = inflate(&compressed)?;
    let text = std::str::from_utf8(&json).map_err(|e| ShareError::NotText {
        at: e.valid_up_to(),
    })?;
    let value: Value = serde_json::from_str(text).map_err(|e| {
        if e.to_string().starts_with("recursion limit exceeded") {
            ShareError::TooDeep {
                path: format!("line {} column {}", e.line(), e.column()),
            }
        } else {
            ShareError::Json {
                detail: e.to_string(),
            }
        }
    })?;
    check_limits(&value, &mut String::from("$"), 0)?;
    let mut value = value;
    if let Value::Object(fields) = &mut value {
        if let Some(sum) = fields.remove(CHECK_KEY) {
            let expected = checksum(&Value::Object(fields.clone()));
            if sum.as_str() != Some(expected.as_str()) {
                return Err(ShareError::Damaged);
            }
        }
    }
    Ok((check_format(&value, kind)?, value))
}

/// A report read from outside this page (a saved report opened again) rendered like a link:
/// titles, explanations, fixes and code from this version's catalogue, keyed by detector id; the
/// report's own prose ignored; the texts only it holds quoted ([`quoted`]). Refuses a report
/// that names a detector this version does not have.
pub fn render(report: &Report) -> Result<Report, ShareError> {
    Facts::of(&SharedReport::new(report.clone(), String::new()))
        .render()
        .map(|shared| shared.report)
}

/// Text from a link or a saved report, made safe to show as quoted data: control,
/// bidirectional-override and invisible (zero-width, format) characters are written as visible
/// `⟨U+XXXX⟩`, and the result is cut to [`QUOTED_MAX_CHARS`] characters, ending in `…` when cut.
/// Quoting quoted text changes nothing.
pub fn quoted(text: &str) -> String {
    quoted_up_to(text, QUOTED_MAX_CHARS)
}

/// [`quoted`] with another length cap (`max_chars` ≥ 1): for names that only a longer text tells
/// apart (templated kernel names).
pub(crate) fn quoted_up_to(text: &str, max_chars: usize) -> String {
    let mut visible = String::new();
    text.chars()
        .take(max_chars + 1)
        .for_each(|c| report::visible(c, &mut visible));
    if visible.chars().count() <= max_chars {
        return visible;
    }
    let mut cut: String = visible.chars().take(max_chars - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests;
