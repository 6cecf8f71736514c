//! The banner above an analysis that was not made from a whole trace in this browser: a shared
//! link's, a saved report's, or the early look kept when its load was cancelled.

use torchtraceap::share::Omitted;
use yew::prelude::*;

/// Where an analysis shown without its whole trace came from.
pub enum Made<'a> {
    /// A shared link, with what it left out.
    Link(&'a [Omitted]),
    /// A saved report, opened from the file `name`.
    Saved(&'a str),
    /// The early look at the file `name`, its load cancelled.
    Early(&'a str),
}

pub fn banner(made: Made<'_>) -> Html {
    match made {
        Made::Link(omitted) => html! {
            <div class="notice report-only link-note shared-banner" role="status">
                <p><strong>{"Shared analysis, read-only: not made from a trace in this browser."}</strong>
                    {" It shows the figures a link carries, in this page's own words; the trace \
                      is not included. Drop the trace it was made from on this page to see the \
                      full view (it is recognised by its fingerprint)."}</p>
                if !omitted.is_empty() {
                    <p>{"Left out of the link to keep it short: "}
                        {omitted.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")}{"."}</p>
                }
            </div>
        },
        Made::Saved(name) => html! {
            <div class="notice report-only shared-banner" role="status">
                <p><strong>{"Saved report, read-only: not made from a trace in this browser."}</strong>
                    {format!(
                        " {name}: the figures as analyzed then, in this page's own words. The trace \
                         itself is not included; open it to see the full view."
                    )}</p>
            </div>
        },
        Made::Early(name) => html! {
            <div class="notice report-only shared-banner" role="status">
                <p><strong>{"Early look, read-only: made from part of the trace."}</strong>
                    {format!(
                        " {name}: the findings of its first whole steps, read before the load was \
                         cancelled. Open the trace again to see the whole file's analysis."
                    )}</p>
            </div>
        },
    }
}
