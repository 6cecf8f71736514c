//! Saving the report: as JSON (`torchtraceap.report`, which the CLI writes too) and as Markdown
//! to paste into a ticket, made in the page; and the trace with its analysis for Perfetto UI,
//! which the worker holding the trace makes (`perfetto::write`, as `ttap export --perfetto`).
//! Nothing is sent anywhere.

use std::rc::Rc;

use wasm_bindgen::JsCast;
use web_sys::{Blob, BlobPropertyBag, HtmlAnchorElement, Url};
use yew::prelude::*;

use crate::protocol::Outcome;

/// The trace's file name without its extensions: `rank0.pt.trace.json.gz` → `rank0`.
pub fn stem(name: &str) -> &str {
    name.split('.')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or("trace")
}

/// Offers `text` as a file download named `file_name`.
pub fn download(file_name: &str, mime: &str, text: &str) -> Result<(), String> {
    let failed = |e: wasm_bindgen::JsValue| format!("Could not save {file_name}: {e:?}");
    let parts: js_sys::Array = std::iter::once(wasm_bindgen::JsValue::from_str(text)).collect();
    let options = BlobPropertyBag::new();
    options.set_type(mime);
    let blob = Blob::new_with_str_sequence_and_options(&parts, &options).map_err(failed)?;
    let url = Url::create_object_url_with_blob(&blob).map_err(failed)?;
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or_else(|| format!("Could not save {file_name}: no document"))?;
    let anchor: HtmlAnchorElement = document
        .create_element("a")
        .map_err(failed)?
        .unchecked_into();
    anchor.set_href(&url);
    anchor.set_download(file_name);
    anchor.click();
    Url::revoke_object_url(&url).map_err(failed)
}

#[derive(Properties, PartialEq)]
pub struct ExportProps {
    pub file: Rc<Outcome>,
    pub on_error: Callback<String>,
    /// Asks the worker for the Perfetto export (saved by [`save_perfetto`] when it comes).
    pub on_perfetto: Callback<MouseEvent>,
}

/// Saves the Perfetto export of the trace `name`.
pub fn save_perfetto(name: &str, json: &str) -> Result<(), String> {
    download(
        &format!("{}.perfetto.json", stem(name)),
        "application/json",
        json,
    )
}

#[function_component(Export)]
pub fn export(props: &ExportProps) -> Html {
    let save = |markdown: bool| {
        let file = Rc::clone(&props.file);
        let on_error = props.on_error.clone();
        Callback::from(move |_: MouseEvent| {
            let Some(analyzed) = file.analyzed() else {
                return;
            };
            let (name, report) = (&file.name, &analyzed.report);
            let result = if markdown {
                download(
                    &format!("{}.report.md", stem(name)),
                    "text/markdown",
                    &report.to_markdown(name),
                )
            } else {
                let json = serde_json::to_string_pretty(report).expect("reports serialize");
                download(
                    &format!("{}.report.json", stem(name)),
                    "application/json",
                    &json,
                )
            };
            if let Err(e) = result {
                on_error.emit(e);
            }
        })
    };
    html! {
        <div class="export">
            <span>{"Save the report:"}</span>
            <button class="download-json" onclick={save(false)}>{"JSON"}</button>
            <button class="download-md" onclick={save(true)}>{"Markdown"}</button>
            // Only a trace read in this page (not a saved report or a link) has events to export.
            if props.file.analyzed().is_some_and(|a| a.summary.is_some()) {
                <button class="download-perfetto" onclick={props.on_perfetto.clone()}
                    title="The trace with its findings, flagged windows and step split, for ui.perfetto.dev or chrome://tracing">
                    {"Perfetto trace"}
                </button>
            }
        </div>
    }
}

#[cfg(test)]
mod tests {
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn saved_files_are_named_after_the_trace() {
        assert_eq!(super::stem("rank0.pt.trace.json.gz"), "rank0");
        assert_eq!(super::stem(".json"), "trace");
    }
}
