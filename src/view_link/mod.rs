//! A comparison or a run view as a link, under the rules of report links (`crate::share`): the
//! fragment carries facts (each trace's profile reduced: its steps' figures, batch size, device
//! and kernel names, finding ids and costs), never the trace and never prose. The reader
//! recomputes the comparison (`Comparison::new`) or the run view (`RunView::new`) from them with
//! its own code, so a verdict or a straggler's summary is always this version's words over the
//! link's numbers, and a link cannot say what its numbers do not.
//!
//! Fragments: `ttapc1.` (a comparison) and `ttapr1.` (a run) + base64url(zlib(JSON)), read by
//! [`share::unpack`] within the report links' bounds (length, inflation, nesting, text and list
//! lengths), then checked value by value ([`facts`]): how many traces, steps, names and findings;
//! figures within what a real trace gives; detector ids from this version's catalogue; texts
//! (labels, device and kernel names) quoted ([`share::quoted`]). A bad link is a [`ShareError`]
//! that says what failed and where.
//!
//! To fit the size budget ([`ShareOptions::max_bytes`]), a comparison keeps, in each of its six
//! tables (GPU work and CPU operators changed, added, removed), the rows of the largest changes,
//! their names on both sides, so that the kept rows compare as they did; it says how many rows it
//! left out. A run link carries no names (the run view shows none).

pub mod facts;

use rustc_hash::FxHashSet;
use serde::{Deserialize, Serialize};

use crate::compare::{Comparison, NameChange, NameChanges};
use crate::profile::Profile;
use crate::run::{is_run, RunView};
use crate::share::{self, LinkKind, ShareError, ShareOptions};
use facts::ProfileFacts;

/// Links of a comparison: `ttapc1.`.
pub(crate) const COMPARISON_LINK: LinkKind = LinkKind {
    prefix: "ttapc",
    oldest: 1,
    newest: 1,
    format: "torchtraceap.comparison",
    what: "comparison link format",
};

/// Links of a run view: `ttapr1.`.
pub(crate) const RUN_LINK: LinkKind = LinkKind {
    prefix: "ttapr",
    oldest: 1,
    newest: 1,
    format: "torchtraceap.run",
    what: "run link format",
};

/// The size budget of a run link in the web app: a run's steps cannot be cut without changing
/// its view, and browsers open far longer addresses.
pub const RUN_MAX_BYTES: usize = 65_536;

/// The most ranks a run link may hold.
pub(crate) const MAX_RANKS: usize = 1024;

/// The most table rows a comparison link may say it left out (four lists of
/// [`facts::MAX_NAMES`] names each side could not give more).
const MAX_ROWS_LEFT_OUT: u64 = 4 * facts::MAX_NAMES as u64;

/// Rows kept per table, tried in turn until the comparison fits its budget.
const ROWS_KEPT: [usize; 8] = [usize::MAX, 200, 100, 50, 20, 10, 5, 0];

/// What a comparison or run link holds on the wire.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ViewFacts {
    format: String,
    version: u32,
    profiles: Vec<ProfileFacts>,
    /// Table rows of a comparison left out to fit the budget.
    #[serde(default, skip_serializing_if = "is_zero")]
    rows_left_out: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What a link shows: two traces compared, or the ranks of a run.
#[derive(Clone, Debug, PartialEq)]
pub enum View {
    Comparison {
        before: Box<Profile>,
        after: Box<Profile>,
    },
    Run(Vec<Profile>),
}

/// A comparison or run link, read.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedView {
    pub view: View,
    /// Rows of the comparison's name tables left out of the link.
    pub rows_left_out: u64,
}

impl SharedView {
    /// The comparison or run view, as this version computes it from the link's facts.
    pub fn comparison(&self) -> Option<Comparison> {
        match &self.view {
            View::Comparison { before, after } => Some(Comparison::new(before, after)),
            View::Run(_) => None,
        }
    }

    pub fn run(&self) -> Option<RunView> {
        match &self.view {
            View::Run(profiles) => Some(RunView::new(profiles)),
            View::Comparison { .. } => None,
        }
    }
}

/// A link's fragment and what it holds (what [`decode`] gives back).
#[derive(Clone, Debug, PartialEq)]
pub struct Encoded {
    pub fragment: String,
    pub bytes: usize,
    pub kept: SharedView,
}

/// Whether `link` (a whole link, or its fragment) is a comparison or run link, not a report's.
pub fn is_view_link(link: &str) -> bool {
    let fragment = share::fragment_of(link);
    [COMPARISON_LINK, RUN_LINK].iter().any(|k| {
        fragment
            .strip_prefix(k.prefix)
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
    })
}

fn pack(kind: &LinkKind, profiles: Vec<ProfileFacts>, rows_left_out: u64) -> String {
    share::pack_value(
        kind,
        &ViewFacts {
            format: kind.format.to_string(),
            version: kind.newest,
            profiles,
            rows_left_out,
        },
    )
}

fn encoded(fragment: String, max_bytes: usize) -> Result<Encoded, ShareError> {
    if fragment.len() > max_bytes {
        return Err(ShareError::CannotFit {
            bytes: fragment.len(),
            max: max_bytes,
        });
    }
    Ok(Encoded {
        bytes: fragment.len(),
        kept: decode(&fragment)?,
        fragment,
    })
}

/// The first `n` rows' names of each of `c`'s three lists.
fn first_names(c: &NameChanges, n: usize) -> FxHashSet<String> {
    [&c.changed, &c.added, &c.removed]
        .into_iter()
        .flat_map(|list: &Vec<NameChange>| list.iter().take(n))
        .map(|r| r.name.clone())
        .collect()
}

fn rows(c: &NameChanges) -> usize {
    c.changed.len() + c.added.len() + c.removed.len()
}

/// The link of `before` compared with `after`, its name tables cut to their largest changes
/// until it fits `options.max_bytes`.
pub fn encode_comparison(
    before: &Profile,
    after: &Profile,
    options: &ShareOptions,
) -> Result<Encoded, ShareError> {
    let c = Comparison::new(before, after);
    let all = rows(&c.gpu_work) + rows(&c.cpu_ops);
    let mut fragment = String::new();
    for n in ROWS_KEPT {
        let (gpu, cpu) = (first_names(&c.gpu_work, n), first_names(&c.cpu_ops, n));
        let facts = |p: &Profile| {
            ProfileFacts::of(p, &|name| gpu.contains(name), &|name| cpu.contains(name))
        };
        let left_out = all - gpu.len() - cpu.len();
        fragment = pack(
            &COMPARISON_LINK,
            vec![facts(before), facts(after)],
            left_out as u64,
        );
        if fragment.len() <= options.max_bytes {
            break;
        }
    }
    encoded(fragment, options.max_bytes)
}

/// The link of the run whose ranks' profiles are `profiles` (no names: the run view shows none).
pub fn encode_run(profiles: &[Profile], options: &ShareOptions) -> Result<Encoded, ShareError> {
    let none = |_: &str| false;
    let facts = profiles
        .iter()
        .map(|p| ProfileFacts::of(p, &none, &none))
        .collect();
    encoded(pack(&RUN_LINK, facts, 0), options.max_bytes)
}

/// Reads a comparison or run link (a whole link, or its fragment with or without `#`).
pub fn decode(link: &str) -> Result<SharedView, ShareError> {
    let fragment = share::fragment_of(link);
    let kind = if fragment.starts_with(RUN_LINK.prefix) {
        RUN_LINK
    } else {
        COMPARISON_LINK
    };
    let (_, value) = share::unpack(fragment, &kind)?;
    let facts: ViewFacts = serde_json::from_value(value).map_err(|e| ShareError::Shape {
        detail: e.to_string(),
    })?;
    let n = facts.profiles.len();
    if facts.rows_left_out > MAX_ROWS_LEFT_OUT {
        return Err(ShareError::OutOfBounds {
            place: "the comparison".into(),
            detail: format!("{} rows left out", facts.rows_left_out),
        });
    }
    let view = if kind == RUN_LINK {
        // A run link has no name table: it leaves no row out.
        if facts.rows_left_out != 0 {
            return Err(ShareError::OutOfBounds {
                place: "the run".into(),
                detail: format!(
                    "{} table rows left out, where a run link has no table",
                    facts.rows_left_out
                ),
            });
        }
        if !(2..=MAX_RANKS).contains(&n) {
            return Err(ShareError::OutOfBounds {
                place: "the run".into(),
                detail: format!("{n} ranks, where a run link holds 2 to {MAX_RANKS}"),
            });
        }
        let profiles = facts
            .profiles
            .iter()
            .enumerate()
            .map(|(k, p)| p.profile(&format!("trace {}", k + 1)))
            .collect::<Result<Vec<_>, _>>()?;
        if !is_run(&profiles) {
            return Err(ShareError::OutOfBounds {
                place: "the run".into(),
                detail: "its traces are not the ranks of one run (each with its own rank, one world size)".into(),
            });
        }
        View::Run(profiles)
    } else {
        let [before, after] = &facts.profiles[..] else {
            return Err(ShareError::OutOfBounds {
                place: "the comparison".into(),
                detail: format!("{n} traces, where a comparison holds 2"),
            });
        };
        View::Comparison {
            before: Box::new(before.profile("before")?),
            after: Box::new(after.profile("after")?),
        }
    };
    Ok(SharedView {
        view,
        rows_left_out: facts.rows_left_out,
    })
}
