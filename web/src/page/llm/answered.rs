//! An answer as the page shows it: its fields, the figures and names its explanation cites
//! marked (found, not in the evidence, misread), and the check's lines (citations, misreadings,
//! the fix against the rule's, the user's line of code). Every text from the model is a text
//! node, never markup.

use torchtraceap::llm::answer::Answer;
use torchtraceap::llm::check::Check;
use yew::prelude::*;

/// The answer's fields (or its text, when it gave none), with the check against the request.
pub(super) fn fields(a: &Answer, check: &Check) -> Html {
    if !a.structured() {
        return html! { <pre class="llm-text">{&a.text}</pre> };
    }
    let field = |label: &'static str, class: &'static str, value: &Option<String>| match value {
        Some(v) => html! { <><dt>{label}</dt><dd class={class}>{v}</dd></> },
        None => Html::default(),
    };
    html! {
        <>
            if let (true, Some(said), Some(expected)) = (check.differs, &check.anti_pattern, &check.expected) {
                <p class="llm-differs" role="note">{format!(
                    "The answer names \u{201c}{said}\u{201d}, not this finding\u{2019}s anti-pattern \u{201c}{expected}\u{201d}."
                )}</p>
            }
            <dl class="llm-structured">
                { field("Anti-pattern", "llm-anti-pattern", &a.anti_pattern) }
                if let Some(e) = &a.explanation {
                    <dt>{"Explanation"}</dt><dd class="llm-explanation">{ marked(e, check) }</dd>
                }
                { field("Fix", "llm-fix", &a.fix) }
                if let Some(c) = a.confidence {
                    <dt>{"Confidence"}</dt><dd class="llm-confidence">{format!("{:.0}%", c * 100.0)}</dd>
                }
            </dl>
            { evidence_view(check) }
            <details class="llm-raw">
                <summary>{"The model's text"}</summary>
                <pre class="llm-text">{&a.text}</pre>
            </details>
        </>
    }
}

/// The explanation as text nodes, each figure and name it cites wrapped: those the request
/// holds, and those it does not, marked "not in the evidence".
fn marked(text: &str, check: &Check) -> Html {
    let mut nodes = Vec::new();
    let mut at = 0;
    for c in &check.citations {
        let Some(cited) = text.get(c.at.clone()).filter(|_| c.at.start >= at) else {
            continue;
        };
        nodes.push(html! { {&text[at..c.at.start]} });
        nodes.push(if let Some(why) = &c.misread {
            html! {
                <mark class="llm-cited found misread" title={why.clone()}>
                    {cited}<span class="llm-misread-label">{" (misread)"}</span>
                </mark>
            }
        } else if c.found {
            html! { <span class="llm-cited found" title="in the evidence">{cited}</span> }
        } else {
            html! {
                <mark class="llm-cited not-found" title="not in the evidence">
                    {cited}<span class="llm-not-found-label">{" (not in the evidence)"}</span>
                </mark>
            }
        });
        at = c.at.end;
    }
    nodes.push(html! { {&text[at..]} });
    nodes.into_iter().collect()
}

/// What the check found: how many of the cited figures and names the request holds, and those
/// it does not.
fn evidence_view(check: &Check) -> Html {
    let cited = check.citations.len();
    let missing: Vec<&str> = check.not_found().map(|c| c.text.as_str()).collect();
    let text = if cited == 0 {
        "The explanation cites no figure or event name to check against the request.".to_string()
    } else if missing.is_empty() {
        format!("All {cited} figures and names the explanation cites are in the request.")
    } else {
        format!(
            "{} of {cited} figures and names the explanation cites are in the request; not in the evidence: {}.",
            check.found(),
            missing.join(", ")
        )
    };
    let class = if missing.is_empty() {
        "llm-evidence"
    } else {
        "llm-evidence unsupported"
    };
    let misread: Vec<String> = check
        .misread()
        .filter_map(|c| Some(format!("{} ({})", c.text, c.misread.as_deref()?)))
        .collect();
    let fix = check.fix_named.map(|named| {
        let expected = check.expected.as_deref().unwrap_or_default();
        if named {
            format!("The fix names a change the {expected} rule's own fix names.")
        } else {
            format!(
                "The fix names none of the changes the {expected} rule's own fix names: compare it with the finding's fix."
            )
        }
    });
    let site = check.call_site_named.map(|named| {
        if named {
            "The answer names the line of code the request gives (from the trace's Python stack).".to_string()
        } else {
            "The answer does not name the line of code the request gives (from the trace's Python stack).".to_string()
        }
    });
    html! {
        <>
            <p class={class}>{text}</p>
            if let Some(site) = site {
                <p class="llm-call-site">{site}</p>
            }
            if !misread.is_empty() {
                <p class="llm-misread">{format!("Cited as something else than the request gives: {}.", misread.join("; "))}</p>
            }
            if let Some(fix) = fix {
                <p class="llm-fix-check">{fix}</p>
            }
        </>
    }
}
