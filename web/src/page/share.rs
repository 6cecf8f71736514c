//! Sharing an analysis as a link: the report (never the trace) compressed into the URL's
//! fragment, which browsers do not send to any server. The panel previews what the link carries
//! and what was left out to fit its size budget before the user copies it.

use std::rc::Rc;

use torchtraceap::profile::Profile;
use torchtraceap::share::{self, ShareOptions, SharedReport};
use torchtraceap::view_link;
use yew::prelude::*;

use crate::format::bytes;
use crate::protocol::Outcome;

/// The page's address without its fragment: the base of every link it makes.
pub fn page_address() -> String {
    web_sys::window()
        .and_then(|w| w.location().href().ok())
        .map(|href| href.split('#').next().unwrap_or_default().to_string())
        .unwrap_or_default()
}

/// The fragment of the page's address, without the `#`.
pub fn page_fragment() -> String {
    web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .map(|h| h.trim_start_matches('#').to_string())
        .unwrap_or_default()
}

/// The link of `fragment` on this page, in a read-only field (`id`), with a Copy button.
fn link_actions(id: &'static str, fragment: &str, copied: &UseStateHandle<bool>) -> Html {
    let link = format!("{}#{fragment}", page_address());
    let on_copy = {
        let (link, copied) = (link.clone(), copied.clone());
        Callback::from(move |_: MouseEvent| {
            // The link also stays selectable beside the button.
            if crate::js::copy_to_clipboard(&link) {
                copied.set(true);
            }
        })
    };
    html! {
        <div class="share-actions">
            <input {id} readonly=true value={link} aria-label="The link" />
            <button class="copy-link" onclick={on_copy}>{ if **copied { "Copied" } else { "Copy link" } }</button>
        </div>
    }
}

#[derive(Properties, PartialEq)]
pub struct ShareProps {
    pub file: Rc<Outcome>,
    /// The finding the user has open, carried in the link.
    pub selected_finding: Option<String>,
}

/// A Share button (of CSS class `class`) that opens and closes its panel: whether it is open,
/// whether its link was copied (reset on each toggle), and the button.
#[hook]
fn use_share_button(class: &'static str) -> (UseStateHandle<bool>, UseStateHandle<bool>, Html) {
    let open = use_state(|| false);
    let copied = use_state(|| false);
    let toggle = {
        let (open, copied) = (open.clone(), copied.clone());
        Callback::from(move |_: MouseEvent| {
            open.set(!*open);
            copied.set(false);
        })
    };
    let button = html! {
        <button {class} onclick={toggle} aria-expanded={open.to_string()}>{"Share"}</button>
    };
    (open, copied, button)
}

#[function_component(Share)]
pub fn share_panel(props: &ShareProps) -> Html {
    let (open, copied, button) = use_share_button("share-button");
    let Some(analyzed) = props.file.analyzed() else {
        return Html::default();
    };
    if !*open {
        return button;
    }
    let Some(fingerprint) = &analyzed.fingerprint else {
        return html! {
            <>{button}<div class="share-panel" role="dialog">
                <p>{"A saved report has no trace fingerprint: open the trace itself to share it as a link."}</p>
            </div></>
        };
    };
    let mut content = SharedReport::new(analyzed.report.clone(), fingerprint.clone());
    content.selected_finding = props.selected_finding.clone();
    let body = match share::encode(&content, &ShareOptions::default()) {
        Err(e) => html! { <p class="share-error">{format!("Could not make a link: {e}")}</p> },
        Ok(encoded) => {
            let r = &encoded.kept.report;
            html! {
                <>
                    <p>{format!(
                        "A link of {} that carries the analysis: {} finding(s) with their evidence and fixes, \
                         {} step row(s), {} window score(s), the trace facts (devices, rank, steps) and a \
                         fingerprint that recognises the trace.",
                        bytes(encoded.bytes as u64), r.findings.len(), r.steps.len(), r.windows.len()
                    )}</p>
                    <p class="share-never">{"Never in it: the trace's events, file paths, or any LLM \
                        endpoint or key. The part after # stays in the browser: it is not sent to the \
                        server that hosts this page."}</p>
                    if !encoded.dropped().is_empty() {
                        <div class="share-dropped">
                            <p>{"Left out to keep the link short:"}</p>
                            <ul>{ for encoded.dropped().iter().map(|o| html! { <li>{o.to_string()}</li> }) }</ul>
                        </div>
                    }
                    { link_actions("share-link", &encoded.fragment, &copied) }
                </>
            }
        }
    };
    html! {
        <>
            {button}
            <div class="share-panel" role="dialog" aria-label="Share this analysis">{body}</div>
        </>
    }
}

#[derive(Properties, PartialEq)]
pub struct ViewShareProps {
    /// Before and after, or the ranks of a run.
    pub profiles: Rc<Vec<Profile>>,
    pub comparison: bool,
}

/// The Share button and panel of a comparison or a run view: a link carrying the traces'
/// profiles as facts (`view_link`), never the traces.
#[function_component(ViewShare)]
pub fn view_share(props: &ViewShareProps) -> Html {
    let (open, copied, button) = use_share_button("share-view");
    if !*open {
        return button;
    }
    let p = &props.profiles;
    let (what, encoded) = match &p[..] {
        [before, after] if props.comparison => (
            "comparison",
            view_link::encode_comparison(before, after, &ShareOptions::default()),
        ),
        _ => (
            "run view",
            view_link::encode_run(
                p,
                &ShareOptions {
                    max_bytes: view_link::RUN_MAX_BYTES,
                },
            ),
        ),
    };
    let body = match encoded {
        Err(e) => html! { <p class="share-error">{format!("Could not make a link: {e}")}</p> },
        Ok(encoded) => html! {
            <>
                <p>{format!(
                    "A link of {} that carries the {what}'s figures: for each of its {} traces the \
                     steps and their split, batch size, device names and findings{}. This page \
                     recomputes the {what} from them when the link is opened.",
                    bytes(encoded.bytes as u64), p.len(),
                    if props.comparison { ", and the kernel and operator names of the largest changes" } else { "" }
                )}</p>
                <p class="share-never">{"Never in it: the traces' events, file paths, or any LLM \
                    endpoint or key. The part after # stays in the browser."}</p>
                if encoded.kept.rows_left_out > 0 {
                    <p class="share-dropped">{format!(
                        "Left out to keep the link short: {} table rows with the smallest changes.",
                        encoded.kept.rows_left_out
                    )}</p>
                }
                { link_actions("view-share-link", &encoded.fragment, &copied) }
            </>
        },
    };
    html! {
        <>
            {button}
            <div class="share-panel" role="dialog" aria-label={format!("Share this {what}")}>{body}</div>
        </>
    }
}
